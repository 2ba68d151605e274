#include "ctrain/train/input_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "ctrain/data/file_list.h"
#include "ctrain/data/pipe_mode.h"

namespace ctrain::train {
namespace {

std::string G(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// "1, 2, 5" from 0-based field numbers (at most 10, then "...").
std::string FieldList(const std::vector<int32_t>& fields) {
  std::string s;
  for (size_t i = 0; i < fields.size() && i < 10; ++i) s += (i ? ", " : "") + std::to_string(fields[i] + 1);
  if (fields.size() > 10) s += ", ... (" + std::to_string(fields.size()) + " fields)";
  return s;
}

}  // namespace

InputStats::InputStats(int32_t field_size, const InputCheckOptions& options)
    : field_size_(field_size), options_(options), stats_(2, kMaxDistinct), peaks_(std::max(0, field_size)) {
  if (field_size > 0) stats_.At(static_cast<size_t>(field_size) - 1);  // fields 1..F
}

void InputStats::Add(const int64_t* ids, const float* values, int64_t rows, const float* labels) {
  const int64_t take = std::min(rows, options_.max_examples - examples_);
  for (int64_t r = 0; r < take; ++r) {
    const int64_t* row_ids = ids + r * field_size_;
    const float* row_values = values + r * field_size_;
    for (int32_t f = 0; f < field_size_; ++f) {
      const float v = row_values[f];
      stats_.Add(f, row_ids[f], v);
      // Keep the row of a new largest |value| (NaN/inf beat everything once).
      Peak& p = peaks_[f];
      if (p.ids.empty() ||
          (std::isfinite(p.values[f]) && (!std::isfinite(v) || std::fabs(v) > std::fabs(p.values[f])))) {
        p.label = labels != nullptr ? labels[r] : 0.0f;
        p.ids.assign(row_ids, row_ids + field_size_);
        p.values.assign(row_values, row_values + field_size_);
      }
    }
  }
  examples_ += std::max<int64_t>(take, 0);
}

std::vector<InputStats::Field> InputStats::fields() const {
  std::vector<Field> out;
  for (const data::FieldStat& s : stats_.fields()) {
    Field f;
    f.count = static_cast<int64_t>(s.count);
    f.min = static_cast<float>(s.min);
    f.max = static_cast<float>(s.max);
    f.first_id = s.first_id;
    f.id_varies = s.ids.Count() > 1;
    f.integral = s.all_integral;
    f.distinct = s.values.Count();
    out.push_back(f);
  }
  return out;
}

std::vector<std::string> InputStats::Warnings(const std::string& what, const std::vector<std::string>* paths,
                                              const data::ExampleReaderOptions* reader, int64_t max_scan) const {
  std::vector<std::string> out;
  if (examples_ == 0) return out;
  const std::vector<data::FieldStat>& fields = stats_.fields();
  const uint64_t min_codes = static_cast<uint64_t>(std::max(options_.min_codes, 0));
  auto looks_like_codes = [&](int32_t f) { return data::FieldStats::LooksLikeCodes(fields[f], min_codes); };
  std::vector<int32_t> unscaled, codes;
  for (int32_t f = 0; f < field_size_; ++f) {
    if (data::FieldStats::Unscaled(fields[f], options_.unscaled_abs_value)) unscaled.push_back(f);
    else if (looks_like_codes(f)) codes.push_back(f);
  }
  const std::string seen = " in the first " + std::to_string(examples_) + " " + what;
  if (!unscaled.empty()) {
    std::string m = "unscaled input values: field";
    m += unscaled.size() > 1 ? "s " : " ";
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", options_.unscaled_abs_value);
    m += FieldList(unscaled) + (unscaled.size() > 1 ? " have" : " has") + " values beyond +-" + limit + seen + " (";
    // Where the largest value of each listed field is (re-reading the inputs).
    const size_t listed = std::min<size_t>(unscaled.size(), 5);
    std::vector<std::string> where(listed);
    if (paths != nullptr && reader != nullptr) {
      data::Batch peaks;
      peaks.field_size = field_size_;
      std::vector<ExtremeRow> rows;
      for (size_t i = 0; i < listed; ++i) {
        const Peak& p = peaks_[unscaled[i]];
        if (p.ids.empty()) continue;
        rows.push_back({peaks.size(), unscaled[i], p.values[unscaled[i]]});
        peaks.labels.push_back(p.label);
        peaks.ids.insert(peaks.ids.end(), p.ids.begin(), p.ids.end());
        peaks.values.insert(peaks.values.end(), p.values.begin(), p.values.end());
      }
      const std::vector<std::string> found = LocateRows(*paths, *reader, peaks, rows, max_scan);
      for (size_t k = 0, i = 0; i < listed && k < found.size(); ++i) {
        if (peaks_[unscaled[i]].ids.empty()) continue;
        const std::string& loc = found[k++];
        if (loc.rfind("row ", 0) != 0) where[i] = loc.substr(0, loc.find(": field "));  // a real location
      }
    }
    for (size_t i = 0; i < listed; ++i) {
      const data::FieldStat& s = fields[unscaled[i]];
      m += (i ? "; " : "") + std::string("field ") + std::to_string(unscaled[i] + 1) + ": " + G(s.min) + " .. " +
           G(s.max);
      if (!where[i].empty()) m += ", largest at " + where[i];
    }
    m += "). DeepFM multiplies each value into its field's embedding, so values this large saturate the "
         "predictions at 0/1 (AUC near 0.5): scale them before training, e.g. log1p(x) for counts, or standardise";
    bool any_codes = false;
    for (int32_t f : unscaled) any_codes |= looks_like_codes(f);
    if (any_codes)
      m += "; if a field's integers are category codes (its id never varies), hash each code into the id instead";
    out.push_back(m);
  }
  if (!codes.empty()) {
    std::string m = "field";
    m += codes.size() > 1 ? "s " : " ";
    m += FieldList(codes) + ": the id never varies while the value takes several integer values" + seen + " (";
    for (size_t i = 0; i < codes.size() && i < 5; ++i) {
      const data::FieldStat& s = fields[codes[i]];
      const uint64_t distinct = s.values.Count();  // counted up to kMaxDistinct
      m += (i ? "; " : "") + std::string("field ") + std::to_string(codes[i] + 1) + ": id " +
           std::to_string(s.first_id) + ", " + (distinct >= kMaxDistinct ? ">= " : "") + std::to_string(distinct) +
           " values " + G(s.min) + " .. " + G(s.max);
    }
    m += "). DeepFM turns such a field into a scale of one embedding, not one embedding per value: if these are "
         "label-encoded category codes, hash each code into the id (id = hash(field, code), value 1); if they are "
         "counts, scale them (log1p)";
    out.push_back(m);
  }
  return out;
}

double SaturatedFraction(const float* probs, int64_t n) {
  if (n <= 0) return 0;
  int64_t s = 0;
  for (int64_t i = 0; i < n; ++i) s += (probs[i] < 1e-3f || probs[i] > 0.999f) ? 1 : 0;
  return static_cast<double>(s) / static_cast<double>(n);
}

std::string SaturationWarning(double fraction, int64_t examples, int64_t step, const InputCheckOptions& options) {
  if (examples <= 0 || fraction < options.saturated_fraction) return "";
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "step %lld: %.1f%% of the %lld evaluated predictions are saturated (< 0.001 or > 0.999): the model "
                "cannot rank these examples (AUC near 0.5). Usually unscaled input values (scale them, e.g. "
                "log1p) or a too large --learning-rate",
                static_cast<long long>(step), 100.0 * fraction, static_cast<long long>(examples));
  return buf;
}

std::vector<ExtremeRow> ExtremeRows(const data::Batch& batch, size_t max_rows, const InputCheckOptions& options) {
  std::vector<ExtremeRow> out;
  const int32_t F = batch.field_size;
  if (F <= 0 || batch.variable_length() || batch.multi_hot()) return out;
  for (int64_t r = 0; r < batch.size(); ++r) {
    ExtremeRow best{r, -1, 0};
    for (int32_t f = 0; f < F; ++f) {
      const float v = batch.values[r * F + f];
      const bool extreme = !std::isfinite(v) || std::fabs(v) >= options.extreme_abs_value;
      if (extreme && (best.field < 0 || !(std::fabs(v) <= std::fabs(best.value)))) best = {r, f, v};
    }
    if (best.field >= 0) out.push_back(best);
  }
  std::stable_sort(out.begin(), out.end(), [](const ExtremeRow& a, const ExtremeRow& b) {
    const double x = std::isfinite(a.value) ? std::fabs(a.value) : HUGE_VAL;
    const double y = std::isfinite(b.value) ? std::fabs(b.value) : HUGE_VAL;
    return x > y;
  });
  if (out.size() > max_rows) out.resize(max_rows);
  return out;
}

std::vector<std::string> LocateRows(const std::vector<std::string>& paths, const data::ExampleReaderOptions& reader,
                                    const data::Batch& batch, const std::vector<ExtremeRow>& rows, int64_t max_scan) {
  const int32_t F = batch.field_size;
  std::vector<std::string> where(rows.size());
  size_t found = 0;
  data::ExampleReaderOptions ro = reader;
  ro.id_limit = 0;  // only locating: ids were checked when read
  ro.skip_corrupt_records = true;
  ro.max_skipped_records = 0;
  std::vector<int64_t> ids(std::max(F, 1));
  std::vector<float> values(std::max(F, 1));
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    if (p == "-" || p.rfind(data::kPipeChannelPrefix, 0) == 0) continue;
    StatusOr<std::vector<std::string>> e = data::ExpandFileList({p});
    if (!e.ok()) continue;
    for (const std::string& f : *e)
      if (!data::IsStreamPath(f)) files.push_back(f);
  }
  int64_t scanned = 0;
  for (const std::string& f : files) {
    if (found == rows.size() || (max_scan >= 0 && scanned >= max_scan)) break;
    StatusOr<std::unique_ptr<data::ExampleReader>> r = data::OpenExampleReader(f, ro);
    if (!r.ok()) continue;
    for (;;) {
      float label = 0;
      if (max_scan >= 0 && scanned >= max_scan) break;
      StatusOr<bool> more = (*r)->Next(&label, ids.data(), values.data());
      if (!more.ok() || !*more) break;
      ++scanned;
      for (size_t i = 0; i < rows.size(); ++i) {
        if (!where[i].empty()) continue;
        const int64_t b = rows[i].row;
        if (label != batch.labels[b] || std::memcmp(ids.data(), batch.ids.data() + b * F, F * sizeof(int64_t)) != 0 ||
            std::memcmp(values.data(), batch.values.data() + b * F, F * sizeof(float)) != 0)
          continue;
        where[i] = (*r)->Location();
        ++found;
      }
      if (found == rows.size()) break;
    }
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const ExtremeRow& x = rows[i];
    std::string loc = where[i];
    if (loc.empty())
      loc = "row " + std::to_string(x.row) + " of the batch (label " + G(batch.labels[x.row]) +
            (files.empty() ? ", from a stream that cannot be re-read)" : ", not found again in the input files)");
    out.push_back(loc + ": field " + std::to_string(x.field + 1) + " value " + G(x.value));
  }
  return out;
}

}  // namespace ctrain::train
