// libFuzzer target: arbitrary bytes as each request the parameter server
// decodes (ps/server.cc hands every one to ps/shard.h's ParameterShard).
//
// The same input is parsed as every message type it decodes as:
//   InitRequest   -> Init on a prepared (initialised) shard: the spec check;
//                    Init on a fresh shard: the tables built from the spec
//                    (only when feature_size * (1 + K) <= 2^20 floats: a legal
//                    larger model only costs the allocation), then a Pull and
//                    a Push of the same bytes on it when they cannot wait
//   PullRequest   -> Pull on the prepared shards and on an uninitialised one
//   PushRequest   -> Push on the prepared shards and on an uninitialised one,
//                    and as the first of two chunks (ps/chunking.h)
//   SaveRequest   -> Save into a scratch --model-dir; when it succeeds, a new
//                    shard on that dir must restore it at the same global step
//   StatusRequest -> StatusJson (it has no fields: every input is one)
// and, as raw text, as the model_json / optimizer_json of an otherwise valid
// Init on the prepared shard and as a Save's meta_json.
// Prepared shards, fresh per input (a Push changes them): A = shard 0 of 2,
// fixed_size, adam, async with max_staleness 1, with a --model-dir; B = shard
// 1 of 2, mod, adagrad, --sync-replicas with one worker. A sync Push waits for
// the other workers of its round, so every sync shard here has num_workers 1
// (its round completes with the push itself) and the fresh shard's Pull/Push
// are skipped when its fuzzed spec is sync with more workers.
// Checks: no crash, no uncaught exception, no hang; errors are the documented
// codes (shard.h: InvalidArgument, FailedPrecondition); results have the sizes
// the protocol gives (parameter_server.proto).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "ctrain/model/deepfm.h"
#include "ctrain/ps/parameter_server.pb.h"
#include "ctrain/ps/shard.h"
#include "ctrain/train/train_config.h"

namespace {

namespace ps = ctrain::ps;
namespace proto = ctrain::ps::proto;
using ctrain::Status;
using ctrain::StatusCode;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

void CheckError(const Status& st) {
  Check(st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kFailedPrecondition);
}

constexpr int32_t kK = 4;

proto::ModelSpec SmallSpec(const std::string& optimizer, bool sync, int64_t max_staleness) {
  ctrain::model::DeepFMConfig m;
  m.feature_size = 50;
  m.field_size = 3;
  m.embedding_size = kK;
  m.deep_layers = {8};
  ctrain::optim::OptimizerConfig oc;
  oc.name = optimizer;
  oc.learning_rate = 0.05f;
  proto::ModelSpec spec;
  spec.set_model_json(ctrain::train::ModelConfigToJson(m).dump());
  spec.set_optimizer_json(ctrain::train::OptimizerConfigToJson(oc).dump());
  spec.set_seed(7);
  spec.set_num_workers(1);
  spec.set_sync_replicas(sync);
  spec.set_max_staleness(max_staleness);
  ctrain::model::DeepFM d(m);
  d.InitDense(7);
  for (const auto& p : d.dense_params()) {
    proto::DenseTensor* t = spec.add_dense();
    t->set_name(p.name);
    for (int64_t x : p.shape) t->add_shape(x);
    t->set_values(reinterpret_cast<const char*>(p.value.data()), p.value.size() * 4);
  }
  return spec;
}

std::unique_ptr<ps::ParameterShard> NewShard(int32_t shard, const std::string& partitioner,
                                             const std::string& model_dir) {
  ps::ShardOptions o;
  o.shard = shard;
  o.num_shards = 2;
  o.partitioner = partitioner;
  o.model_dir = model_dir;
  o.keep_checkpoints = 1;
  o.log = [](const std::string&) {};
  auto s = ps::ParameterShard::Create(o);
  Check(s.ok());
  return std::move(*s);
}

std::unique_ptr<ps::ParameterShard> Prepared(int32_t shard, const std::string& partitioner,
                                             const std::string& model_dir, const proto::ModelSpec& spec) {
  auto s = NewShard(shard, partitioner, model_dir);
  proto::InitRequest init;
  *init.mutable_spec() = spec;
  proto::InitResponse resp;
  Check(s->Init(init, &resp).ok());
  return s;
}

// Rows of a fuzzed spec's tables, or -1 when its model JSON does not parse.
int64_t SpecFloats(const proto::ModelSpec& spec) {
  const nlohmann::json j = nlohmann::json::parse(spec.model_json(), nullptr, false);
  if (j.is_discarded()) return -1;
  auto mc = ctrain::train::ModelConfigFromJson(j);
  if (!mc.ok()) return -1;
  if (mc->feature_size < 0 || mc->embedding_size < 0 || mc->embedding_size > (1 << 16)) return INT64_MAX;
  if (mc->feature_size > (int64_t{1} << 20)) return INT64_MAX;
  return mc->feature_size * (1 + mc->embedding_size);
}

void RunPull(ps::ParameterShard* s, const proto::PullRequest& r, int64_t K, int64_t dense_here) {
  proto::PullResponse resp;
  const Status st = s->Pull(r, &resp);
  if (!st.ok()) return CheckError(st);
  Check(static_cast<int64_t>(resp.w().size()) == r.ids_size() * 4);
  Check(static_cast<int64_t>(resp.v().size()) == r.ids_size() * K * 4);
  Check(resp.dense_size() == (r.dense() ? dense_here : 0));
  Check(resp.version() == s->global_step());
}

void RunPush(ps::ParameterShard* s, const proto::PushRequest& r) {
  const int64_t before = s->global_step();
  proto::PushResponse resp;
  const Status st = s->Push(r, &resp);
  if (!st.ok()) {
    CheckError(st);
    Check(s->global_step() == before);  // nothing is applied on error
    return;
  }
  Check(resp.global_step() == s->global_step());
  Check(resp.global_step() == before || resp.global_step() == before + 1);
  if (resp.dropped_stale()) Check(resp.global_step() == before);
  if (resp.staged() || resp.resend()) Check(resp.global_step() == before);  // a chunk before the last applies nothing
}

// The same push as chunk 0 of 2, then an empty last chunk: the shard stages it and applies it whole (or refuses).
void RunChunkedPush(ps::ParameterShard* s, const proto::PushRequest& r) {
  proto::PushRequest c0 = r;
  c0.set_push_id(1);
  c0.set_chunk(0);
  c0.set_num_chunks(2);
  proto::PushRequest c1;
  c1.set_worker_index(r.worker_index());
  c1.set_push_id(1);
  c1.set_chunk(1);
  c1.set_num_chunks(2);
  c1.set_learning_rate(r.learning_rate());
  c1.set_examples(r.examples());
  c1.set_pulled_version(r.pulled_version());
  RunPush(s, c0);
  RunPush(s, c1);
}

// A --model-dir for Save, on tmpfs when there is one (a checkpoint is fsynced).
// Never freed: the exit handler that removes it runs after static destructors.
const std::string& ScratchDir() {
  static const std::string* dir = [] {
    const std::filesystem::path base =
        std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm") : std::filesystem::temp_directory_path();
    auto* d = new std::string((base / ("ps_request_fuzz_" + std::to_string(::getpid()))).string());
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(ScratchDir(), ec);
    });
    return d;
  }();
  return *dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const proto::ModelSpec spec_a = SmallSpec("adam", /*sync=*/false, /*max_staleness=*/1);
  static const proto::ModelSpec spec_b = SmallSpec("adagrad", /*sync=*/true, 0);
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string& dir = ScratchDir();
  std::error_code ec;
  std::filesystem::remove_all(dir + "/ps-shard-0-of-2", ec);  // no checkpoint of an earlier input

  auto a = Prepared(0, "fixed_size", dir, spec_a);
  auto b = Prepared(1, "mod", "", spec_b);
  auto fresh = NewShard(1, "fixed_size", "");
  // Dense parameters of spec_a/spec_b per shard (ps/dense_placement.h), from the prepared shards.
  const int64_t dense_a = a->StatusJson().value("dense_parameters", int64_t{0});
  const int64_t dense_b = b->StatusJson().value("dense_parameters", int64_t{0});

  if (proto::InitRequest r; r.ParseFromString(bytes)) {
    proto::InitResponse resp;
    const Status st = a->Init(r, &resp);
    if (st.ok()) Check(resp.shard() == 0 && resp.num_shards() == 2 && resp.global_step() == 0);
    else CheckError(st);
    const int64_t floats = SpecFloats(r.spec());
    if (floats >= 0 && floats <= (int64_t{1} << 20)) {
      auto s = NewShard(0, "mod", "");
      proto::InitResponse r2;
      const Status st2 = s->Init(r, &r2);
      if (!st2.ok()) {
        CheckError(st2);
      } else if (!r.spec().sync_replicas() || r.spec().num_workers() == 1) {
        const nlohmann::json js = s->StatusJson();
        const int64_t K = js.value("embedding_size", int64_t{0});
        if (proto::PullRequest p; p.ParseFromString(bytes)) RunPull(s.get(), p, K, js.value("dense_parameters", int64_t{0}));
        if (proto::PushRequest p; p.ParseFromString(bytes)) RunPush(s.get(), p);
        (void)s->StatusJson().dump();
      }
    }
  }
  if (proto::PullRequest r; r.ParseFromString(bytes)) {
    RunPull(a.get(), r, kK, dense_a);
    RunPull(b.get(), r, kK, dense_b);
    proto::PullResponse resp;
    Check(fresh->Pull(r, &resp).code() == StatusCode::kFailedPrecondition);
  }
  if (proto::PushRequest r; r.ParseFromString(bytes)) {
    RunPush(a.get(), r);
    RunPush(b.get(), r);
    RunChunkedPush(b.get(), r);
    proto::PushResponse resp;
    Check(fresh->Push(r, &resp).code() == StatusCode::kFailedPrecondition);
  }
  if (proto::SaveRequest r; r.ParseFromString(bytes)) {
    proto::SaveResponse resp;
    const Status st = a->Save(r, &resp);
    if (!st.ok()) {
      CheckError(st);
    } else {
      Check(resp.global_step() == a->global_step());
      ps::ShardOptions o;
      o.shard = 0;
      o.num_shards = 2;
      o.model_dir = dir;
      o.log = [](const std::string&) {};
      auto back = ps::ParameterShard::Create(o);
      Check(back.ok() && (*back)->restored() && (*back)->global_step() == a->global_step());
    }
    proto::SaveResponse r2;
    Check(b->Save(r, &r2).code() == StatusCode::kFailedPrecondition);  // no --model-dir
  }
  // The raw bytes as the JSON fields of an otherwise valid request (a mutated
  // proto rarely keeps a JSON string valid): the spec check and Save's meta.
  for (int field = 0; field < 2; ++field) {
    proto::InitRequest r;
    *r.mutable_spec() = spec_a;
    if (field == 0) r.mutable_spec()->set_model_json(bytes);
    else r.mutable_spec()->set_optimizer_json(bytes);
    proto::InitResponse resp;
    const Status st = a->Init(r, &resp);
    if (!st.ok()) CheckError(st);
  }
  {
    proto::SaveRequest r;
    r.set_meta_json(bytes);
    proto::SaveResponse resp;
    const Status st = a->Save(r, &resp);
    if (!st.ok()) CheckError(st);
  }
  if (proto::StatusRequest r; r.ParseFromString(bytes)) {
    for (ps::ParameterShard* s : {a.get(), b.get(), fresh.get()}) (void)s->StatusJson().dump();
  }
  return 0;
}
