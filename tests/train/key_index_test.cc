// KeyIndex (train/key_index.h): key -> row translation, admission (exact and
// counting Bloom filter), eviction (steps-to-live, L2, LRU bound), the
// snapshot round trip, and concurrent translation (run under TSan in CI).
#include "ctrain/train/key_index.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace ctrain::train {
namespace {

struct Index {
  std::unique_ptr<KeyIndex> index;
  std::mutex mu;                     // InitRow runs under one shard's lock: calls for other shards run at once
  std::map<int64_t, int64_t> inits;  // row -> key of every InitRow call
};

std::unique_ptr<Index> Make(KeyedTableOptions o, int64_t reserved = 0) {
  auto out = std::make_unique<Index>();
  o.embedding_table = "keyed";
  Index* raw = out.get();
  auto k = KeyIndex::Create(o, reserved, [raw](int64_t row, int64_t key) {
    std::lock_guard<std::mutex> l(raw->mu);
    raw->inits[row] = key;
  });
  EXPECT_TRUE(k.ok()) << k.status().ToString();
  out->index = std::move(k).value();
  return out;
}

TEST(KeyIndex, GivesEachKeyItsOwnRowOnFirstSightAndKeepsIt) {
  auto ix = Make({}, /*reserved=*/2);
  EXPECT_EQ(ix->index->default_row(), 2);
  // Two fields of numeric ids (left as they are), then two keyed fields.
  std::vector<int64_t> ids = {0, 1, 1000000007, -5, 0, 1, -5, int64_t{1} << 61};
  ix->index->Translate(ids, /*field_size=*/4, /*first_field=*/2, /*train=*/true, /*step=*/1);
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(ids[1], 1);
  EXPECT_EQ(ids[4], 0);
  EXPECT_EQ(ids[5], 1);
  EXPECT_EQ(ids[3], ids[6]);  // the same key, the same row
  std::set<int64_t> rows = {ids[2], ids[3], ids[7]};
  EXPECT_EQ(rows.size(), 3u);
  for (int64_t r : rows) EXPECT_GT(r, 2);
  EXPECT_EQ(ix->inits.size(), 3u);
  EXPECT_EQ(ix->inits[ids[2]], 1000000007);
  EXPECT_EQ(ix->inits[ids[3]], -5);
  EXPECT_EQ(ix->index->Find(-5), ids[3]);
  EXPECT_EQ(ix->index->Find(12345), 2);  // unknown: the default row
  const KeyCounters c = ix->index->counters();
  EXPECT_EQ(c.live_rows, 3);
  EXPECT_EQ(c.admitted, 3);
  EXPECT_EQ(c.filtered, 0);
  // Evaluation: known keys translate, unknown ones read the default row and are counted, nothing is admitted.
  std::vector<int64_t> eval = {0, 1, -5, 77};
  ix->index->Translate(eval, 4, 2, /*train=*/false, 1);
  EXPECT_EQ(eval[2], ids[3]);
  EXPECT_EQ(eval[3], 2);
  EXPECT_EQ(ix->index->counters().unknown_lookups, 1);
  EXPECT_EQ(ix->index->counters().live_rows, 3);
}

TEST(KeyIndex, ExactAdmissionCountsEverySighting) {
  KeyedTableOptions o;
  o.min_count = 3;
  auto ix = Make(o);
  std::vector<int64_t> a = {7, 7, 8};  // one field: key 7 seen twice, 8 once
  ix->index->Translate(a, 1, 0, true, 1);
  EXPECT_EQ(a, (std::vector<int64_t>{0, 0, 0}));  // all below min_count: the default row 0
  std::vector<int64_t> b = {7, 8, 7};
  ix->index->Translate(b, 1, 0, true, 2);
  EXPECT_EQ(b[1], 0);      // 8: second sighting
  EXPECT_GT(b[0], 0);      // 7: third sighting admits it
  EXPECT_EQ(b[2], b[0]);   // and its fourth reads the row
  const KeyCounters c = ix->index->counters();
  EXPECT_EQ(c.admitted, 1);
  EXPECT_EQ(c.filtered, 4);  // 7, 7, 8, 8
  EXPECT_EQ(c.pending_keys, 1);
}

TEST(KeyIndex, BloomAdmissionNeverAdmitsLaterThanExact) {
  KeyedTableOptions exact, bloom;
  exact.min_count = bloom.min_count = 4;
  bloom.admission = "bloom";
  bloom.bloom_counters = 1024;  // small: collisions make counts over-estimated
  auto e = Make(exact), b = Make(bloom);
  for (int64_t step = 1; step <= 6; ++step) {
    std::vector<int64_t> ids;
    for (int64_t k = 0; k < 500; ++k)
      if (k % 6 < step) ids.push_back(k * 7919);
    std::vector<int64_t> ids2 = ids;
    e->index->Translate(ids, 1, 0, true, step);
    b->index->Translate(ids2, 1, 0, true, step);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] != 0) EXPECT_NE(ids2[i], 0) << "exact admitted a key the Bloom filter did not";
    }
  }
  EXPECT_GE(b->index->counters().admitted, e->index->counters().admitted);
  EXPECT_GT(e->index->counters().admitted, 0);
}

TEST(KeyIndex, EvictsByStepsToLiveByL2AndThenLeastRecentlySeen) {
  KeyedTableOptions o;
  o.steps_to_live = 10;
  o.l2_weight_threshold = 0.5;
  o.max_rows = 3;
  auto ix = Make(o);
  auto seen = [&](std::vector<int64_t> keys, int64_t step) {
    ix->index->Translate(keys, 1, 0, true, step);
    return keys;
  };
  const int64_t r1 = seen({1}, 1)[0];     // last seen at step 1: stale at step 20
  const int64_t r2 = seen({2}, 15)[0];    // small norm
  seen({3, 4, 5, 6}, 16);
  seen({4}, 17);
  seen({5, 6}, 18);
  const std::vector<int64_t> freed = ix->index->Evict(20, [&](int64_t row) { return row == r2 ? 0.1 : 1.0; });
  // 1 by steps, 2 by L2, then 4 keys left for 3 rows: key 3 (seen at 16) is the least recent.
  EXPECT_EQ(freed.size(), 3u);
  const KeyCounters c = ix->index->counters();
  EXPECT_EQ(c.evicted_steps, 1);
  EXPECT_EQ(c.evicted_l2, 1);
  EXPECT_EQ(c.evicted_lru, 1);
  EXPECT_EQ(c.live_rows, 3);
  EXPECT_EQ(ix->index->Find(1), ix->index->default_row());
  EXPECT_EQ(ix->index->Find(3), ix->index->default_row());
  EXPECT_NE(ix->index->Find(4), ix->index->default_row());
  // A freed row is taken again (the lowest first) and re-initialised for its new key.
  const int64_t r9 = seen({9}, 21)[0];
  EXPECT_EQ(r9, std::min(r1, r2));
  EXPECT_EQ(ix->inits[r9], 9);
}

// Eviction deletes in place (backward shift): after rounds of random admissions and evictions, with clusters
// that wrap around the shards' ends, every live key still finds its own row, every evicted key reads the default
// row, and a pass that evicts most keys shrinks the shards without losing one.
TEST(KeyIndex, InPlaceEvictionKeepsEveryLiveKeyReachable) {
  KeyedTableOptions o;
  o.steps_to_live = 2;
  o.max_rows = 40000;
  auto ix = Make(o);
  std::mt19937_64 rng(11);
  std::map<int64_t, int64_t> row_of;   // live key -> row
  std::map<int64_t, int64_t> last_of;  // live key -> last step it was seen
  for (int64_t step = 1; step <= 12; ++step) {
    std::vector<int64_t> keys(step == 1 ? 30000 : 3000);
    for (int64_t& k : keys) k = static_cast<int64_t>(rng() >> 40);  // 2^24 keys: repeats and neighbours
    if (step > 1)  // some known keys again
      for (int i = 0; i < 2000 && !row_of.empty(); ++i) {
        auto it = row_of.lower_bound(static_cast<int64_t>(rng() >> 40));
        if (it != row_of.end()) keys.push_back(it->first);
      }
    std::vector<int64_t> ids = keys;
    ix->index->Translate(ids, 1, 0, true, step);
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_NE(ids[i], ix->index->default_row());
      auto [it, fresh] = row_of.emplace(keys[i], ids[i]);
      ASSERT_EQ(it->second, ids[i]) << "key " << keys[i] << " moved rows";
      last_of[keys[i]] = step;
    }
    if (step % 3 == 0) {
      const std::vector<int64_t> freed = ix->index->Evict(step, nullptr);
      size_t expect = 0;
      for (auto it = last_of.begin(); it != last_of.end();) {
        if (step - it->second > o.steps_to_live) {
          ++expect;
          row_of.erase(it->first);
          it = last_of.erase(it);
        } else {
          ++it;
        }
      }
      ASSERT_EQ(freed.size(), expect) << "step " << step;
    }
    ASSERT_EQ(ix->index->counters().live_rows, static_cast<int64_t>(row_of.size()));
    for (const auto& [key, row] : row_of) ASSERT_EQ(ix->index->Find(key), row) << "key " << key;
  }
  // Far past every key's last step: everything goes, and the shards shrink back.
  ASSERT_EQ(ix->index->Evict(100, nullptr).size(), row_of.size());
  EXPECT_EQ(ix->index->counters().live_rows, 0);
  for (const auto& [key, row] : row_of) ASSERT_EQ(ix->index->Find(key), ix->index->default_row());
  std::vector<int64_t> again = {row_of.begin()->first};
  ix->index->Translate(again, 1, 0, true, 101);
  EXPECT_NE(again[0], ix->index->default_row());
  EXPECT_EQ(ix->index->Find(row_of.begin()->first), again[0]);
}

TEST(KeyIndex, RefusesAdmissionWhenFullAndCountsIt) {
  KeyedTableOptions o;
  o.max_rows = 2;  // room for 2 x 2 rows between evictions
  auto ix = Make(o);
  std::vector<int64_t> ids = {10, 11, 12, 13, 14, 15};
  ix->index->Translate(ids, 1, 0, true, 1);
  EXPECT_EQ(ix->index->counters().live_rows, 4);
  EXPECT_EQ(ix->index->counters().refused_full, 2);
  std::vector<int64_t> refused;  // which two depends on the shards' order
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == ix->index->default_row()) refused.push_back(10 + static_cast<int64_t>(i));
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(ix->index->Find(refused[0]), ix->index->default_row());
  ix->index->Evict(1, nullptr);
  EXPECT_EQ(ix->index->counters().live_rows, 2);
  std::vector<int64_t> again = {refused[0]};
  ix->index->Translate(again, 1, 0, true, 2);
  EXPECT_NE(again[0], ix->index->default_row());
}

TEST(KeyIndex, SnapshotRestoresRowsPendingCountsAndCounters) {
  KeyedTableOptions o;
  o.min_count = 2;
  auto a = Make(o, 1);
  std::vector<int64_t> ids = {0, 6, 0, 7, 0, 8, 0, 8};
  a->index->Translate(ids, 2, 1, true, 3);  // keyed field 1: 6, 7, 8, 8 (8 admitted)
  const KeyIndexSnapshot s = a->index->Snapshot();
  EXPECT_EQ(s.keys, (std::vector<int64_t>{8}));
  EXPECT_EQ(s.pending_keys, (std::vector<int64_t>{6, 7}));
  EXPECT_EQ(s.pending_counts, (std::vector<int64_t>{1, 1}));
  auto b = Make(o, 1);
  ASSERT_TRUE(b->index->Restore(s).ok());
  EXPECT_EQ(b->index->Find(8), a->index->Find(8));
  EXPECT_EQ(b->index->counters().ToJson(), a->index->counters().ToJson());
  std::vector<int64_t> more = {0, 6};  // 6's second sighting: admitted after the restore as before it
  b->index->Translate(more, 2, 1, true, 4);
  EXPECT_NE(more[1], b->index->default_row());
  // A snapshot that does not fit is refused by name.
  KeyIndexSnapshot bad = s;
  bad.rows[0] = 0;  // a reserved row
  const Status st = b->index->Restore(bad);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("outside the keyed rows"), std::string::npos) << st.ToString();
}

TEST(KeyIndex, ValidatesItsOptionsByName) {
  KeyedTableOptions o;
  o.embedding_table = "hashed";
  EXPECT_NE(o.Validate().message().find("--embedding-table"), std::string::npos);
  o = {};
  o.min_count = 0;
  EXPECT_NE(o.Validate().message().find("--min-count"), std::string::npos);
  o = {};
  o.admission = "bloom";
  o.min_count = 300;
  EXPECT_NE(o.Validate().message().find("255"), std::string::npos);
  o = {};
  o.steps_to_live = -1;
  EXPECT_NE(o.Validate().message().find("--steps-to-live"), std::string::npos);
  o = {};
  o.max_rows = int64_t{1} << 40;
  EXPECT_NE(o.Validate().message().find("--max-rows"), std::string::npos);
  o = {};  // a positional table refuses the keyed table's rules by name
  o.steps_to_live = 9;
  EXPECT_NE(o.Validate().message().find("--steps-to-live applies to --embedding-table keyed only"), std::string::npos);
  o = {};
  o.embedding_table = "keyed";
  o.bloom_counters = 4096;  // without the filter
  EXPECT_NE(o.Validate().message().find("--bloom-counters sizes the filter of --admission bloom"), std::string::npos);
  o.admission = "bloom";  // the filter without a count to reach
  EXPECT_NE(o.Validate().message().find("--admission bloom counts sightings for a --min-count above 1"),
            std::string::npos);
  o = {};
  o.embedding_table = "keyed";
  o.min_count = 5;
  o.steps_to_live = 9;
  auto back = KeyedTableOptionsFromJson(KeyedTableOptionsToJson(o));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(KeyedTableOptionsToJson(*back), KeyedTableOptionsToJson(o));
}

TEST(KeyIndex, ConcurrentTranslationGivesEveryKeyOneRow) {
  KeyedTableOptions o;
  o.min_count = 2;
  auto ix = Make(o);
  constexpr int kThreads = 4;
  std::vector<std::vector<int64_t>> out(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) {
        std::vector<int64_t> ids;
        for (int64_t k = 0; k < 2000; ++k) ids.push_back((k * 2654435761LL) ^ (t % 2));
        ix->index->Translate(ids, 1, 0, true, rep + 1);
        if (rep == 2) out[t] = ids;
      }
    });
  for (auto& th : threads) th.join();
  // Threads 0 and 2 (and 1 and 3) read the same keys: after three passes each key has one row, the same for all.
  EXPECT_EQ(out[0], out[2]);
  EXPECT_EQ(out[1], out[3]);
  std::set<int64_t> rows(out[0].begin(), out[0].end());
  rows.insert(out[1].begin(), out[1].end());
  EXPECT_EQ(rows.size(), 4000u);
  EXPECT_EQ(ix->index->counters().live_rows, 4000);
  EXPECT_EQ(static_cast<int64_t>(ix->inits.size()), 4000);
}

}  // namespace
}  // namespace ctrain::train
