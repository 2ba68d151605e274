// FieldStats: per-field value ranges and distinct-id counts of a dataset, for
// `ctrain inspect` and for checks that name inputs a model cannot learn from
// (issue #7 item 4): unscaled values (raw counts up to 4.7e8 saturate DeepFM,
// B34) and fields whose id never varies while the value does (category codes
// stored as values: DeepFM then scales one embedding instead of picking one).
//
// A field is a position in the fixed layout (LibSVM pair i, Criteo column,
// TFRecord feature). Per field it keeps: the number of observations, the
// min/max value, whether every value is an integer, and the number of
// distinct ids and of distinct values.
//
// Distinct counts (DistinctCounter): exact up to a limit of distinct keys per
// counter (kExactLimit = 65536, lowered so that all counters of a FieldStats
// hold at most kExactBudget keys together, but never below 4096); beyond it a
// KMV sketch (the k = 1024 smallest 64-bit hashes; estimate (k - 1) / (k-th
// smallest hash / 2^64), relative standard error about 1 / sqrt(k - 2) ~ 3%).
// A FieldStats built with caps counts only up to them (cheap: train's input
// checks ask only whether the id varies and for a few distinct values).
//
// The two warning rules (Unscaled, LooksLikeCodes) are defined here once;
// train::InputStats (train/input_checks.h) applies them to the first training
// examples with its own wording.
//
// Thread safety: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace ctrain::data {

class DistinctCounter {
 public:
  static constexpr size_t kExactLimit = 1 << 16;
  static constexpr size_t kSketchSize = 1024;

  // Adds a key by its 64-bit hash (io::Mix64(id), io::Hash64(bytes, 0), ...).
  // Inline: a repeat of the previous key and a full cap cost one comparison.
  void Add(uint64_t hash) {
    if (has_last_ && hash == last_) return;  // one-hot values, constant ids
    has_last_ = true;
    last_ = hash;
    if (full()) return;
    Insert(hash);
  }
  // The cap is reached: further keys change nothing (callers may skip hashing them).
  bool full() const { return exact_ && set_.size() >= cap_; }
  // Exact mode ends once more than `limit` keys were seen (applies from the next Add).
  void set_limit(size_t limit) { limit_ = limit; }
  // Stops counting at `cap` keys (set before the first Add, below the limit):
  // Count() then reads `cap`, meaning "at least cap".
  void set_cap(size_t cap) { cap_ = cap; }
  // Exact count, or the KMV estimate once more than kExactLimit keys were seen.
  uint64_t Count() const;
  bool exact() const { return exact_; }

 private:
  void Insert(uint64_t hash);

  bool exact_ = true;
  bool has_last_ = false;
  uint64_t last_ = 0;  // the previous key: adding it again changes nothing
  size_t limit_ = kExactLimit;
  size_t cap_ = SIZE_MAX;
  std::unordered_set<uint64_t> set_;  // exact mode
  std::set<uint64_t> kmv_;            // sketch mode: the kSketchSize smallest hashes
};

struct FieldStat {
  std::string name;        // "1", "I3", "C7", a feature key...
  uint64_t count = 0;      // observations with a value
  double min = 0, max = 0; // of the values (valid when count > 0)
  bool all_integral = true; // every value a finite integer
  DistinctCounter ids;     // distinct ids (or categories); empty for value-only fields
  DistinctCounter values;  // distinct values
  uint64_t id_observations = 0;
  int64_t first_id = 0;    // an id seen (the only one when ids.Count() == 1)
};

class FieldStats {
 public:
  // Thresholds of Warnings() (and the defaults of train::InputCheckOptions).
  static constexpr double kUnscaledAbs = 1e3;  // |value| above this: unscaled input
  static constexpr uint64_t kMinCodes = 3;     // distinct integer values under one id that look like codes
  // Exact distinct keys kept by all counters together (about 40 bytes each).
  static constexpr size_t kExactBudget = size_t{1} << 22;

  FieldStats() = default;
  // Distinct ids counted up to `id_cap`, distinct values up to `value_cap`
  // (DistinctCounter::set_cap; caps below 2 count as 2).
  FieldStats(size_t id_cap, size_t value_cap);

  // Field `i` (0-based), created on first use; `name` is used when creating it.
  FieldStat& At(size_t i, std::string_view name = {});
  // Field `i` saw id `id` with value `value`.
  void Add(size_t i, int64_t id, double value);
  // Value-only field (Criteo I1..I13, TFRecord float lists).
  void AddValue(size_t i, double value);
  // Id-only field by hash (Criteo categories, bytes features).
  void AddIdHash(size_t i, uint64_t hash);

  const std::vector<FieldStat>& fields() const { return fields_; }

  // The rules of the warnings. Unscaled: a value of `f` has |value| above
  // `abs_limit` (a NaN range counts too).
  static bool Unscaled(const FieldStat& f, double abs_limit = kUnscaledAbs);
  // Category codes stored as values: the id of `f` never varies while its
  // value takes at least `min_codes` (and at least 2) distinct non-negative
  // integers.
  static bool LooksLikeCodes(const FieldStat& f, uint64_t min_codes = kMinCodes);

  // One sentence per suspicious field, naming it and the fix:
  //   Unscaled ("field 3: values range 0..4.7e+08: unscaled? ...: scale them (log1p...)"),
  //   else LooksLikeCodes (codes stored as values; also appended to an unscaled field's sentence).
  std::vector<std::string> Warnings() const;

  // How distinct counts are computed (for reports).
  static std::string_view Method();

 private:
  std::vector<FieldStat> fields_;
  size_t id_cap_ = SIZE_MAX, value_cap_ = SIZE_MAX;
};

}  // namespace ctrain::data
