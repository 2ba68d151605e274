#include "ctrain/train/rank_agreement.h"

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

namespace ctrain::train {

Status CheckSameOnEveryRank(GradientExchange& exchange, const nlohmann::ordered_json& values,
                            const std::string& what) {
  if (exchange.size() <= 1) return Status::OK();
  const std::string mine = values.dump();
  std::vector<std::string> all;
  CTRAIN_RETURN_IF_ERROR(exchange.AllgatherStrings(mine, &all, what));
  bool same = true;
  for (const std::string& s : all) same = same && s == all[0];
  if (same) return Status::OK();
  std::vector<nlohmann::ordered_json> docs;
  for (const std::string& s : all) docs.push_back(nlohmann::ordered_json::parse(s, nullptr, false));
  std::vector<std::string> keys;  // rank 0's order, then keys only later ranks have
  for (const auto& d : docs)
    if (d.is_object())
      for (const auto& [k, v] : d.items())
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  std::string diff;
  for (const std::string& k : keys) {
    std::vector<std::pair<std::string, std::vector<int>>> groups;  // value text -> ranks, in first-seen order
    for (size_t r = 0; r < docs.size(); ++r) {
      const std::string v = docs[r].is_object() && docs[r].contains(k) ? docs[r][k].dump() : "absent";
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == v; });
      if (it == groups.end()) groups.push_back({v, {}}), it = std::prev(groups.end());
      it->second.push_back(static_cast<int>(r));
    }
    if (groups.size() == 1) continue;
    diff += (diff.empty() ? "" : "; ") + k + ": ";
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::vector<int>& ranks = groups[g].second;
      std::string list;
      for (int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
      diff += (g == 0 ? "" : ", ") + groups[g].first + " (rank" + (ranks.size() > 1 ? "s " : " ") + list + ")";
    }
  }
  return FailedPreconditionError(what + " differ between the ranks, so no step ran (every rank of one mpirun job must "
                                 "train the same model the same way): " + diff);
}

}  // namespace ctrain::train
