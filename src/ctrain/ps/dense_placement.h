// Which parameter server holds each dense parameter (docs/parameter-servers.md):
// the largest first, each to the server holding the fewest floats so far
// (ties: the lower index), so the dense bytes and the optimizer work on them
// split about evenly. Servers and trainers compute it from the ModelSpec's
// shapes, so it never travels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace ctrain::ps {

// sizes[i]: floats of dense parameter i. Returns the server of each (in [0, num_shards)).
inline std::vector<int32_t> PlaceDense(const std::vector<int64_t>& sizes, int32_t num_shards) {
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  std::vector<int64_t> load(std::max(num_shards, 1), 0);
  std::vector<int32_t> out(sizes.size(), 0);
  for (size_t i : order) {
    const int32_t s = static_cast<int32_t>(std::min_element(load.begin(), load.end()) - load.begin());
    out[i] = s;
    load[s] += sizes[i];
  }
  return out;
}

}  // namespace ctrain::ps
