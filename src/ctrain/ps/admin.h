// `ctrain ps status HOST:P ... [--json]`: per shard, the rows and bytes held,
// the global step, and the pulls and pushes per second (the partitioner's
// balance, measured). docs/parameter-servers.md#status.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/service/channel.h"

namespace ctrain::ps {

// {"shards": [ShardStatusJson + "address"], "balance": {"rows_max_over_min",
// "pulled_rows_max_over_min"}}. Errors: the first shard that does not answer
// within timeout_ms, named with its address.
StatusOr<nlohmann::json> GetPsStatus(const std::vector<std::string>& addresses, const service::ChannelConfig& channel,
                                     int64_t timeout_ms);
// One line per shard plus the balance line.
std::string FormatPsStatus(const nlohmann::json& status);

}  // namespace ctrain::ps
