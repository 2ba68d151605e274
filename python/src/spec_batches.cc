// ctrain.read(path, feature_spec=) and ctrain.Pipeline(files, feature_spec=):
// rows read through a feature spec (data/spec_reader.h) as one numpy array per
// spec entry (data/spec_columns.h: dense values, single ids, multi-hot as
// EmbeddingBag's ids/offsets[/weights]); docs/python.md#feature-specs.
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "call_thread.h"
#include "convert.h"
#include "ctrain/data/feature_spec.h"
#include "ctrain/data/file_list.h"
#include "ctrain/data/spec_columns.h"
#include "ctrain/data/spec_reader.h"
#include "ctrain/io/compression.h"
#include "ctrain/job/data_options.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace ctrain::python {
namespace {

template <typename T>
nb::object Array(T* data, std::vector<size_t> shape, nb::handle owner) {
  if (shape.size() == 1) return nb::ndarray<nb::numpy, T, nb::ndim<1>, nb::c_contig>(data, {shape[0]}, owner).cast();
  return nb::ndarray<nb::numpy, T, nb::ndim<2>, nb::c_contig>(data, {shape[0], shape[1]}, owner).cast();
}

}  // namespace

// {"label": float32[B], name: array or (ids, offsets[, weights])}, sharing the
// columns' memory (one capsule owns them; freed with the last array). Also the
// data service's spec batches (module.cc).
nb::dict ColumnsToDict(data::SpecColumns&& columns) {
  auto* c = new data::SpecColumns(std::move(columns));
  nb::capsule owner(c, [](void* p) noexcept { delete static_cast<data::SpecColumns*>(p); });
  const size_t b = c->labels.size();
  nb::dict d;
  d["label"] = Array(c->labels.data(), {b}, owner);
  for (data::SpecColumn& col : c->columns) {
    std::vector<size_t> shape{b};
    if (col.width != 1) shape.push_back(static_cast<size_t>(col.width));
    switch (col.kind) {
      case data::SpecColumn::Kind::kDense: d[col.name.c_str()] = Array(col.values.data(), shape, owner); break;
      case data::SpecColumn::Kind::kIds: d[col.name.c_str()] = Array(col.ids.data(), shape, owner); break;
      case data::SpecColumn::Kind::kBag: {
        nb::object ids = Array(col.ids.data(), {col.ids.size()}, owner);
        nb::object offsets = Array(col.offsets.data(), {b}, owner);
        d[col.name.c_str()] = col.weighted
                                  ? nb::make_tuple(ids, offsets, Array(col.values.data(), {col.values.size()}, owner))
                                  : nb::make_tuple(ids, offsets);
        break;
      }
    }
  }
  return d;
}

namespace {

// The spec file and the reader options that apply to it (compression,
// max_line_bytes; the Python side refuses the others by name).
struct SpecInput {
  data::FeatureSpec spec;
  data::SpecReaderOptions reader;
};

SpecInput LoadSpecInput(const std::string& spec_path, const nb::dict& reader) {
  SpecInput in;
  job::DataOptions flags;
  SetDataOptions(reader, &flags);
  StatusOr<io::Compression> c = io::ParseCompression(flags.compression);
  ThrowIfError(c.status());
  ThrowIfError(job::CheckMaxLineBytes(flags.max_line_bytes));
  in.reader.compression = *c;
  in.reader.max_line_bytes = static_cast<size_t>(flags.max_line_bytes);
  StatusOr<data::FeatureSpec> spec = data::LoadFeatureSpec(spec_path);
  ThrowIfError(spec.status());
  in.spec = std::move(*spec);
  return in;
}

// Batches of rows over `files` x `epochs`, in file order; a batch never spans
// two epochs (the pipeline's default order). One pass per object.
class SpecBatchIterator {
 public:
  SpecBatchIterator(const std::vector<std::string>& files, const std::string& spec_path, const nb::dict& reader,
                    int64_t batch_size, int64_t epochs, bool drop_remainder)
      : in_(LoadSpecInput(spec_path, reader)), builder_(in_.spec), batch_size_(batch_size), epochs_(epochs),
        drop_remainder_(drop_remainder) {
    if (batch_size < 1) Raise(InvalidArgumentError("batch_size must be >= 1, got " + std::to_string(batch_size)));
    if (epochs < 1) Raise(InvalidArgumentError("epochs must be >= 1 with feature_spec=, got " + std::to_string(epochs)));
    StatusOr<std::vector<std::string>> expanded = data::ExpandFileList(files);
    ThrowIfError(expanded.status());
    files_ = std::move(*expanded);
  }

  nb::dict Next() {
    Status st;
    bool got = false;
    call_.Run([&] {
      StatusOr<bool> r = Fill();
      if (!r.ok()) st = r.status();
      else got = *r;
    }, nullptr, CallThread::OnInterrupt::kFinishCall);
    ThrowIfError(st);
    if (!got) throw nb::stop_iteration();
    return ColumnsToDict(builder_.Take());
  }

  std::vector<std::string> Files() const { return files_; }

 private:
  // Reads until a batch is ready (true) or the passes are over (false).
  StatusOr<bool> Fill() {
    while (epoch_ < epochs_) {
      if (!reader_) {
        if (file_ == files_.size()) {  // the epoch is over: its partial batch
          ++epoch_;
          file_ = 0;
          if (builder_.rows() > 0) {
            if (!drop_remainder_) return true;
            builder_.Take();
          }
          continue;
        }
        CTRAIN_ASSIGN_OR_RETURN(reader_, data::SpecReader::Open(files_[file_], in_.spec, in_.reader));
      }
      CTRAIN_ASSIGN_OR_RETURN(bool more, reader_->Next(&row_));
      if (!more) {
        reader_.reset();
        ++file_;
        continue;
      }
      CTRAIN_RETURN_IF_ERROR(builder_.Append(row_));
      if (builder_.rows() == batch_size_) return true;
    }
    return false;
  }

  SpecInput in_;
  data::SpecColumnsBuilder builder_;
  int64_t batch_size_, epochs_;
  bool drop_remainder_;
  std::vector<std::string> files_;
  size_t file_ = 0;
  int64_t epoch_ = 0;
  std::unique_ptr<data::SpecReader> reader_;
  data::SpecRow row_;
  CallThread call_;  // last: destroyed (joined) first
};

// Every row of one input as one batch (zero rows for an input without any).
nb::dict ReadSpec(const std::string& path, const std::string& spec_path, const nb::dict& reader) {
  SpecInput in = LoadSpecInput(spec_path, reader);
  data::SpecColumnsBuilder builder(in.spec);
  Status st;
  std::atomic<bool> stop{false};
  CallThread call;
  call.Run(
      [&] {
        StatusOr<std::unique_ptr<data::SpecReader>> r = data::SpecReader::Open(path, in.spec, in.reader);
        if (!r.ok()) {
          st = r.status();
          return;
        }
        data::SpecRow row;
        while (!stop.load(std::memory_order_relaxed)) {
          StatusOr<bool> more = (*r)->Next(&row);
          if (!more.ok()) {
            st = more.status();
            return;
          }
          if (!*more) return;
          st = builder.Append(row);
          if (!st.ok()) return;
        }
      },
      [&] { stop = true; }, CallThread::OnInterrupt::kFinishCall);
  ThrowIfError(st);
  return ColumnsToDict(builder.Take());
}

// The arrays a batch of the spec has, without reading any: [(name, kind, width, weighted)],
// kind "dense" (float32), "ids" (int64) or "bag" (EmbeddingBag ids/offsets[/weights]), in the
// batches' order after "label" (as_tf's output signature).
std::vector<nb::tuple> SpecLayout(const std::string& spec_path) {
  StatusOr<data::FeatureSpec> spec = data::LoadFeatureSpec(spec_path);
  ThrowIfError(spec.status());
  std::vector<nb::tuple> out;
  for (const data::SpecColumn& c : data::SpecColumnsBuilder(*spec).Take().columns) {
    const char* kind = c.kind == data::SpecColumn::Kind::kDense ? "dense"
                       : c.kind == data::SpecColumn::Kind::kIds ? "ids"
                                                                 : "bag";
    out.push_back(nb::make_tuple(c.name, kind, c.width, c.weighted));
  }
  return out;
}

}  // namespace

void BindSpecBatches(nb::module_& m) {
  nb::class_<SpecBatchIterator>(m, "SpecBatchIterator")
      .def(nb::init<const std::vector<std::string>&, const std::string&, const nb::dict&, int64_t, int64_t, bool>(),
           "files"_a, "feature_spec"_a, "reader"_a, "batch_size"_a, "epochs"_a, "drop_remainder"_a)
      .def("next", &SpecBatchIterator::Next)
      .def("files", &SpecBatchIterator::Files);
  m.def("read_spec", &ReadSpec, "path"_a, "feature_spec"_a, "reader"_a);
  m.def("spec_layout", &SpecLayout, "feature_spec"_a);
}

}  // namespace ctrain::python
