#include "ctrain/data/field_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "ctrain/io/feature_hash.h"

namespace ctrain::data {

void DistinctCounter::Insert(uint64_t hash) {
  if (exact_) {
    set_.insert(hash);
    if (set_.size() <= limit_) return;
    // Switch to the sketch: keep the kSketchSize smallest hashes.
    exact_ = false;
    for (uint64_t h : set_) {
      kmv_.insert(h);
      if (kmv_.size() > kSketchSize) kmv_.erase(std::prev(kmv_.end()));
    }
    std::unordered_set<uint64_t>().swap(set_);
    return;
  }
  if (kmv_.size() == kSketchSize && hash >= *kmv_.rbegin()) return;
  kmv_.insert(hash);
  if (kmv_.size() > kSketchSize) kmv_.erase(std::prev(kmv_.end()));
}

uint64_t DistinctCounter::Count() const {
  if (exact_) return set_.size();
  // KMV: the k-th smallest of n uniform hashes sits near k / n of the range.
  const double kth = (static_cast<double>(*kmv_.rbegin()) + 1.0) / 18446744073709551616.0;
  return static_cast<uint64_t>(std::llround(static_cast<double>(kmv_.size() - 1) / kth));
}

FieldStats::FieldStats(size_t id_cap, size_t value_cap)
    : id_cap_(std::max<size_t>(id_cap, 2)), value_cap_(std::max<size_t>(value_cap, 2)) {}

FieldStat& FieldStats::At(size_t i, std::string_view name) {
  if (i >= fields_.size()) {
    const size_t old = fields_.size();
    fields_.resize(i + 1);
    for (size_t k = old; k <= i; ++k) {
      fields_[k].name = std::to_string(k + 1);
      fields_[k].ids.set_cap(id_cap_);
      fields_[k].values.set_cap(value_cap_);
    }
    // Two counters per field share the budget.
    const size_t limit =
        std::clamp<size_t>(kExactBudget / (2 * fields_.size()), 4096, DistinctCounter::kExactLimit);
    for (FieldStat& f : fields_) {
      f.ids.set_limit(limit);
      f.values.set_limit(limit);
    }
  }
  if (!name.empty() && fields_[i].count == 0 && fields_[i].id_observations == 0) fields_[i].name = std::string(name);
  return fields_[i];
}

namespace {
uint64_t ValueHash(double v) {
  if (v == 0) v = 0;  // -0 and 0 are one value
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return io::Mix64(bits);
}
void AddValueTo(FieldStat& f, double value) {
  if (f.count == 0) {
    f.min = f.max = value;
  } else {
    f.min = std::min(f.min, value);
    f.max = std::max(f.max, value);
  }
  ++f.count;
  if (f.all_integral && !(std::isfinite(value) && value == std::floor(value))) f.all_integral = false;
  if (!f.values.full()) f.values.Add(ValueHash(value));
}
std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
}  // namespace

void FieldStats::Add(size_t i, int64_t id, double value) {
  FieldStat& f = i < fields_.size() ? fields_[i] : At(i);
  if (f.id_observations++ == 0) f.first_id = id;
  if (!f.ids.full()) f.ids.Add(io::Mix64(static_cast<uint64_t>(id)));
  AddValueTo(f, value);
}

void FieldStats::AddValue(size_t i, double value) { AddValueTo(i < fields_.size() ? fields_[i] : At(i), value); }

void FieldStats::AddIdHash(size_t i, uint64_t hash) {
  FieldStat& f = At(i);
  ++f.id_observations;
  f.ids.Add(hash);
}

bool FieldStats::Unscaled(const FieldStat& f, double abs_limit) {
  return f.count > 0 && !(std::max(std::fabs(f.min), std::fabs(f.max)) <= abs_limit);
}

bool FieldStats::LooksLikeCodes(const FieldStat& f, uint64_t min_codes) {
  return f.count > 0 && f.id_observations > 0 && f.ids.Count() == 1 && f.all_integral && f.min >= 0 &&
         f.min != f.max && f.values.Count() >= min_codes;
}

std::vector<std::string> FieldStats::Warnings() const {
  std::vector<std::string> out;
  for (const FieldStat& f : fields_) {
    if (f.count == 0) continue;
    const bool codes = LooksLikeCodes(f);
    const std::string codes_fix =
        "if these are category codes, write each code as its own id with value 1 (hash it): DeepFM turns a code "
        "stored as a value into a scale of one embedding";
    if (Unscaled(f)) {
      std::string w = "field " + f.name + ": values range " + Num(f.min) + ".." + Num(f.max) +
                      ": unscaled? DeepFM multiplies the embedding by the value, so large values saturate the "
                      "model; scale them (log1p, or min-max to [0, 1])";
      if (codes) w += "; " + codes_fix;
      out.push_back(std::move(w));
    } else if (codes) {
      out.push_back("field " + f.name + ": the id never varies (always " + std::to_string(f.first_id) +
                    ") while the value does (" + std::to_string(f.values.Count()) + " distinct integers, " +
                    Num(f.min) + ".." + Num(f.max) + "): " + codes_fix);
    }
  }
  return out;
}

std::string_view FieldStats::Method() {
  return "exact up to 65536 distinct per field (fewer with more than 32 fields: 4M keys in all, at least 4096 per "
         "field), then a KMV sketch (1024 smallest 64-bit hashes, ~3% error)";
}

}  // namespace ctrain::data
