// ctrain._ctrain: the C++ side of the Python package (python/ctrain/__init__.py
// wraps it; docs/python.md). Every blocking call runs on a CallThread so the
// GIL is released and Ctrl-C is seen (call_thread.h); errors raise the
// exceptions of convert.h with the CLI's located messages.
#include <atomic>
#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "call_thread.h"
#include "convert.h"
#include "ctrain/data/example_reader.h"
#include "ctrain/data/pipeline.h"
#include "ctrain/dataservice/client.h"
#include "ctrain/dataservice/client_settings.h"
#include "ctrain/data/feature_spec.h"
#include "ctrain/data/spec_columns.h"
#include "ctrain/job/data_options.h"
#include "ctrain/train/stream_input.h"
#include "script_monitor.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace ctrain::python {
namespace {

// One pass of a data::Pipeline (all its epochs). The Python Pipeline makes a
// new one per iter(). An interrupted Next() stays in flight; the next call
// takes its result (no batch is lost) and Close() waits for it.
class PipelineIterator {
 public:
  PipelineIterator(const std::vector<std::string>& files, const nb::dict& reader, const nb::dict& pipeline) {
    SetDataOptions(reader, &flags_);
    SetPipelineOptions(pipeline, &options_);
    StatusOr<data::ExampleReaderOptions> ro = flags_.ReaderOptions();
    ThrowIfError(ro.status());
    reader_ = *ro;
    options_.pipe_timeout_ms = reader_.pipe_timeout_ms;  // the pipeline hands it to its readers
    Status st;
    call_.Run([&] {
      auto p = data::Pipeline::Create(files, reader_, options_);
      if (p.ok()) pipe_ = std::move(*p);
      else st = p.status();
    });
    ThrowIfError(st);
  }
  ~PipelineIterator() { Close(); }

  // (labels, ids, values) of the next batch; StopIteration after the last.
  // (labels, ids, values), or with a feature spec a dict of its arrays (spec_batches.cc).
  nb::object Next() {
    if (!pipe_) throw nb::stop_iteration();
    if (!call_.busy()) call_.Post([this] { result_ = pipe_->Next(&batch_); });
    call_.Wait();
    StatusOr<bool> r = std::move(result_);
    if (!r.ok()) Raise(r.status());
    if (!*r) {
      Close();
      throw nb::stop_iteration();
    }
    return BatchToArrays(std::move(batch_));
  }

  // Stops the pipeline's threads (waits for an interrupted Next first).
  void Close() {
    if (call_.busy()) call_.Join();
    if (pipe_) {
      stats_ = pipe_->stats().ToJson();
      nb::gil_scoped_release nogil;
      pipe_.reset();
    }
  }
  std::string Stats() const { return pipe_ ? pipe_->stats().ToJson() : stats_; }
  std::vector<std::string> Files() const { return pipe_ ? pipe_->files() : std::vector<std::string>{}; }
  std::vector<std::string> Warnings() const { return pipe_ ? pipe_->warnings() : std::vector<std::string>{}; }

 private:
  job::DataOptions flags_;  // owns the feature map's vocabulary
  data::ExampleReaderOptions reader_;
  data::PipelineOptions options_;
  std::unique_ptr<data::Pipeline> pipe_;
  data::Batch batch_;
  StatusOr<bool> result_;
  std::string stats_;
  CallThread call_;  // last: destroyed (joined) first
};

// Every example of one file, in order, as one batch.
nb::tuple Read(const std::string& path, const nb::dict& reader) {
  job::DataOptions flags;
  SetDataOptions(reader, &flags);
  StatusOr<data::ExampleReaderOptions> ro = flags.ReaderOptions();
  ThrowIfError(ro.status());
  data::Batch batch;
  batch.field_size = ro->field_size;
  Status st;
  CallThread call;
  std::atomic<bool> stop{false};
  call.Run(
      [&] {
        auto r = data::OpenExampleReader(path, *ro);
        if (!r.ok()) {
          st = r.status();
          return;
        }
        std::vector<int64_t> ids(ro->field_size);
        std::vector<float> values(ro->field_size);
        float label = 0;
        while (!stop.load(std::memory_order_relaxed)) {
          StatusOr<bool> more = (*r)->Next(&label, ids.data(), values.data());
          if (!more.ok()) {
            st = more.status();
            return;
          }
          if (!*more) return;
          batch.AppendRow(label, ids, values);
        }
      },
      [&] { stop = true; }, CallThread::OnInterrupt::kFinishCall);
  ThrowIfError(st);
  return BatchToArrays(std::move(batch));
}

}  // namespace
nb::dict ColumnsToDict(data::SpecColumns&& columns);  // spec_batches.cc
namespace {

// The data-service client (dataservice/client.h) over all epochs of one
// iteration. `cursor_json`: a state from Cursor() to resume at ("" = start).
class DataServiceIterator {
 public:
  DataServiceIterator(const std::string& address, const std::vector<std::string>& files, const nb::dict& reader,
                      const nb::dict& client, const nb::dict& pipeline, int64_t batch_size, int32_t epochs,
                      uint64_t seed, const std::string& cursor_json, const std::string& feature_spec)
      : epochs_(epochs) {
    SetDataOptions(reader, &flags_);
    dataservice::DataServiceSettings cf;
    cf.address = address;
    for (auto [k, v] : client) {
      if (v.is_none()) continue;
      const std::string key = nb::cast<std::string>(k);
      if (key == "processing_mode") cf.processing_mode = OptionText(v);
      else if (key == "job_name") cf.job_name = OptionText(v);
      else if (key == "num_splits") cf.num_splits = nb::cast<int32_t>(v);
      else if (key == "consumer_index") cf.consumer_index = nb::cast<int32_t>(v);
      else if (key == "compression") cf.compression = OptionText(v);
      else if (key == "buffer_bytes") cf.buffer_bytes = nb::cast<int64_t>(v);
      else if (key == "max_open_splits") cf.max_open_splits = nb::cast<int32_t>(v);
      else if (key == "token_file") cf.security.token_file = OptionText(v);
      else if (key == "training_job_name") cf.security.training_job_name = OptionText(v);
      else if (key == "tls_ca") cf.security.tls_ca = OptionText(v);
      else if (key == "tls_cert") cf.security.tls_cert = OptionText(v);
      else if (key == "tls_key") cf.security.tls_key = OptionText(v);
      else {
        PyErr_SetString(PyExc_TypeError, ("unknown data-service option '" + key + "'").c_str());
        throw nb::python_error();
      }
    }
    if (epochs < 1) Raise(InvalidArgumentError("--epochs must be >= 1"));
    if (batch_size < 1) Raise(InvalidArgumentError("--batch-size must be >= 1"));
    input_.files = files;
    StatusOr<data::ExampleReaderOptions> ro = flags_.ReaderOptions();
    ThrowIfError(ro.status());
    input_.reader = *ro;
    SetPipelineOptions(pipeline, &input_.pipeline);
    StatusOr<dataservice::DataServiceClientOptions> o = cf.Options(/*ordered=*/true, flags_.feature_map);
    ThrowIfError(o.status());
    options_ = std::move(*o);
    if (!feature_spec.empty()) {  // the workers read through the spec; the batches become its arrays
      StatusOr<data::FeatureSpec> spec = data::LoadFeatureSpec(feature_spec);
      ThrowIfError(spec.status());
      options_.feature_spec = spec->ToJson();
      spec_ = std::make_unique<data::SpecColumnsBuilder>(*spec);
    }
    options_.stop = &stop_;
    params_.input = &input_;
    params_.batch_size = batch_size;
    params_.epochs = epochs;
    params_.seed = seed;
    params_.shuffle = input_.pipeline.shuffle_buffer_size > 0;
    if (!cursor_json.empty()) {
      params_.cursor = nlohmann::json::parse(cursor_json, nullptr, /*allow_exceptions=*/false);
      if (params_.cursor.is_discarded() || !params_.cursor.is_object())
        Raise(InvalidArgumentError("load_state_dict: the data-service cursor is not a JSON object"));
      epoch_ = params_.cursor.value("epoch", int64_t{0});
      params_.start_epoch = epoch_;
    }
    Status st;
    RunStoppable([&] {
      auto s = dataservice::CreateDataServiceSource(options_, params_);
      if (s.ok()) source_ = std::move(*s);
      else st = s.status();
    });
    ThrowIfError(st);
  }
  ~DataServiceIterator() {
    if (call_.busy()) call_.Join();
    nb::gil_scoped_release nogil;
    source_.reset();
  }

  // (labels, ids, values), or with a feature spec a dict of its arrays (spec_batches.cc).
  nb::object Next() {
    if (!source_ || finished_) throw nb::stop_iteration();
    Status st;
    bool got = false;
    RunStoppable([&] {
      while (epoch_ < epochs_) {
        if (!begun_) {
          st = source_->BeginEpoch(epoch_, 0);
          if (!st.ok()) return;
          begun_ = true;
        }
        StatusOr<bool> r = source_->Next(&batch_);
        if (!r.ok()) {
          st = r.status();
          return;
        }
        if (*r) {
          got = true;
          return;
        }
        ++epoch_;
        begun_ = false;
      }
      st = source_->Finish();  // the job is released: workers may exit
    });
    ThrowIfError(st);
    if (!got) {
      finished_ = true;
      throw nb::stop_iteration();
    }
    if (spec_) {
      ThrowIfError(spec_->AppendBatch(batch_).WithContext("data service batch"));
      return ColumnsToDict(spec_->Take());
    }
    return BatchToArrays(std::move(batch_));
  }

  // The client's cursor as JSON (checkpoint meta "data_cursor" of the CLI).
  std::string Cursor() const {
    if (!source_) return "null";
    nlohmann::json c = source_->Cursor();
    if (!begun_) {  // between epochs: the next one from its start
      c = nlohmann::json{{"job", c.value("job", std::string())}, {"epoch", epoch_}, {"done", nlohmann::json::array()},
                         {"partial", nlohmann::json::object()}, {"examples", 0}};
    }
    return c.dump();
  }
  std::string Metrics() const { return source_ ? source_->Metrics().dump() : "null"; }

 private:
  // Ctrl-C sets the client's stop flag: its waits end with Cancelled.
  template <typename F>
  void RunStoppable(F&& fn) {
    call_.Run(std::forward<F>(fn), [this] { stop_.store(SIGINT); }, CallThread::OnInterrupt::kFinishCall);
  }

  job::DataOptions flags_;
  train::StreamInput input_;
  dataservice::DataServiceClientOptions options_;
  train::BatchSourceParams params_;
  std::atomic<int> stop_{0};
  std::unique_ptr<train::BatchSource> source_;
  data::Batch batch_;
  std::unique_ptr<data::SpecColumnsBuilder> spec_;  // with a feature spec, else null
  int64_t epoch_ = 0;
  int32_t epochs_ = 1;
  bool begun_ = false, finished_ = false;
  CallThread call_;
};

// Pipeline(...)'s options checked at construction, without opening anything: the reader
// options' values (the feature map is read later) and the pipeline's (ValidatePipelineOptions).
// ValueError naming the option; unknown names are TypeError (SetDataOptions; the Python side
// checks pipeline names against pipeline_option_names first).
void CheckPipelineOptions(const nb::dict& reader, const nb::dict& pipeline) {
  job::DataOptions flags;
  SetDataOptions(reader, &flags);
  flags.feature_map.clear();
  StatusOr<data::ExampleReaderOptions> ro = flags.ReaderOptions();
  ThrowIfError(ro.status());
  data::PipelineOptions o;
  SetPipelineOptions(pipeline, &o);
  o.pipe_timeout_ms = ro->pipe_timeout_ms;
  ThrowIfError(data::ValidatePipelineOptions(o));
}

}  // namespace

void BindTrainer(nb::module_& m);       // trainer.cc
void BindSpecBatches(nb::module_& m);   // spec_batches.cc

}  // namespace ctrain::python

NB_MODULE(_ctrain, m) {
  using namespace ctrain::python;
  m.doc() = "ctrain's C++ engine (use the ctrain package, not this module)";

  nb::class_<PipelineIterator>(m, "PipelineIterator")
      .def(nb::init<const std::vector<std::string>&, const nb::dict&, const nb::dict&>(), "files"_a, "reader"_a,
           "pipeline"_a)
      .def("next", &PipelineIterator::Next)
      .def("close", &PipelineIterator::Close)
      .def("stats_json", &PipelineIterator::Stats)
      .def("files", &PipelineIterator::Files)
      .def("warnings", &PipelineIterator::Warnings);

  m.def("read", &Read, "path"_a, "reader"_a);
  m.def("pipeline_option_names", &ctrain::data::PipelineOptionNames);
  m.def("check_pipeline_options", &CheckPipelineOptions, "reader"_a, "pipeline"_a);

  nb::class_<DataServiceIterator>(m, "DataServiceIterator")
      .def(nb::init<const std::string&, const std::vector<std::string>&, const nb::dict&, const nb::dict&,
                    const nb::dict&, int64_t, int32_t, uint64_t, const std::string&, const std::string&>(),
           "address"_a, "files"_a, "reader"_a, "client"_a, "pipeline"_a, "batch_size"_a, "epochs"_a, "seed"_a,
           "cursor_json"_a, "feature_spec"_a = "")
      .def("next", &DataServiceIterator::Next)
      .def("cursor_json", &DataServiceIterator::Cursor)
      .def("metrics_json", &DataServiceIterator::Metrics);

  BindTrainer(m);
  BindSpecBatches(m);
  BindScriptMonitor(m);
}
