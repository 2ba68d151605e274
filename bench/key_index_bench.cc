// key_index_bench: the keyed table's index alone (train/key_index.h), one
// thread, per core:
//   kind "insert":    keys translated for the first time (admission with
//                     min_count 1: probe, take a row, insert), keys/s;
//   kind "lookup":    a training batch [B, F] of known keys (shard-grouped probes
//                     and last-seen stamps), keys/s and microseconds per batch;
//   kind "evict":     one eviction pass over all live rows (steps-to-live frees
//                     a tenth of them, then the shards are rebuilt), ms per
//                     checkpoint and ns per live row;
//   kind "snapshot":  the checkpoint's snapshot of the index, ms;
//   kind "restore":   that snapshot restored into a fresh index (a resume), ms
//                     and ns per key.
// Keys are uniform 62-bit values (hashed Criteo categories); the InitRow
// callback does nothing, so only the index is timed.
// Output: one JSON object per line.
//
// Usage: key_index_bench [--keys 1000000] [--batch 1024] [--fields 39]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ctrain/train/key_index.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
  int64_t keys = 1000000, batch = 1024, fields = 39;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--keys")) keys = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batch")) batch = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--fields")) fields = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: key_index_bench [--keys N] [--batch B] [--fields F]\n");
      return 2;
    }
  }
  ctrain::train::KeyedTableOptions o;
  o.embedding_table = "keyed";
  o.max_rows = keys;
  o.steps_to_live = 1;
  auto ix = ctrain::train::KeyIndex::Create(o, 0, [](int64_t, int64_t) {});
  if (!ix.ok()) {
    std::fprintf(stderr, "%s\n", ix.status().ToString().c_str());
    return 1;
  }
  ctrain::train::KeyIndex& index = **ix;
  std::mt19937_64 rng(7);
  std::vector<int64_t> all(static_cast<size_t>(keys));
  for (auto& k : all) k = static_cast<int64_t>(rng() >> 2);

  // insert: every key once, in batch-sized calls; the first tenth at step 1, the rest at step 3, so that the
  // eviction at step 3 (steps_to_live 1) frees about a tenth.
  std::vector<int64_t> buf;
  auto t0 = Clock::now();
  const int64_t per = batch * fields;
  for (int64_t i = 0; i < keys; i += per) {
    buf.assign(all.begin() + i, all.begin() + std::min(keys, i + per));
    index.Translate(buf, 1, 0, true, i < keys / 10 ? 1 : 3);
  }
  const double ins = Since(t0);
  std::printf("{\"bench\":\"key_index\",\"kind\":\"insert\",\"keys\":%lld,\"keys_per_sec\":%.0f}\n",
              static_cast<long long>(keys), keys / ins);

  // lookup: random batches of known keys.
  const int reps = 200;
  std::vector<std::vector<int64_t>> batches(16);
  for (auto& b : batches) {
    b.resize(static_cast<size_t>(per));
    for (auto& k : b) k = all[rng() % all.size()];
  }
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    buf = batches[r % batches.size()];
    t0 = Clock::now();
    index.Translate(buf, static_cast<int32_t>(fields), 0, true, 3);
    best = std::min(best, Since(t0));
  }
  std::printf("{\"bench\":\"key_index\",\"kind\":\"lookup\",\"live\":%lld,\"batch\":%lld,\"fields\":%lld,"
              "\"us_per_batch\":%.1f,\"keys_per_sec\":%.0f}\n",
              static_cast<long long>(index.counters().live_rows), static_cast<long long>(batch),
              static_cast<long long>(fields), best * 1e6, per / best);

  // snapshot, then evict (the keys stamped at step 1 and never seen again: a tenth, minus the looked-up ones).
  t0 = Clock::now();
  const auto snap = index.Snapshot();
  const double snap_s = Since(t0);
  std::printf("{\"bench\":\"key_index\",\"kind\":\"snapshot\",\"live\":%zu,\"ms\":%.1f}\n", snap.keys.size(),
              snap_s * 1e3);
  const int64_t live = index.counters().live_rows;
  t0 = Clock::now();
  const auto freed = index.Evict(3, nullptr);
  const double ev = Since(t0);
  std::printf("{\"bench\":\"key_index\",\"kind\":\"evict\",\"live\":%lld,\"freed\":%zu,\"ms\":%.1f,"
              "\"ns_per_live_row\":%.1f}\n",
              static_cast<long long>(live), freed.size(), ev * 1e3, ev * 1e9 / std::max<int64_t>(live, 1));

  // restore: the snapshot taken above into a fresh index (a resume or a warm start).
  auto fresh = ctrain::train::KeyIndex::Create(o, 0, [](int64_t, int64_t) {});
  if (!fresh.ok()) return 1;
  t0 = Clock::now();
  const ctrain::Status st = (*fresh)->Restore(snap);
  const double rs = Since(t0);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("{\"bench\":\"key_index\",\"kind\":\"restore\",\"live\":%zu,\"ms\":%.1f,"
              "\"ns_per_key\":%.1f}\n",
              snap.keys.size(), rs * 1e3, rs * 1e9 / std::max<size_t>(snap.keys.size(), 1));
  return 0;
}
