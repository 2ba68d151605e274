// KeyIndex: the keyed embedding table's map from a 64-bit feature key to a
// row of the trainer's tables, with admission, eviction and their counters
// (docs/training.md#keyed-embeddings; the design of DeepRec's
// EmbeddingVariable and TFRA's dynamic_embedding: no vocabulary, rows made
// on first sight, frequency admission, steps-to-live / L2 eviction).
//
// Rows. The tables behind the index have capacity() rows:
//   [0, reserved)            the numeric fields' rows (ctrain's Criteo layout: numeric
//                            field i carries id i; they are not keys and never evicted)
//   default_row()            == reserved: the row of every key without a row of its own
//                            (unadmitted, or unknown at evaluation); kept at zero and never
//                            updated (the trainer drops its gradient)
//   (reserved, capacity)     keyed rows, taken on admission, returned on eviction
// Keys are any int64 (a Criteo/feature-spec hash of (field, value), a LibSVM
// or TFRecord id as written). Each key's row starts from the initializer at
// (seed, key), so a row's start never depends on which row number it got.
//
// Admission (KeyedTableOptions::min_count): a key gets a row at its
// min_count-th sighting in training (every occurrence in a batch counts);
// before that it reads the default row. Counting is exact (a counter per
// pending key) or by a counting Bloom filter (fixed memory, 8-bit saturating
// counters, 3 hashes: a count may be over-estimated, never under).
//
// Eviction (Evict, at checkpoint time): rows not seen for more than
// steps_to_live steps; rows whose embedding's L2 norm is below
// l2_weight_threshold; then, while more than max_rows rows are live, the
// least recently seen first. Between evictions the table may hold up to
// 2 x max_rows rows; a key admitted while it is full reads the default row
// and is counted (refused_full) until an eviction frees rows.
//
// Thread safety: Translate may run from many threads at once (towers,
// hogwild): keys are sharded by hash, and a batch takes each shard's lock
// once (shared for lookups, exclusive only for the keys it inserts); there is
// no global lock. Evict, Snapshot, Restore and Clear need the caller to stop
// every Translate first.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/mutex.h"
#include "ctrain/base/status.h"

namespace ctrain::train {

// The id space of a keyed run without --feature-size: keys in [0, 2^62).
inline constexpr int64_t kKeySpace = int64_t{1} << 62;

struct KeyedTableOptions {
  // "fixed": the positional table [feature_size, K] (ids are rows);
  // "keyed": this index (ids are keys).
  std::string embedding_table = "fixed";
  // Live keyed rows kept after an eviction (LRU beyond it); 0 = kDefaultMaxRows.
  int64_t max_rows = 0;
  // Sightings before a key gets a row (>= 1; 1 = on first sight).
  int32_t min_count = 1;
  // How sightings of pending keys are counted: "exact" or "bloom".
  std::string admission = "exact";
  // Counters of the counting Bloom filter (one byte each), >= 16.
  int64_t bloom_counters = int64_t{1} << 24;
  // Evict rows not seen for more than this many steps (0 = never).
  int64_t steps_to_live = 0;
  // Evict rows whose embedding has an L2 norm below this (0 = never).
  double l2_weight_threshold = 0;

  static constexpr int64_t kDefaultMaxRows = int64_t{1} << 24;
  bool keyed() const { return embedding_table == "keyed"; }
  int64_t live_bound() const { return max_rows > 0 ? max_rows : kDefaultMaxRows; }
  // InvalidArgument naming the option (--embedding-table, --min-count, ...).
  Status Validate() const;
};
nlohmann::json KeyedTableOptionsToJson(const KeyedTableOptions& o);
StatusOr<KeyedTableOptions> KeyedTableOptionsFromJson(const nlohmann::json& j);

// What the index did, since it was made (a restore carries the counts on).
struct KeyCounters {
  int64_t live_rows = 0;         // keys holding a row now
  int64_t admitted = 0;          // keys given a row
  int64_t filtered = 0;          // training lookups of keys still below min_count (they read the default row)
  int64_t refused_full = 0;      // admissions refused because the table held 2 x max_rows rows
  int64_t unknown_lookups = 0;   // evaluation/prediction lookups of keys without a row
  int64_t evicted_steps = 0;     // evicted by steps_to_live
  int64_t evicted_l2 = 0;        // evicted by l2_weight_threshold
  int64_t evicted_lru = 0;       // evicted by the max_rows bound
  int64_t pending_keys = 0;      // exact admission: keys counted but not admitted yet
  nlohmann::json ToJson() const;
  static KeyCounters FromJson(const nlohmann::json& j);
  // "live 1200, admitted 1300, filtered 40, evicted 100 (steps 100, l2 0, lru 0)".
  std::string Summary() const;
};

// The index's state in a checkpoint (KeyIndex::Snapshot / Restore).
struct KeyIndexSnapshot {
  std::vector<int64_t> keys;        // live keys, ascending
  std::vector<int64_t> rows;        // their rows, rows[i] for keys[i]
  std::vector<int64_t> last_step;   // the last training step that saw keys[i]
  std::vector<int64_t> pending_keys, pending_counts;  // exact admission: counted keys without a row
  std::vector<int64_t> bloom;       // bloom admission: the counters, 8 per int64 (little-endian bytes)
  KeyCounters counters;
  // Snapshot(changed_only): keys..last_step hold only the keys whose rows were
  // read or made since MarkClean(); evicted_keys, the keys evicted since then.
  std::vector<int64_t> evicted_keys;
};

class KeyIndex {
 public:
  // `init_row(row, key)` fills a newly taken row of every table (the
  // initializer at (seed, key), fresh optimizer slots); it runs under the
  // key's shard lock, before any other thread can read the row.
  using InitRowFn = std::function<void(int64_t row, int64_t key)>;

  // Errors: options.Validate()'s; InvalidArgument for reserved < 0.
  static StatusOr<std::unique_ptr<KeyIndex>> Create(const KeyedTableOptions& options, int64_t reserved,
                                                    InitRowFn init_row);
  ~KeyIndex();

  // Rows of the tables behind the index: reserved + 1 + 2 x max_rows.
  int64_t capacity() const { return capacity_; }
  int64_t reserved() const { return reserved_; }
  int64_t default_row() const { return reserved_; }
  const KeyedTableOptions& options() const { return options_; }

  // Replaces the keys of ids[p] for every p with p % field_size >= first_field by
  // their rows (the other positions are left as they are). train: counts
  // sightings, admits, and marks each row seen at `step`; otherwise a lookup
  // only (unknown keys read the default row, counted). REQUIRES: ids.size() is
  // a multiple of field_size.
  void Translate(std::span<int64_t> ids, int32_t field_size, int32_t first_field, bool train, int64_t step);

  // The row of `key`, or default_row().
  int64_t Find(int64_t key) const;

  // Evicts by the options' rules at global step `step`; `l2_norm(row)` gives a
  // row's embedding norm (called only with l2_weight_threshold > 0). Returns
  // the rows freed (their keys now read the default row).
  std::vector<int64_t> Evict(int64_t step, const std::function<double(int64_t row)>& l2_norm);

  KeyCounters counters() const;
  // changed_only: an incremental checkpoint's part (KeyIndexSnapshot::evicted_keys).
  KeyIndexSnapshot Snapshot(bool changed_only = false) const;
  // After a full checkpoint: no row is changed and no key evicted since.
  void MarkClean();
  // After restoring an incremental checkpoint: its changed keys and evicted keys are still changed relative to
  // the full one (the next incremental checkpoint holds them again).
  void MarkChanged(std::span<const int64_t> keys, std::span<const int64_t> evicted);
  // Rebuilds the index from a snapshot, keeping its row numbers (the caller
  // copies the rows' values). Errors: InvalidArgument for a snapshot that does
  // not fit: a row outside the keyed range, a row or key given twice, a bloom
  // filter of another size, arrays of different lengths.
  Status Restore(const KeyIndexSnapshot& s);

 public:
  struct Shard;  // key_index.cc

 private:
  KeyIndex(const KeyedTableOptions& options, int64_t reserved, InitRowFn init_row);
  // A free keyed row, or -1 when the table holds 2 x max_rows rows.
  int64_t TakeRow();
  // Bloom admission: adds one sighting of `h`, returns the estimated count.
  uint32_t BloomAdd(uint64_t h);
  uint32_t BloomCount(uint64_t h) const;

  KeyedTableOptions options_;
  int64_t reserved_, capacity_;
  InitRowFn init_row_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<int64_t> next_row_;  // rows below it were taken at least once
  Mutex free_mu_;
  std::vector<int64_t> free_rows_ CTRAIN_GUARDED_BY(free_mu_);
  std::atomic<uint8_t>* bloom_ = nullptr;  // lazily committed, options_.bloom_counters
  std::vector<int64_t> evicted_since_clean_;  // Evict's keys since MarkClean (Evict/Snapshot: no Translate runs)
  std::atomic<int64_t> admitted_{0}, filtered_{0}, refused_full_{0}, unknown_{0};
  int64_t evicted_steps_ = 0, evicted_l2_ = 0, evicted_lru_ = 0;
};

}  // namespace ctrain::train
