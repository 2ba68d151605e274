#include "ctrain/ps/admin.h"

#include <algorithm>
#include <cstdio>

#include "ctrain/ps/parameter_server.grpc.pb.h"
#include "ctrain/service/grpc_status.h"
#include "ctrain/service/server.h"

namespace ctrain::ps {

StatusOr<nlohmann::json> GetPsStatus(const std::vector<std::string>& addresses, const service::ChannelConfig& channel,
                                     int64_t timeout_ms) {
  if (addresses.empty()) return InvalidArgumentError("ps status: give the parameter servers' HOST:PORT addresses");
  nlohmann::json out;
  out["shards"] = nlohmann::json::array();
  int64_t rmin = INT64_MAX, rmax = 0, pmin = INT64_MAX, pmax = 0;
  for (const std::string& a : addresses) {
    CTRAIN_RETURN_IF_ERROR(service::CheckHostPort(a, "ps status"));
    CTRAIN_ASSIGN_OR_RETURN(auto ch, service::MakeChannel(a, channel));
    auto stub = proto::ParameterServer::NewStub(ch);
    grpc::ClientContext ctx;
    service::PrepareContext(&ctx, channel, std::chrono::milliseconds(timeout_ms));
    proto::StatusRequest req;
    proto::StatusResponse resp;
    CTRAIN_RETURN_IF_ERROR(service::FromGrpcStatus(stub->GetStatus(&ctx, req, &resp), "parameter server " + a));
    nlohmann::json j = nlohmann::json::parse(resp.json(), nullptr, false);
    if (j.is_discarded()) return DataLossError("parameter server " + a + ": status is not JSON");
    j["address"] = a;
    const int64_t rows = j.value("rows", int64_t{0}), pulled = j.value("pulled_rows", int64_t{0});
    rmin = std::min(rmin, rows), rmax = std::max(rmax, rows);
    pmin = std::min(pmin, pulled), pmax = std::max(pmax, pulled);
    out["shards"].push_back(std::move(j));
  }
  out["balance"] = {{"rows_max_over_min", rmin > 0 ? static_cast<double>(rmax) / rmin : 0.0},
                    {"pulled_rows_max_over_min", pmin > 0 ? static_cast<double>(pmax) / pmin : 0.0}};
  return out;
}

std::string FormatPsStatus(const nlohmann::json& status) {
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-5s %-22s %-10s %10s %9s %9s %10s %10s %12s %8s\n", "shard", "address", "partition",
                "rows", "MB", "step", "pulls/s", "pushes/s", "pulled rows", "stale");
  s += buf;
  for (const auto& j : status.value("shards", nlohmann::json::array())) {
    std::snprintf(buf, sizeof buf, "%-5d %-22s %-10s %10lld %9.2f %9lld %10.1f %10.1f %12lld %8lld\n",
                  j.value("shard", -1), j.value("address", "").c_str(), j.value("partitioner", "").c_str(),
                  static_cast<long long>(j.value("rows", int64_t{0})), j.value("bytes", int64_t{0}) / 1e6,
                  static_cast<long long>(j.value("global_step", int64_t{0})), j.value("pulls_per_s", 0.0),
                  j.value("pushes_per_s", 0.0), static_cast<long long>(j.value("pulled_rows", int64_t{0})),
                  static_cast<long long>(j.value("dropped_stale", int64_t{0})));
    s += buf;
  }
  const nlohmann::json b = status.value("balance", nlohmann::json::object());
  std::snprintf(buf, sizeof buf, "balance: rows max/min %.4f, pulled rows max/min %.4f\n",
                b.value("rows_max_over_min", 0.0), b.value("pulled_rows_max_over_min", 0.0));
  s += buf;
  return s;
}

}  // namespace ctrain::ps
