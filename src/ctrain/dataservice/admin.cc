#include "ctrain/base/clock.h"
#include "ctrain/dataservice/admin.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include <grpcpp/client_context.h>

#include "ctrain/dataservice/data_service.grpc.pb.h"
#include "ctrain/io/file.h"
#include "ctrain/io/libsvm.h"
#include "ctrain/service/grpc_status.h"
#include "ctrain/service/server.h"

namespace ctrain::dataservice {

using json = nlohmann::json;

StatusOr<ReadResult> ReadThroughService(const DataServiceClientOptions& options, const train::StreamInput& input,
                                        int64_t batch_size, uint64_t seed, bool shuffle, int32_t epochs,
                                        const std::string& output, int64_t pace_us) {
  if (epochs < 1) return InvalidArgumentError("--epochs must be >= 1");
  if (batch_size < 1) return InvalidArgumentError("--batch-size must be >= 1");
  std::unique_ptr<io::WritableFile> out;
  if (!output.empty()) {
    io::WriteOptions wo;
    wo.atomic = true;
    CTRAIN_ASSIGN_OR_RETURN(out, io::OpenWritableFile(output, wo));
  }
  train::BatchSourceParams params;
  params.input = &input;
  params.batch_size = batch_size;
  params.epochs = epochs;
  params.seed = seed;
  params.shuffle = shuffle;
  const auto t0 = Clock::now();
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<train::BatchSource> src, CreateDataServiceSource(options, params));
  ReadResult r;
  data::Batch b;
  std::string text;
  for (int32_t e = 0; e < epochs; ++e) {
    CTRAIN_RETURN_IF_ERROR(src->BeginEpoch(e, 0));
    for (;;) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, src->Next(&b));
      if (!more) break;
      ++r.batches;
      r.examples += b.size();
      if (out) {
        text.clear();
        for (int64_t i = 0; i < b.size(); ++i) io::AppendLibSvmLine(b.labels[i], b.row_ids(i), b.row_values(i), 0, &text);
        CTRAIN_RETURN_IF_ERROR(out->Append(text));
      }
      if (pace_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(pace_us));
    }
  }
  CTRAIN_RETURN_IF_ERROR(src->Finish());
  if (out) CTRAIN_RETURN_IF_ERROR(out->Close());
  r.seconds = SecondsSince(t0);
  r.metrics = src->Metrics();
  r.bytes = r.metrics.value("raw_bytes", int64_t{0});
  return r;
}

namespace {
StatusOr<std::unique_ptr<proto::Dispatcher::Stub>> Stub(const std::string& address, const service::ChannelConfig& channel) {
  CTRAIN_RETURN_IF_ERROR(service::CheckHostPort(address, "the dispatcher address"));
  CTRAIN_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> ch, service::MakeChannel(address, channel));
  return proto::Dispatcher::NewStub(ch);
}
}  // namespace

StatusOr<json> GetServiceStatus(const std::string& address, const service::ChannelConfig& channel, int64_t timeout_ms) {
  CTRAIN_ASSIGN_OR_RETURN(auto stub, Stub(address, channel));
  grpc::ClientContext ctx;
  service::PrepareContext(&ctx, channel, std::chrono::milliseconds(timeout_ms));
  proto::GetStatusResponse resp;
  CTRAIN_RETURN_IF_ERROR(service::FromGrpcStatus(stub->GetStatus(&ctx, proto::GetStatusRequest(), &resp),
                                                 "dispatcher " + address));
  json j = json::parse(resp.status_json(), nullptr, false);
  if (j.is_discarded()) return DataLossError("dispatcher " + address + ": the status is not JSON");
  return j;
}

Status ShutdownService(const std::string& address, const service::ChannelConfig& channel, int64_t timeout_ms) {
  CTRAIN_ASSIGN_OR_RETURN(auto stub, Stub(address, channel));
  grpc::ClientContext ctx;
  service::PrepareContext(&ctx, channel, std::chrono::milliseconds(timeout_ms));
  proto::ShutdownResponse resp;
  return service::FromGrpcStatus(stub->Shutdown(&ctx, proto::ShutdownRequest(), &resp), "dispatcher " + address);
}

std::string FormatServiceStatus(const json& s) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "dispatcher %s, up %.0f s%s\n", s.value("address", std::string()).c_str(),
                s.value("uptime_seconds", 0.0), s.value("shutdown", false) ? ", shutting down" : "");
  out += buf;
  if (s.contains("journal")) {
    std::snprintf(buf, sizeof buf, "journal %s: %lld records, %lld bytes\n",
                  s["journal"].value("path", std::string()).c_str(),
                  static_cast<long long>(s["journal"].value("records", int64_t{0})),
                  static_cast<long long>(s["journal"].value("bytes", int64_t{0})));
    out += buf;
  }
  out += "workers:\n";
  for (const json& w : s.value("workers", json::array())) {
    std::snprintf(buf, sizeof buf,
                  "  %-22s %-5s %6.0f batches/s %8.1f MB/s  streams %d  queue %3.0f %%  rss %.0f MB  (heartbeat %lld ms ago)\n",
                  w.value("address", std::string()).c_str(), w.value("alive", false) ? "live" : "DEAD",
                  w.value("batches_per_sec", 0.0), w.value("bytes_per_sec", 0.0) / 1e6, w.value("active_streams", 0),
                  100 * w.value("queue_fill", 0.0), w.value("rss_bytes", 0.0) / 1e6,
                  static_cast<long long>(w.value("last_heartbeat_ms", int64_t{0})));
    out += buf;
  }
  out += "jobs:\n";
  for (const json& j : s.value("jobs", json::array())) {
    std::snprintf(buf, sizeof buf, "  %s: %s, %d split(s)/epoch, %lld epoch(s)%s\n", j.value("name", std::string()).c_str(),
                  j.value("processing_mode", std::string()).c_str(), j.value("num_splits", 0),
                  static_cast<long long>(j.value("epochs", int64_t{0})), j.value("finished", false) ? ", finished" : "");
    out += buf;
    for (const json& e : j.value("epoch_progress", json::array())) {
      std::snprintf(buf, sizeof buf, "    epoch %lld: %d done, %d in flight, %d pending (of %d)\n",
                    static_cast<long long>(e.value("epoch", int64_t{0})), e.value("done", 0), e.value("in_flight", 0),
                    e.value("pending", 0), e.value("units", 0));
      out += buf;
    }
    for (const json& c : j.value("trainers", json::array())) {
      std::snprintf(buf, sizeof buf, "    trainer %d: epoch %lld%s, input wait %.0f %%, %.0f batches/s\n", c.value("index", 0),
                    static_cast<long long>(c.value("epoch", int64_t{0})), c.value("released", false) ? " (finished)" : "",
                    100 * c.value("input_wait_fraction", 0.0), c.value("batches_per_sec", 0.0));
      out += buf;
    }
  }
  for (const json& a : s.value("advice", json::array())) out += "advice: " + a.get<std::string>() + "\n";
  return out;
}

}  // namespace ctrain::dataservice
