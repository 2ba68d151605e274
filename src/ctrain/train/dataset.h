// Dataset: a whole training or evaluation set held in memory as three
// contiguous arrays, the layout the trainer shuffles and slices into batches.
//
// Layout (the seed's feat_ids / feat_vals, data::Batch):
//   labels  float[N]      click label, 0 or 1
//   ids     int64[N * F]  row-major; ids[r * F + f] is field f of row r, 0-based
//   values  float[N * F]  same shape as ids
// Every row has exactly F fields (the DeepFM MLP input is F * K wide). A
// multi-hot dataset (rows built through a feature spec with var_len fields,
// data/feature_spec.h) lets a field hold 0..n ids: ids/values then hold nnz
// entries and field_splits int64[N * F + 1] gives field f of row r at
// [field_splits[r*F+f], field_splits[r*F+f+1]) (data::Batch::field_splits).
//
// Loading (LoadDataset) reads every file in order through the format readers
// (data/example_reader.h): LibSVM, TFRecord of tf.train.Example, Criteo TSV/CSV.
// Every id is checked by the reader against ExampleReaderOptions::id_limit
// (default: feature_size); an id outside [0, limit) is the reader's
// InvalidArgument error naming the file and line (or record and offset), the
// field and the id as written (data::IdRange). Nothing is skipped silently: readers count what they
// skip (blank/comment lines) and LoadDataset reports that in `stats`.
//
// Thread safety: a const Dataset may be read from many threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/batch.h"
#include "ctrain/data/example_reader.h"
#include "ctrain/data/feature_spec.h"

namespace ctrain::train {

class Dataset {
 public:
  Dataset() = default;
  explicit Dataset(int32_t field_size) : field_size_(field_size) {}

  int32_t field_size() const { return field_size_; }
  int64_t size() const { return static_cast<int64_t>(labels_.size()); }
  bool empty() const { return labels_.empty(); }

  bool multi_hot() const { return !field_splits_.empty(); }
  // [N * F + 1] for a multi-hot dataset, else empty.
  const std::vector<int64_t>& field_splits() const { return field_splits_; }

  const float* labels() const { return labels_.data(); }
  const int64_t* ids() const { return ids_.data(); }
  const float* values() const { return values_.data(); }
  std::span<const float> label_span() const { return labels_; }

  void Reserve(int64_t rows);
  // Appends one row. REQUIRES: ids and values point at field_size() entries.
  void Append(float label, const int64_t* ids, const float* values);
  // Appends one multi-hot row (field f holds lengths[f] consecutive entries).
  // REQUIRES: lengths.size() == field_size(), the dataset is empty or multi-hot.
  void AppendMultiHot(float label, std::span<const int64_t> ids, std::span<const float> values,
                      std::span<const int32_t> lengths);
  // Appends row r of `other` (one-hot or multi-hot). REQUIRES: same field_size;
  // this dataset is empty or has other's layout.
  void AppendRowOf(const Dataset& other, int64_t r);
  // Appends all rows of `other`. REQUIRES: same field_size and layout.
  void AppendAll(const Dataset& other);

  // Copies the rows `rows` (in that order) into *batch, replacing its contents
  // (capacity is kept, so a reused batch does not allocate).
  void Gather(std::span<const int64_t> rows, data::Batch* batch) const;
  // Copies rows [begin, end) in storage order.
  void Slice(int64_t begin, int64_t end, data::Batch* batch) const;

  // Largest id + 1 (0 when empty): the smallest feature_size that fits.
  int64_t MaxIdPlusOne() const;
  // Fraction of rows with label 1.
  double PositiveRate() const;

  // The files the rows were read from and how (set by LoadDataset; empty for
  // datasets built in memory). Used to name the input line of a row in
  // errors (train/input_checks.h LocateRows). The reader options' vocabulary
  // pointer must outlive that use.
  const std::vector<std::string>& source_paths() const { return source_paths_; }
  const data::ExampleReaderOptions& source_reader() const { return source_reader_; }
  void set_source(std::vector<std::string> paths, const data::ExampleReaderOptions& reader) {
    source_paths_ = std::move(paths);
    source_reader_ = reader;
  }

 private:
  std::vector<std::string> source_paths_;
  data::ExampleReaderOptions source_reader_;
  int32_t field_size_ = 0;
  std::vector<float> labels_;
  std::vector<int64_t> ids_;
  std::vector<float> values_;
  std::vector<int64_t> field_splits_;  // multi-hot only
};

// How to read example files. Mirrors data::ReaderOptions (example_reader.h).
struct DataOptions {
  // auto | libsvm | tfrecord | criteo-tsv | criteo-csv. "auto" decides from the
  // content (see data/example_reader.h).
  std::string format = "auto";
  // auto | none | gzip | zlib (auto: detected from the magic bytes).
  std::string compression = "auto";
  // F: fields per example. Must be > 0.
  int32_t field_size = 39;
  // Written ids start at this base (1 for classic 1-based LibSVM files).
  int32_t id_base = 0;
  // Size of the id space [0, feature_size); ids outside are errors. For the
  // Criteo TSV/CSV formats, categorical values are hashed into it.
  int64_t feature_size = 117581;
};

struct LoadStats {
  int64_t files = 0;
  int64_t records = 0;        // rows loaded
  int64_t oov_ids = 0;        // ids read as their field's out-of-vocabulary row (ExampleReaderOptions::oov_buckets)
  // Per input file in order: the format and compression it was read with
  // (never auto) and the examples it gave.
  struct File {
    std::string path;
    data::RecordFormat format = data::RecordFormat::kAuto;
    io::Compression compression = io::Compression::kNone;
    int64_t examples = 0;
  };
  std::vector<File> per_file;
  // Records dropped on purpose (TFRecord --skip-corrupt-records), in order:
  // `row` = dataset rows before the drop (the dropped records sit between
  // rows row-1 and row), `first_record` = global 0-based record index of the
  // first dropped record counting every input record of every file.
  struct Dropped {
    std::string file;
    int64_t row = 0;
    int64_t first_record = 0;
    data::ExampleReader::Dropped where;
  };
  std::vector<Dropped> dropped;
  // What the readers skipped on purpose (blank/comment lines, CSV headers), as
  // "<file>: <reader's SkippedSummary()>" per file with a non-empty summary, joined by "; ".
  std::string skipped;
};

// How an input is named in messages: "stdin (-)" for "-", else the path.
std::string InputDisplayName(const std::string& path);

// Reads all `paths` (in order) into one Dataset.
// Errors: the readers' errors (they name file, record/line and byte offset);
// InvalidArgument from data::IdRange for an id outside [0, id_limit)
// (id_limit 0 = feature_size), e.g. "<file>:<line>: field 16 of 39: feature id
// 118 (as written, id_base 1) is outside [1, 101): increase --feature-size";
// InvalidArgument "no input files" for an empty list; InvalidArgument
// "no examples in <file>[, <file>...]" naming every input that gave zero
// rows (stdin as "stdin (-)"), so an empty upstream never trains or
// predicts on nothing.
StatusOr<Dataset> LoadDataset(const std::vector<std::string>& paths, const DataOptions& options,
                              LoadStats* stats = nullptr);
// Same with the reader options spelled out (feature maps, TFRecord schema, ...).
StatusOr<Dataset> LoadDataset(const std::vector<std::string>& paths, const data::ExampleReaderOptions& options,
                              LoadStats* stats = nullptr);

// Reads all `paths` (in order) through a feature spec (data/spec_reader.h)
// into one Dataset with field_size spec.field_size; multi-hot when the spec
// is. Errors as the SpecReader's (file and record or line named),
// InvalidArgument "no input files" and "no examples in <file>...".
StatusOr<Dataset> LoadSpecDataset(const std::vector<std::string>& paths, const data::FeatureSpec& spec,
                                  LoadStats* stats = nullptr);

// Rows [first_row, first_row + rows) of the deterministic synthetic Criteo-like
// generator (data/synth.h) with the given seed, field_size 39 and feature_size
// `feature_size`. The same (seed, row) always gives the same example.
StatusOr<Dataset> MakeSynthDataset(uint64_t seed, int64_t first_row, int64_t rows, int64_t feature_size);

}  // namespace ctrain::train
