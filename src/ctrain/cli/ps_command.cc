// `ctrain ps` (a parameter server) and `ctrain ps status` (docs/parameter-servers.md).
// The server lives in the library (ps/server.h, ps/admin.h); this file parses flags.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ctrain/base/log.h"
#include "ctrain/base/signals.h"
#include "ctrain/cli/commands.h"
#include "ctrain/cli/data_flags.h"
#include "ctrain/cli/service_flags.h"
#include "ctrain/ps/admin.h"
#include "ctrain/ps/server.h"

namespace ctrain::cli {
namespace {

struct PsFlags {
  ServerFlags server;
  int32_t shard = -1;
  int32_t num_shards = 0;
  std::string partitioner = "fixed_size";
  std::string model_dir;
  int32_t keep_checkpoints = 3;
  bool force = false;
  int64_t max_message_bytes = ps::kDefaultMaxMessageBytes;
  bool exit_when_workers_done = false;
};

Status RunPs(const PsFlags& fl) {
  if (fl.num_shards < 1) return InvalidArgumentError("ctrain ps: --num-shards S (>= 1) is required");
  if (fl.shard < 0) return InvalidArgumentError("ctrain ps: --shard I (in [0, S)) is required");
  ps::ServerOptions o;
  CTRAIN_ASSIGN_OR_RETURN(o.server, fl.server.Config());
  o.shard.shard = fl.shard;
  o.shard.num_shards = fl.num_shards;
  o.shard.partitioner = fl.partitioner;
  o.shard.model_dir = fl.model_dir;
  o.shard.keep_checkpoints = fl.keep_checkpoints;
  o.shard.force = fl.force;
  o.shard.max_message_bytes = fl.max_message_bytes;
  o.exit_when_workers_done = fl.exit_when_workers_done;
  InterruptDeferral defer("stopping the parameter server");  // stop serving, exit 0
  CTRAIN_ASSIGN_OR_RETURN(auto server, ps::ParameterServer::Start(o));
  std::printf("ctrain: ps listening on %s\n", server->address().c_str());
  std::fflush(stdout);
  if (const std::string w = service::ExposureWarning(o.server); !w.empty())
    Warnf("%s\n", w.c_str());
  return server->Run(PendingInterruptFlag());
}

struct PsStatusFlags {
  std::vector<std::string> addresses;
  SecurityFlags security;
  bool json = false;
  int64_t timeout_ms = 5000;
};

}  // namespace

Command AddPsCommand(CLI::App& app) {
  CLI::App* ps = app.add_subcommand(
      "ps", "Run a parameter server: one shard of the embeddings and of the dense parameters, with its "
            "optimizer, for `ctrain train --ps` (docs/parameter-servers.md)");
  auto fl = std::make_shared<PsFlags>();  // owned by the run function (CLI11 points into it)
  fl->server.Register(ps, 0);
  ps->add_option("--shard", fl->shard, "This server's shard index I in [0, S)");
  ps->add_option("--num-shards,--num_shards", fl->num_shards, "Number of parameter servers S");
  ps->add_option("--partitioner", fl->partitioner,
                 "How ids map to shards: fixed_size (S contiguous pieces, as TF's fixed_size_partitioner) or mod "
                 "(id % S)")
      ->capture_default_str();
  ps->add_option("--model-dir,--model_dir", fl->model_dir,
                 "Save this shard under DIR/ps-shard-I-of-S when the chief asks, and reload it at start");
  ps->add_option("--keep-checkpoints,--keep_checkpoints", fl->keep_checkpoints, "Newest shard checkpoints kept")
      ->capture_default_str();
  ps->add_flag("--force", fl->force,
               "Start fresh whatever --model-dir holds (logged), instead of restoring it or refusing a checkpoint "
               "this layout cannot use; give it to every server of the job. The job's next checkpoint replaces "
               "the old one");
  ps->add_option("--max-message-bytes,--max_message_bytes", fl->max_message_bytes,
                 "The largest message this server sends or accepts (bytes); workers split larger pulls and pushes "
                 "into chunks of this size (docs/parameter-servers.md#message-size)")
      ->capture_default_str();
  ps->add_flag("--exit-when-workers-done,--exit_when_workers_done", fl->exit_when_workers_done,
               "Exit 0 once every worker of the job has finished training (each worker says so at its end; "
               "ctrain launch starts its servers so)");
  ps->require_subcommand(0, 1);

  auto sfl = std::make_shared<PsStatusFlags>();
  CLI::App* s = ps->add_subcommand("status", "Per shard: rows and bytes held, global step, pulls/s and pushes/s");
  s->add_option("addresses", sfl->addresses, "The parameter servers' HOST:PORT, shard 0 first")->required()->expected(1, -1);
  sfl->security.Register(s);
  s->add_flag("--json", sfl->json, "Print the status document as JSON");
  s->add_option("--timeout-ms,--timeout_ms", sfl->timeout_ms, "Per-server deadline")->capture_default_str();

  Command c;
  c.app = ps;
  c.run = [fl, sfl, s]() -> int {
    Status st;
    if (s->parsed()) {
      StatusOr<service::ChannelConfig> ch = sfl->security.Channel();
      if (!ch.ok()) return ReportError(ch.status());
      StatusOr<nlohmann::json> j = ps::GetPsStatus(sfl->addresses, *ch, sfl->timeout_ms);
      if (!j.ok()) return ReportError(j.status());
      std::printf("%s", sfl->json ? (j->dump(2) + "\n").c_str() : ps::FormatPsStatus(*j).c_str());
      return 0;
    }
    st = RunPs(*fl);
    return st.ok() ? 0 : ReportError(st);
  };
  return c;
}

}  // namespace ctrain::cli
