#include "ctrain/train/key_index.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "ctrain/base/lazy_alloc.h"
#include "ctrain/io/feature_hash.h"

namespace ctrain::train {
namespace {

constexpr int kShardBits = 6;  // 64 shards
constexpr int kShards = 1 << kShardBits;
constexpr uint32_t kEmpty = std::numeric_limits<uint32_t>::max();
constexpr int64_t kMaxRowsLimit = int64_t{1} << 30;  // rows are uint32 in the shards, 2 x max_rows + reserved < 2^32

inline uint64_t KeyHash(int64_t key) { return io::Mix64(static_cast<uint64_t>(key)); }
inline int ShardOf(uint64_t h) { return static_cast<int>(h >> (64 - kShardBits)); }
inline uint32_t StepStamp(int64_t step) {  // 31 bits (the top one is the changed mark), saturated
  return step <= 0 ? 0u : step >= int64_t{0x7fffffff} ? 0x7fffffffu : static_cast<uint32_t>(step);
}

}  // namespace

// One shard: an open-addressing table (linear probing) of key -> row with the
// row's stamp in the same 16 bytes (one cache line access per lookup), and the
// exact admission counters of its pending keys.
struct alignas(64) KeyIndex::Shard {
  struct Entry {
    int64_t key;
    uint32_t row;    // kEmpty = free slot
    uint32_t stamp;  // the last training step that read the row (31 bits) | kChanged
  };
  SharedMutex mu;
  std::vector<Entry> slots CTRAIN_GUARDED_BY(mu);
  int64_t size CTRAIN_GUARDED_BY(mu) = 0;
  std::unordered_map<int64_t, uint32_t> pending CTRAIN_GUARDED_BY(mu);

  Shard() { Reset(16); }
  void Reset(size_t n) CTRAIN_NO_THREAD_SAFETY_ANALYSIS {
    slots.assign(n, Entry{0, kEmpty, 0});
    size = 0;
  }
  // The home slot of hash `h`: its low 32 bits scaled to the table's size (Lemire's fastrange), so that the size
  // need not be a power of two.
  size_t Home(uint64_t h) const CTRAIN_NO_THREAD_SAFETY_ANALYSIS {
    return static_cast<size_t>(((h & 0xffffffffu) * slots.size()) >> 32);
  }
  // The slot holding `key`, or the empty slot where it would go.
  size_t Probe(uint64_t h, int64_t key) const CTRAIN_NO_THREAD_SAFETY_ANALYSIS {
    const size_t n = slots.size();
    size_t i = Home(h);
    while (slots[i].row != kEmpty && slots[i].key != key) i = i + 1 == n ? 0 : i + 1;
    return i;
  }
  // REQUIRES: slot i holds a key, exclusive lock held. Empties it by backward shift (Knuth's algorithm R for
  // linear probing): each later entry of the cluster whose home is not cyclically in (i, j] moves into the
  // hole, so every key stays reachable from its home without tombstones.
  void Erase(size_t i) CTRAIN_NO_THREAD_SAFETY_ANALYSIS {
    const size_t n = slots.size();
    for (size_t j = i + 1 == n ? 0 : i + 1; slots[j].row != kEmpty; j = j + 1 == n ? 0 : j + 1) {
      const size_t home = Home(KeyHash(slots[j].key));
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (stays) continue;
      slots[i] = slots[j];
      i = j;
    }
    slots[i] = Entry{0, kEmpty, 0};
    --size;
  }
  // REQUIRES: key absent, exclusive lock held. The table grows by half when 7/8 full: between 58 % and 88 %
  // full, 18 to 28 bytes per key (a doubling table at most 80 % full wanders between 20 and 40). Growing by a
  // quarter (70 to 88 %, at most 23 bytes) made a batch's lookups 35-70 % slower at 2 M keys
  // (bench/key_index_bench, docs/performance.md §13): the longer probes cost more than the 4 bytes save.
  void Insert(uint64_t h, int64_t key, uint32_t row, uint32_t stamp) CTRAIN_NO_THREAD_SAFETY_ANALYSIS {
    if ((size + 1) * 8 > static_cast<int64_t>(slots.size()) * 7) Grow();
    slots[Probe(h, key)] = Entry{key, row, stamp};
    ++size;
  }
  void Grow() CTRAIN_NO_THREAD_SAFETY_ANALYSIS { Rehash(slots.size() + slots.size() / 2); }
  // Every entry moved into a table of n slots.
  void Rehash(size_t n) CTRAIN_NO_THREAD_SAFETY_ANALYSIS {
    std::vector<Entry> old = std::move(slots);
    Reset(n);
    for (const Entry& e : old)
      if (e.row != kEmpty) Insert(KeyHash(e.key), e.key, e.row, e.stamp);
  }
  // The slots for a rebuild of `keys` keys (a restore, a shrink): 70 % full, so that the rebuild never grows and
  // the next 25 % of keys fit before the first Grow (16 bytes / 0.7 = 23 bytes per key).
  static size_t SlotsFor(int64_t keys) { return std::max<size_t>(16, static_cast<size_t>(keys) * 10 / 7 + 1); }
  // After deletions: a table under a quarter full is rebuilt at SlotsFor(size), so that a large eviction (a
  // steps-to-live rule that frees most keys) gives its memory back.
  void ShrinkIfSparse() CTRAIN_NO_THREAD_SAFETY_ANALYSIS {
    if (slots.size() <= 16 || static_cast<size_t>(size) * 4 >= slots.size()) return;
    Rehash(SlotsFor(size));
  }
};

namespace {

constexpr uint32_t kChanged = 0x80000000u;
constexpr uint32_t kStepMask = 0x7fffffffu;

// A training read at `stamp`: the entry's last step and changed mark. Concurrent
// readers of one shard (shared lock) may stamp the same entry: relaxed atomics.
inline void Touch(KeyIndex::Shard::Entry& e, uint32_t stamp) {
  std::atomic_ref<uint32_t> a(e.stamp);
  const uint32_t v = stamp | kChanged;
  if (a.load(std::memory_order_relaxed) != v) a.store(v, std::memory_order_relaxed);
}

}  // namespace

Status KeyedTableOptions::Validate() const {
  if (embedding_table != "fixed" && embedding_table != "keyed")
    return InvalidArgumentError("--embedding-table: expected fixed or keyed, got '" + embedding_table + "'");
  if (max_rows < 0 || max_rows > kMaxRowsLimit)
    return InvalidArgumentError("--max-rows: " + std::to_string(max_rows) + " not in [0, " +
                                std::to_string(kMaxRowsLimit) + "] (0 = " + std::to_string(kDefaultMaxRows) + ")");
  if (min_count < 1) return InvalidArgumentError("--min-count: " + std::to_string(min_count) + " must be >= 1");
  if (admission != "exact" && admission != "bloom")
    return InvalidArgumentError("--admission: expected exact or bloom, got '" + admission + "'");
  if (admission == "bloom" && min_count > 255)
    return InvalidArgumentError("--min-count " + std::to_string(min_count) +
                                ": the counting Bloom filter counts to 255 (use --admission exact)");
  if (bloom_counters < 16 || bloom_counters > (int64_t{1} << 36))
    return InvalidArgumentError("--bloom-counters: " + std::to_string(bloom_counters) + " not in [16, 2^36]");
  if (steps_to_live < 0)
    return InvalidArgumentError("--steps-to-live: " + std::to_string(steps_to_live) + " must be >= 0 (0 = never)");
  if (!(l2_weight_threshold >= 0))
    return InvalidArgumentError("--l2-weight-threshold: must be >= 0 (0 = never)");
  // Every option is honoured or refused by name: the table's rules do nothing on a positional table, the
  // filter's size nothing without the filter, the filter nothing without a count to reach.
  const KeyedTableOptions d;
  auto refuse = [](const std::string& flag, const std::string& why) {
    return InvalidArgumentError(flag + " " + why);
  };
  if (!keyed()) {
    const std::string why = "applies to --embedding-table keyed only (this run's table is fixed: its rows are the ids)";
    if (max_rows != d.max_rows && max_rows != kDefaultMaxRows) return refuse("--max-rows", why);
    if (min_count != d.min_count) return refuse("--min-count", why);
    if (admission != d.admission) return refuse("--admission", why);
    if (bloom_counters != d.bloom_counters) return refuse("--bloom-counters", why);
    if (steps_to_live != d.steps_to_live) return refuse("--steps-to-live", why);
    if (l2_weight_threshold != d.l2_weight_threshold) return refuse("--l2-weight-threshold", why);
  }
  if (admission != "bloom" && bloom_counters != d.bloom_counters)
    return refuse("--bloom-counters", "sizes the filter of --admission bloom (this run counts with --admission " +
                                          admission + ")");
  if (admission == "bloom" && min_count <= 1)
    return refuse("--admission bloom", "counts sightings for a --min-count above 1 (this run admits every key on "
                                       "first sight)");
  return Status::OK();
}

nlohmann::json KeyedTableOptionsToJson(const KeyedTableOptions& o) {
  return {{"embedding_table", o.embedding_table}, {"max_rows", o.keyed() ? o.live_bound() : o.max_rows},
          {"min_count", o.min_count},             {"admission", o.admission},
          {"bloom_counters", o.bloom_counters},   {"steps_to_live", o.steps_to_live},
          {"l2_weight_threshold", o.l2_weight_threshold}};
}

StatusOr<KeyedTableOptions> KeyedTableOptionsFromJson(const nlohmann::json& j) {
  KeyedTableOptions o;
  if (j.is_null()) return o;
  if (!j.is_object()) return InvalidArgumentError("embedding table: expected an object, got " + j.dump());
  try {
    o.embedding_table = j.value("embedding_table", o.embedding_table);
    o.max_rows = j.value("max_rows", o.max_rows);
    o.min_count = j.value("min_count", o.min_count);
    o.admission = j.value("admission", o.admission);
    o.bloom_counters = j.value("bloom_counters", o.bloom_counters);
    o.steps_to_live = j.value("steps_to_live", o.steps_to_live);
    o.l2_weight_threshold = j.value("l2_weight_threshold", o.l2_weight_threshold);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("embedding table: ") + e.what());
  }
  CTRAIN_RETURN_IF_ERROR(o.Validate());
  return o;
}

nlohmann::json KeyCounters::ToJson() const {
  return {{"live_rows", live_rows},         {"admitted", admitted},         {"filtered", filtered},
          {"refused_full", refused_full},   {"unknown_lookups", unknown_lookups},
          {"evicted_steps", evicted_steps}, {"evicted_l2", evicted_l2},     {"evicted_lru", evicted_lru},
          {"pending_keys", pending_keys}};
}

KeyCounters KeyCounters::FromJson(const nlohmann::json& j) {
  KeyCounters c;
  if (!j.is_object()) return c;
  c.live_rows = j.value("live_rows", int64_t{0});
  c.admitted = j.value("admitted", int64_t{0});
  c.filtered = j.value("filtered", int64_t{0});
  c.refused_full = j.value("refused_full", int64_t{0});
  c.unknown_lookups = j.value("unknown_lookups", int64_t{0});
  c.evicted_steps = j.value("evicted_steps", int64_t{0});
  c.evicted_l2 = j.value("evicted_l2", int64_t{0});
  c.evicted_lru = j.value("evicted_lru", int64_t{0});
  c.pending_keys = j.value("pending_keys", int64_t{0});
  return c;
}

std::string KeyCounters::Summary() const {
  std::string s = "live " + std::to_string(live_rows) + ", admitted " + std::to_string(admitted) + ", filtered " +
                  std::to_string(filtered) + ", evicted " +
                  std::to_string(evicted_steps + evicted_l2 + evicted_lru) + " (steps " +
                  std::to_string(evicted_steps) + ", l2 " + std::to_string(evicted_l2) + ", lru " +
                  std::to_string(evicted_lru) + ")";
  if (refused_full > 0) s += ", refused (table full) " + std::to_string(refused_full);
  if (pending_keys > 0) s += ", pending " + std::to_string(pending_keys);
  if (unknown_lookups > 0) s += ", unknown at evaluation " + std::to_string(unknown_lookups);
  return s;
}

StatusOr<std::unique_ptr<KeyIndex>> KeyIndex::Create(const KeyedTableOptions& options, int64_t reserved,
                                                     InitRowFn init_row) {
  CTRAIN_RETURN_IF_ERROR(options.Validate());
  if (reserved < 0) return InvalidArgumentError("keyed table: reserved rows " + std::to_string(reserved) + " < 0");
  std::unique_ptr<KeyIndex> k(new KeyIndex(options, reserved, std::move(init_row)));
  if (options.admission == "bloom" && options.min_count > 1) {
    CTRAIN_ASSIGN_OR_RETURN(void* b, AllocateLazily(static_cast<size_t>(options.bloom_counters),
                                                    "keyed table: counting Bloom filter"));
    k->bloom_ = static_cast<std::atomic<uint8_t>*>(b);
  }
  return k;
}

KeyIndex::KeyIndex(const KeyedTableOptions& options, int64_t reserved, InitRowFn init_row)
    : options_(options),
      reserved_(reserved),
      capacity_(reserved + 1 + 2 * options.live_bound()),
      init_row_(std::move(init_row)),
      shards_(new Shard[kShards]),
      next_row_(reserved + 1) {}

KeyIndex::~KeyIndex() {
  if (bloom_ != nullptr) FreeLazily(bloom_, static_cast<size_t>(options_.bloom_counters));
}

int64_t KeyIndex::TakeRow() {
  {
    MutexLock l(free_mu_);
    if (!free_rows_.empty()) {
      const int64_t r = free_rows_.back();
      free_rows_.pop_back();
      return r;
    }
  }
  int64_t r = next_row_.load(std::memory_order_relaxed);
  while (r < capacity_ && !next_row_.compare_exchange_weak(r, r + 1, std::memory_order_relaxed)) {
  }
  return r < capacity_ ? r : -1;
}

uint32_t KeyIndex::BloomAdd(uint64_t h) {
  uint32_t lowest = 255;
  for (int j = 0; j < 3; ++j) {
    const uint64_t x = io::Mix64(h + static_cast<uint64_t>(j) * 0x9E3779B97F4A7C15ULL);
    std::atomic<uint8_t>& c = bloom_[x % static_cast<uint64_t>(options_.bloom_counters)];
    uint8_t v = c.load(std::memory_order_relaxed);
    while (v < 255 && !c.compare_exchange_weak(v, static_cast<uint8_t>(v + 1), std::memory_order_relaxed)) {
    }
    lowest = std::min<uint32_t>(lowest, v < 255 ? v + 1u : 255u);
  }
  return lowest;
}

uint32_t KeyIndex::BloomCount(uint64_t h) const {
  uint32_t lowest = 255;
  for (int j = 0; j < 3; ++j) {
    const uint64_t x = io::Mix64(h + static_cast<uint64_t>(j) * 0x9E3779B97F4A7C15ULL);
    lowest = std::min<uint32_t>(lowest, bloom_[x % static_cast<uint64_t>(options_.bloom_counters)].load(
                                            std::memory_order_relaxed));
  }
  return lowest;
}

void KeyIndex::Translate(std::span<int64_t> ids, int32_t field_size, int32_t first_field, bool train, int64_t step) {
  // Group the keyed positions by shard (a counting sort), so each shard is
  // locked once per call.
  thread_local std::vector<uint32_t> pos, order, misses;
  thread_local std::vector<uint64_t> hash;
  pos.clear();
  hash.clear();
  int64_t count[kShards + 1] = {};
  const size_t n = ids.size();
  for (size_t p = 0; p < n; ++p) {
    if (static_cast<int32_t>(p % static_cast<size_t>(field_size)) < first_field) continue;
    const uint64_t h = KeyHash(ids[p]);
    pos.push_back(static_cast<uint32_t>(p));
    hash.push_back(h);
    ++count[ShardOf(h) + 1];
  }
  for (int s = 0; s < kShards; ++s) count[s + 1] += count[s];
  order.resize(pos.size());
  {
    int64_t at[kShards];
    std::copy(count, count + kShards, at);
    for (size_t i = 0; i < pos.size(); ++i) order[at[ShardOf(hash[i])]++] = static_cast<uint32_t>(i);
  }
  const uint32_t stamp = StepStamp(step);
  const int64_t dflt = default_row();
  for (int s = 0; s < kShards; ++s) {
    if (count[s] == count[s + 1]) continue;
    Shard& sh = shards_[s];
    misses.clear();
    {
      ReaderLock l(sh.mu);
      for (int64_t o = count[s]; o < count[s + 1]; ++o) {
        const uint32_t i = order[o];
        int64_t& id = ids[pos[i]];
        Shard::Entry& e = sh.slots[sh.Probe(hash[i], id)];
        if (e.row == kEmpty) {
          misses.push_back(i);
          continue;
        }
        id = e.row;
        if (train) Touch(e, stamp);
      }
    }
    if (misses.empty()) continue;
    if (!train) {
      for (uint32_t i : misses) ids[pos[i]] = dflt;
      unknown_.fetch_add(static_cast<int64_t>(misses.size()), std::memory_order_relaxed);
      continue;
    }
    WriterLock l(sh.mu);
    for (uint32_t i : misses) {
      int64_t& id = ids[pos[i]];
      const int64_t key = id;
      size_t slot = sh.Probe(hash[i], key);
      if (sh.slots[slot].row == kEmpty) {  // still absent: a sighting
        bool admit = options_.min_count <= 1;
        if (!admit && bloom_ != nullptr) {
          admit = BloomAdd(hash[i]) >= static_cast<uint32_t>(options_.min_count);
        } else if (!admit) {
          uint32_t& c = sh.pending[key];
          if (++c >= static_cast<uint32_t>(options_.min_count)) {
            sh.pending.erase(key);
            admit = true;
          }
        }
        const int64_t row = admit ? TakeRow() : -1;
        if (row < 0) {
          (admit ? refused_full_ : filtered_).fetch_add(1, std::memory_order_relaxed);
          if (admit && bloom_ == nullptr && options_.min_count > 1) sh.pending[key] = options_.min_count - 1;
          id = dflt;
          continue;
        }
        init_row_(row, key);
        sh.Insert(hash[i], key, static_cast<uint32_t>(row), stamp | kChanged);
        admitted_.fetch_add(1, std::memory_order_relaxed);
        slot = sh.Probe(hash[i], key);
      }
      Shard::Entry& e = sh.slots[slot];
      id = e.row;
      Touch(e, stamp);
    }
  }
}

int64_t KeyIndex::Find(int64_t key) const {
  const uint64_t h = KeyHash(key);
  Shard& sh = shards_[ShardOf(h)];
  ReaderLock l(sh.mu);
  const Shard::Entry& e = sh.slots[sh.Probe(h, key)];
  return e.row == kEmpty ? default_row() : static_cast<int64_t>(e.row);
}

KeyCounters KeyIndex::counters() const {
  KeyCounters c;
  for (int s = 0; s < kShards; ++s) {
    ReaderLock l(shards_[s].mu);
    c.live_rows += shards_[s].size;
    c.pending_keys += static_cast<int64_t>(shards_[s].pending.size());
  }
  c.admitted = admitted_.load();
  c.filtered = filtered_.load();
  c.refused_full = refused_full_.load();
  c.unknown_lookups = unknown_.load();
  c.evicted_steps = evicted_steps_;
  c.evicted_l2 = evicted_l2_;
  c.evicted_lru = evicted_lru_;
  return c;
}

std::vector<int64_t> KeyIndex::Evict(int64_t step, const std::function<double(int64_t row)>& l2_norm) {
  if (options_.steps_to_live == 0 && options_.l2_weight_threshold == 0 && counters().live_rows <= options_.live_bound())
    return {};  // no rule can evict: no pass over the rows
  struct Live {
    int64_t key;
    uint32_t row, last, stamp;
  };
  std::vector<Live> live;
  for (int s = 0; s < kShards; ++s) {
    ReaderLock l(shards_[s].mu);
    for (const Shard::Entry& e : shards_[s].slots)
      if (e.row != kEmpty) live.push_back({e.key, e.row, e.stamp & kStepMask, e.stamp});
  }
  // No sort of the live keys: the rules below do not depend on their order (LRU's comparator is a total order),
  // and the evicted ones are put in key order at the end.
  std::vector<char> evict(live.size(), 0);
  int64_t kept = static_cast<int64_t>(live.size());
  for (size_t i = 0; i < live.size(); ++i) {
    if (options_.steps_to_live > 0 && step - static_cast<int64_t>(live[i].last) > options_.steps_to_live) {
      evict[i] = 1;
      ++evicted_steps_;
      --kept;
    } else if (options_.l2_weight_threshold > 0 && l2_norm(live[i].row) < options_.l2_weight_threshold) {
      evict[i] = 1;
      ++evicted_l2_;
      --kept;
    }
  }
  if (kept > options_.live_bound()) {  // least recently seen first, then by key
    std::vector<size_t> idx;
    for (size_t i = 0; i < live.size(); ++i)
      if (!evict[i]) idx.push_back(i);
    const size_t drop = static_cast<size_t>(kept - options_.live_bound());
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(drop), idx.end(),
                      [&](size_t a, size_t b) {
                        return live[a].last != live[b].last ? live[a].last < live[b].last : live[a].key < live[b].key;
                      });
    for (size_t j = 0; j < drop; ++j) evict[idx[j]] = 1;
    evicted_lru_ += static_cast<int64_t>(drop);
  }
  std::vector<std::pair<int64_t, int64_t>> out;  // (key, row) of the evicted, in key order
  for (size_t i = 0; i < live.size(); ++i)
    if (evict[i]) out.emplace_back(live[i].key, live[i].row);
  std::sort(out.begin(), out.end());
  std::vector<int64_t> freed;
  freed.reserve(out.size());
  for (const auto& [key, row] : out) {
    freed.push_back(row);
    evicted_since_clean_.push_back(key);
  }
  if (freed.empty()) return freed;
  // Delete the evicted keys in place (backward shift), shard by shard: the cost follows the evicted keys, not
  // the live ones.
  std::vector<std::vector<int64_t>> gone(kShards);
  for (const auto& [key, row] : out) gone[ShardOf(KeyHash(key))].push_back(key);
  for (int s = 0; s < kShards; ++s) {
    if (gone[s].empty()) continue;
    WriterLock l(shards_[s].mu);
    for (int64_t key : gone[s]) shards_[s].Erase(shards_[s].Probe(KeyHash(key), key));
    shards_[s].ShrinkIfSparse();
  }
  std::vector<int64_t> sorted = freed;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());  // the lowest row is taken first
  MutexLock l(free_mu_);
  free_rows_.insert(free_rows_.end(), sorted.begin(), sorted.end());
  std::sort(free_rows_.begin(), free_rows_.end(), std::greater<>());
  return freed;
}

void KeyIndex::MarkClean() {
  for (int s = 0; s < kShards; ++s) {
    WriterLock l(shards_[s].mu);
    for (Shard::Entry& e : shards_[s].slots) e.stamp &= kStepMask;
  }
  evicted_since_clean_.clear();
}

void KeyIndex::MarkChanged(std::span<const int64_t> keys, std::span<const int64_t> evicted) {
  for (int64_t key : keys) {
    const uint64_t h = KeyHash(key);
    Shard& sh = shards_[ShardOf(h)];
    WriterLock l(sh.mu);
    Shard::Entry& e = sh.slots[sh.Probe(h, key)];
    if (e.row != kEmpty) e.stamp |= kChanged;
  }
  evicted_since_clean_.assign(evicted.begin(), evicted.end());
}

KeyIndexSnapshot KeyIndex::Snapshot(bool changed_only) const {
  KeyIndexSnapshot out;
  std::vector<Shard::Entry> live;
  std::vector<std::pair<int64_t, uint32_t>> pending;
  live.reserve(static_cast<size_t>(counters().live_rows));  // exact sizes: a checkpoint's transient memory
  for (int s = 0; s < kShards; ++s) {
    ReaderLock l(shards_[s].mu);
    for (const Shard::Entry& e : shards_[s].slots)
      if (e.row != kEmpty && (!changed_only || (e.stamp & kChanged) != 0)) live.push_back(e);
    pending.insert(pending.end(), shards_[s].pending.begin(), shards_[s].pending.end());
  }
  std::sort(live.begin(), live.end(), [](const Shard::Entry& a, const Shard::Entry& b) { return a.key < b.key; });
  std::sort(pending.begin(), pending.end());
  out.keys.reserve(live.size());
  out.rows.reserve(live.size());
  out.last_step.reserve(live.size());
  for (const Shard::Entry& e : live) {
    out.keys.push_back(e.key);
    out.rows.push_back(e.row);
    out.last_step.push_back(e.stamp & kStepMask);
  }
  for (const auto& [key, c] : pending) {
    out.pending_keys.push_back(key);
    out.pending_counts.push_back(c);
  }
  if (bloom_ != nullptr) {
    out.bloom.assign(static_cast<size_t>((options_.bloom_counters + 7) / 8), 0);
    for (int64_t i = 0; i < options_.bloom_counters; ++i)
      out.bloom[i / 8] |= static_cast<int64_t>(static_cast<uint64_t>(bloom_[i].load(std::memory_order_relaxed))
                                               << (8 * (i % 8)));
  }
  out.counters = counters();
  if (changed_only) {
    out.evicted_keys = evicted_since_clean_;
    std::sort(out.evicted_keys.begin(), out.evicted_keys.end());
    out.evicted_keys.erase(std::unique(out.evicted_keys.begin(), out.evicted_keys.end()), out.evicted_keys.end());
  }
  return out;
}

Status KeyIndex::Restore(const KeyIndexSnapshot& s) {
  const size_t n = s.keys.size();
  if (s.rows.size() != n || s.last_step.size() != n)
    return InvalidArgumentError("keyed table: " + std::to_string(n) + " keys but " + std::to_string(s.rows.size()) +
                                " rows and " + std::to_string(s.last_step.size()) + " last-seen steps");
  if (s.pending_keys.size() != s.pending_counts.size())
    return InvalidArgumentError("keyed table: " + std::to_string(s.pending_keys.size()) + " pending keys but " +
                                std::to_string(s.pending_counts.size()) + " counts");
  const size_t bloom_words = bloom_ != nullptr ? static_cast<size_t>((options_.bloom_counters + 7) / 8) : 0;
  if (s.bloom.size() != bloom_words)
    return InvalidArgumentError("keyed table: the checkpoint's Bloom filter has " +
                                std::to_string(s.bloom.size() * 8) + " counters, this run's " +
                                std::to_string(bloom_words * 8) + " (use the same --admission and --bloom-counters)");
  std::vector<char> used(static_cast<size_t>(capacity_), 0);
  int64_t top = reserved_ + 1;
  for (size_t i = 0; i < n; ++i) {
    const int64_t r = s.rows[i];
    if (r <= reserved_ || r >= capacity_)
      return InvalidArgumentError("keyed table: key " + std::to_string(s.keys[i]) + " has row " + std::to_string(r) +
                                  ", outside the keyed rows [" + std::to_string(reserved_ + 1) + ", " +
                                  std::to_string(capacity_) + ") (a smaller --max-rows than the checkpoint's?)");
    if (used[r]) return InvalidArgumentError("keyed table: row " + std::to_string(r) + " is given twice");
    if (i > 0 && s.keys[i] <= s.keys[i - 1])
      return InvalidArgumentError("keyed table: keys not strictly increasing at index " + std::to_string(i));
    used[r] = 1;
    top = std::max(top, r + 1);
  }
  std::vector<int64_t> per_shard(kShards, 0);  // each shard presized for its keys: no rehash while restoring
  for (size_t i = 0; i < n; ++i) ++per_shard[ShardOf(KeyHash(s.keys[i]))];
  for (int sh = 0; sh < kShards; ++sh) {
    WriterLock l(shards_[sh].mu);
    shards_[sh].Reset(Shard::SlotsFor(per_shard[sh]));
    shards_[sh].pending.clear();
  }
  evicted_since_clean_.clear();
  for (size_t i = 0; i < n; ++i) {
    const uint64_t h = KeyHash(s.keys[i]);
    WriterLock l(shards_[ShardOf(h)].mu);
    shards_[ShardOf(h)].Insert(h, s.keys[i], static_cast<uint32_t>(s.rows[i]), StepStamp(s.last_step[i]));
  }
  for (size_t i = 0; i < s.pending_keys.size(); ++i) {
    const uint64_t h = KeyHash(s.pending_keys[i]);
    WriterLock l(shards_[ShardOf(h)].mu);
    shards_[ShardOf(h)].pending[s.pending_keys[i]] = static_cast<uint32_t>(s.pending_counts[i]);
  }
  for (size_t i = 0; i < bloom_words * 8 && static_cast<int64_t>(i) < options_.bloom_counters; ++i)
    bloom_[i].store(static_cast<uint8_t>(static_cast<uint64_t>(s.bloom[i / 8]) >> (8 * (i % 8))),
                    std::memory_order_relaxed);
  next_row_.store(top);
  {
    MutexLock l(free_mu_);
    free_rows_.clear();
    for (int64_t r = top - 1; r > reserved_; --r)
      if (!used[r]) free_rows_.push_back(r);
    std::sort(free_rows_.begin(), free_rows_.end(), std::greater<>());
  }
  admitted_ = s.counters.admitted;
  filtered_ = s.counters.filtered;
  refused_full_ = s.counters.refused_full;
  unknown_ = s.counters.unknown_lookups;
  evicted_steps_ = s.counters.evicted_steps;
  evicted_l2_ = s.counters.evicted_l2;
  evicted_lru_ = s.counters.evicted_lru;
  return Status::OK();
}

}  // namespace ctrain::train
