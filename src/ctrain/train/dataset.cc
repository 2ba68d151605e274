#include "ctrain/train/dataset.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "ctrain/data/example_reader.h"
#include "ctrain/data/spec_reader.h"
#include "ctrain/data/synth.h"
#include "ctrain/io/compression.h"

namespace ctrain::train {

void Dataset::Reserve(int64_t rows) {
  labels_.reserve(rows);
  ids_.reserve(rows * field_size_);
  values_.reserve(rows * field_size_);
}

void Dataset::Append(float label, const int64_t* ids, const float* values) {
  labels_.push_back(label);
  ids_.insert(ids_.end(), ids, ids + field_size_);
  values_.insert(values_.end(), values, values + field_size_);
}

void Dataset::AppendMultiHot(float label, std::span<const int64_t> ids, std::span<const float> values,
                             std::span<const int32_t> lengths) {
  if (field_splits_.empty()) field_splits_.push_back(0);
  labels_.push_back(label);
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  values_.insert(values_.end(), values.begin(), values.end());
  int64_t at = field_splits_.back();
  for (int32_t n : lengths) field_splits_.push_back(at += n);
}

void Dataset::AppendRowOf(const Dataset& other, int64_t r) {
  const int64_t F = field_size_;
  if (!other.multi_hot()) {
    Append(other.labels_[r], other.ids_.data() + r * F, other.values_.data() + r * F);
    return;
  }
  const int64_t lo = other.field_splits_[r * F], hi = other.field_splits_[(r + 1) * F];
  if (field_splits_.empty()) field_splits_.push_back(0);
  labels_.push_back(other.labels_[r]);
  ids_.insert(ids_.end(), other.ids_.begin() + lo, other.ids_.begin() + hi);
  values_.insert(values_.end(), other.values_.begin() + lo, other.values_.begin() + hi);
  const int64_t shift = field_splits_.back() - lo;
  for (int64_t f = 1; f <= F; ++f) field_splits_.push_back(other.field_splits_[r * F + f] + shift);
}

void Dataset::AppendAll(const Dataset& other) {
  if (other.multi_hot()) {
    if (field_splits_.empty()) field_splits_.push_back(0);
    const int64_t base = field_splits_.back();
    for (size_t i = 1; i < other.field_splits_.size(); ++i) field_splits_.push_back(base + other.field_splits_[i]);
  }
  labels_.insert(labels_.end(), other.labels_.begin(), other.labels_.end());
  ids_.insert(ids_.end(), other.ids_.begin(), other.ids_.end());
  values_.insert(values_.end(), other.values_.begin(), other.values_.end());
}

void Dataset::Gather(std::span<const int64_t> rows, data::Batch* batch) const {
  const int64_t n = static_cast<int64_t>(rows.size());
  const int64_t F = field_size_;
  batch->field_size = field_size_;
  batch->row_splits.clear();
  if (multi_hot()) {
    batch->labels.resize(n);
    batch->ids.clear();
    batch->values.clear();
    batch->field_splits.assign(1, 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = rows[i];
      batch->labels[i] = labels_[r];
      const int64_t lo = field_splits_[r * F], hi = field_splits_[(r + 1) * F];
      batch->ids.insert(batch->ids.end(), ids_.begin() + lo, ids_.begin() + hi);
      batch->values.insert(batch->values.end(), values_.begin() + lo, values_.begin() + hi);
      const int64_t shift = batch->field_splits.back() - lo;
      for (int64_t f = 1; f <= F; ++f) batch->field_splits.push_back(field_splits_[r * F + f] + shift);
    }
    return;
  }
  batch->field_splits.clear();
  batch->labels.resize(n);
  batch->ids.resize(n * F);
  batch->values.resize(n * F);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = rows[i];
    batch->labels[i] = labels_[r];
    std::memcpy(batch->ids.data() + i * F, ids_.data() + r * F, F * sizeof(int64_t));
    std::memcpy(batch->values.data() + i * F, values_.data() + r * F, F * sizeof(float));
  }
}

void Dataset::Slice(int64_t begin, int64_t end, data::Batch* batch) const {
  const int64_t n = end - begin;
  const int64_t F = field_size_;
  batch->field_size = field_size_;
  batch->row_splits.clear();
  if (multi_hot()) {
    const int64_t lo = field_splits_[begin * F], hi = field_splits_[end * F];
    batch->labels.assign(labels_.begin() + begin, labels_.begin() + end);
    batch->ids.assign(ids_.begin() + lo, ids_.begin() + hi);
    batch->values.assign(values_.begin() + lo, values_.begin() + hi);
    batch->field_splits.assign(field_splits_.begin() + begin * F, field_splits_.begin() + end * F + 1);
    for (int64_t& s : batch->field_splits) s -= lo;
    return;
  }
  batch->field_splits.clear();
  batch->labels.assign(labels_.begin() + begin, labels_.begin() + end);
  batch->ids.assign(ids_.begin() + begin * F, ids_.begin() + (begin + n) * F);
  batch->values.assign(values_.begin() + begin * F, values_.begin() + (begin + n) * F);
}

int64_t Dataset::MaxIdPlusOne() const {
  int64_t m = -1;
  for (int64_t id : ids_) m = std::max(m, id);
  return m + 1;
}

double Dataset::PositiveRate() const {
  if (labels_.empty()) return 0;
  double pos = 0;
  for (float l : labels_) pos += l >= 0.5f ? 1 : 0;
  return pos / static_cast<double>(labels_.size());
}

std::string InputDisplayName(const std::string& path) {
  if (path == "-") return "stdin (-)";
  return path;
}

StatusOr<Dataset> LoadDataset(const std::vector<std::string>& paths, const DataOptions& options,
                              LoadStats* stats) {
  data::ExampleReaderOptions ro;
  CTRAIN_ASSIGN_OR_RETURN(ro.format, data::ParseRecordFormat(options.format));
  CTRAIN_ASSIGN_OR_RETURN(ro.compression, io::ParseCompression(options.compression));
  ro.field_size = options.field_size;
  ro.id_base = options.id_base;
  ro.feature_size = options.feature_size;
  return LoadDataset(paths, ro, stats);
}

StatusOr<Dataset> LoadDataset(const std::vector<std::string>& paths, const data::ExampleReaderOptions& options,
                              LoadStats* stats) {
  // The readers check the id range (data::IdRange), so the error names
  // the file and line or record; the default limit is feature_size.
  data::ExampleReaderOptions ro = options;
  if (ro.id_limit <= 0) ro.id_limit = ro.feature_size;
  if (paths.empty()) return InvalidArgumentError("no input files");
  if (ro.field_size <= 0) return InvalidArgumentError("field_size must be > 0, got " + std::to_string(ro.field_size));
  if (ro.feature_size <= 0)
    return InvalidArgumentError("feature_size must be > 0, got " + std::to_string(ro.feature_size));
  const int32_t F = ro.field_size;
  Dataset ds(F);
  LoadStats local;
  std::vector<int64_t> ids(F);
  std::vector<float> values(F);
  std::vector<std::string> empty;
  int64_t input_records = 0;  // every input record so far, dropped ones included
  for (const std::string& path : paths) {
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<data::ExampleReader> reader, data::OpenExampleReader(path, ro));
    int64_t record = 0;
    auto note_dropped = [&] {
      for (const data::ExampleReader::Dropped& d : reader->TakeDropped()) {
        local.dropped.push_back({reader->name(), ds.size(), input_records, d});
        input_records += static_cast<int64_t>(d.records);
      }
    };
    for (;;) {
      float label = 0;
      CTRAIN_ASSIGN_OR_RETURN(bool more, reader->Next(&label, ids.data(), values.data()));
      note_dropped();
      if (!more) break;
      ds.Append(label, ids.data(), values.data());
      ++record;
      ++input_records;
    }
    const std::string skipped = reader->SkippedSummary();
    // Summaries look like "blank_lines=0 comment_lines=2"; report only non-zero ones.
    bool any = false;
    for (size_t p = skipped.find('='); p != std::string::npos; p = skipped.find('=', p + 1))
      any |= p + 1 < skipped.size() && skipped[p + 1] != '0';
    if (record == 0) empty.push_back(InputDisplayName(path) + (any ? " (skipped: " + skipped + ")" : ""));
    if (any || (!skipped.empty() && skipped.find('=') == std::string::npos)) local.skipped += (local.skipped.empty() ? "" : "; ") + reader->name() + ": " + skipped;
    local.per_file.push_back({path, reader->format(), reader->compression(), record});
    ++local.files;
    local.records += record;
    local.oov_ids += static_cast<int64_t>(reader->oov_ids());
  }
  if (!empty.empty()) {
    std::string m = "no examples in ";
    for (size_t i = 0; i < empty.size(); ++i) m += (i ? ", " : "") + empty[i];
    if (empty.size() < paths.size())
      m += " (" + std::to_string(empty.size()) + " of " + std::to_string(paths.size()) + " inputs are empty)";
    return InvalidArgumentError(m);
  }
  ds.set_source(paths, options);
  if (stats != nullptr) *stats = local;
  return ds;
}

StatusOr<Dataset> LoadSpecDataset(const std::vector<std::string>& paths, const data::FeatureSpec& spec,
                                  LoadStats* stats) {
  if (paths.empty()) return InvalidArgumentError("no input files");
  const int32_t F = spec.field_size;
  Dataset ds(F);
  LoadStats local;
  std::vector<std::string> empty;
  data::SpecRow row;
  for (const std::string& path : paths) {
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<data::SpecReader> reader, data::SpecReader::Open(path, spec));
    int64_t record = 0;
    for (;;) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, reader->Next(&row));
      if (!more) break;
      if (spec.multi_hot) ds.AppendMultiHot(row.label, row.ids, row.values, row.lengths);
      else ds.Append(row.label, row.ids.data(), row.values.data());
      ++record;
    }
    if (record == 0) empty.push_back(InputDisplayName(path));
    const std::string skipped = reader->SkippedSummary();
    bool any = false;  // report only non-zero counts ("blank_lines=0 comment_lines=2")
    for (size_t p = skipped.find('='); p != std::string::npos; p = skipped.find('=', p + 1))
      any |= p + 1 < skipped.size() && skipped[p + 1] != '0';
    if (any) local.skipped += (local.skipped.empty() ? "" : "; ") + reader->name() + ": " + skipped;
    const data::RecordFormat format = spec.input == data::SpecInput::kExample  ? data::RecordFormat::kTFRecord
                                      : spec.input == data::SpecInput::kLibSvm ? data::RecordFormat::kLibSvm
                                                                               : data::RecordFormat::kLibFfm;
    local.per_file.push_back({path, format, reader->compression(), record});
    ++local.files;
    local.records += record;
  }
  if (!empty.empty()) {
    std::string m = "no examples in ";
    for (size_t i = 0; i < empty.size(); ++i) m += (i ? ", " : "") + empty[i];
    return InvalidArgumentError(m);
  }
  if (stats != nullptr) *stats = local;
  return ds;
}

StatusOr<Dataset> MakeSynthDataset(uint64_t seed, int64_t first_row, int64_t rows, int64_t feature_size) {
  data::SynthOptions so;
  so.rows = first_row + rows;
  so.seed = seed;
  so.feature_size = feature_size;
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<data::SynthGenerator> gen, data::SynthGenerator::Create(so));
  const int32_t F = so.field_size;
  Dataset ds(F);
  ds.Reserve(rows);
  std::vector<int64_t> ids(F);
  std::vector<float> values(F);
  for (int64_t r = first_row; r < first_row + rows; ++r) {
    float label = 0;
    gen->Row(r, &label, ids.data(), values.data());
    ds.Append(label, ids.data(), values.data());
  }
  return ds;
}

}  // namespace ctrain::train
