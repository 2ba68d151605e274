#include "ctrain/ps/server.h"

#include <chrono>
#include <thread>

#include <grpcpp/server_context.h>

#include "ctrain/base/log.h"
#include "ctrain/ps/parameter_server.grpc.pb.h"
#include "ctrain/service/auth.h"
#include "ctrain/service/grpc_status.h"

namespace ctrain::ps {

struct ParameterServer::Impl final : public proto::ParameterServer::Service {
  ServerOptions options;
  std::unique_ptr<ParameterShard> shard;
  service::RunningServer server;

  // The token and the training job of a call (service/auth.h CheckCaller).
  grpc::Status Check(const grpc::ServerContext& ctx) const {
    return service::CheckCaller(ctx, options.server.token, options.server.training_job_name, options.server.role);
  }
  template <typename Fn>
  grpc::Status Handle(grpc::ServerContext* ctx, Fn&& fn) {
    if (grpc::Status a = Check(*ctx); !a.ok()) return a;
    return service::ToGrpcStatus(fn());
  }
  grpc::Status Init(grpc::ServerContext* ctx, const proto::InitRequest* req, proto::InitResponse* resp) override {
    return Handle(ctx, [&] { return shard->Init(*req, resp); });
  }
  grpc::Status Pull(grpc::ServerContext* ctx, const proto::PullRequest* req, proto::PullResponse* resp) override {
    return Handle(ctx, [&] { return shard->Pull(*req, resp); });
  }
  grpc::Status Push(grpc::ServerContext* ctx, const proto::PushRequest* req, proto::PushResponse* resp) override {
    return Handle(ctx, [&] { return shard->Push(*req, resp); });
  }
  grpc::Status Save(grpc::ServerContext* ctx, const proto::SaveRequest* req, proto::SaveResponse* resp) override {
    return Handle(ctx, [&] { return shard->Save(*req, resp); });
  }
  grpc::Status Done(grpc::ServerContext* ctx, const proto::DoneRequest* req, proto::DoneResponse* resp) override {
    return Handle(ctx, [&] { return shard->Done(*req, resp); });
  }
  grpc::Status GetStatus(grpc::ServerContext* ctx, const proto::StatusRequest*, proto::StatusResponse* resp) override {
    return Handle(ctx, [&] {
      resp->set_json(shard->StatusJson().dump());
      return Status::OK();
    });
  }
};

ParameterServer::ParameterServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ParameterServer::~ParameterServer() {
  if (impl_->server.server) {
    impl_->shard->Shutdown();
    impl_->server.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    impl_->server.server->Wait();
  }
}

StatusOr<std::unique_ptr<ParameterServer>> ParameterServer::Start(const ServerOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (impl->options.server.role == "server") impl->options.server.role = "parameter server";
  // One limit both ways (ps/chunking.h): workers split larger pulls and pushes into chunks.
  CTRAIN_RETURN_IF_ERROR(CheckMaxMessageBytes(options.shard.max_message_bytes, "--max-message-bytes"));
  impl->options.server.max_receive_message_bytes = options.shard.max_message_bytes;
  impl->options.server.max_send_message_bytes = options.shard.max_message_bytes;
  CTRAIN_ASSIGN_OR_RETURN(impl->shard, ParameterShard::Create(options.shard));
  CTRAIN_ASSIGN_OR_RETURN(impl->server, service::StartServer(impl->options.server, {impl.get()}));
  return std::unique_ptr<ParameterServer>(new ParameterServer(std::move(impl)));
}

const std::string& ParameterServer::address() const { return impl_->server.address; }
ParameterShard& ParameterServer::shard() { return *impl_->shard; }

Status ParameterServer::Run(const std::atomic<int>* stop) {
  while (stop == nullptr || stop->load() == 0) {
    if (impl_->options.exit_when_workers_done && impl_->shard->AllWorkersDone()) {
      Logf("ps shard %d: every worker finished: stopping\n", impl_->options.shard.shard);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  impl_->shard->Shutdown();
  impl_->server.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  impl_->server.server->Wait();
  impl_->server.server.reset();
  return Status::OK();
}

}  // namespace ctrain::ps
