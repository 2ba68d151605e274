#include "ctrain/base/clock.h"
#include "ctrain/base/path.h"
#include "ctrain/ps/shard.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "ctrain/base/log.h"
#include "ctrain/model/deepfm.h"
#include "ctrain/ps/checkpoint_remap.h"
#include "ctrain/ps/dense_placement.h"
#include "ctrain/ps/float_bytes.h"
#include "ctrain/train/checkpoint.h"
#include "ctrain/train/sharded_checkpoint.h"
#include "ctrain/train/train_config.h"

namespace ctrain::ps {
namespace {

using Clock = ::ctrain::Clock;  // base/clock.h

int64_t Nanos(Clock::time_point a) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - a).count();
}

int64_t Product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The elements of a shape a request declares: InvalidArgument (naming `what`)
// for a negative dimension or more than 2^40 elements (no overflow below that).
StatusOr<int64_t> CheckedElements(const std::string& what, const std::vector<int64_t>& shape) {
  constexpr int64_t kMax = int64_t{1} << 40;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return InvalidArgumentError(what + " has a negative dimension " + std::to_string(d));
    if (d != 0 && n > kMax / d) return InvalidArgumentError(what + " has more than 2^40 elements");
    n *= d;
  }
  return n;
}


}  // namespace

struct ParameterShard::Pending {
  int32_t worker = 0;
  int64_t examples = 0;
  float lr = 0;
  std::vector<int64_t> ids;
  std::string w, v;
  std::vector<std::string> dense;
  proto::PushRequest dense_state;  // its dense_delta only (--ps-dense workers)
};

namespace {
// A process start's incarnation (proto::ShardLife): random, never 0 (0 = not known yet on the workers).
uint64_t DrawIncarnation() {
  std::random_device rd;
  const uint64_t x = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                     static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return x != 0 ? x : 1;
}
}  // namespace

ParameterShard::ParameterShard(const ShardOptions& options, train::Partitioner part)
    : options_(options), part_(part), rows_(0), incarnation_(DrawIncarnation()), start_(Clock::now()) {}

void ParameterShard::FillLife(proto::ShardLife* life) const {
  life->set_incarnation(incarnation_);
  life->set_restored_step(restored_step_);
  life->set_saved_step(saved_step_.load());
}

ParameterShard::~ParameterShard() { Shutdown(); }

void ParameterShard::Log(const std::string& line) const {
  if (options_.log)
    options_.log(line);
  else
    Logf("ps shard %d: %s\n", options_.shard, line.c_str());
}

StatusOr<std::unique_ptr<ParameterShard>> ParameterShard::Create(const ShardOptions& options) {
  if (options.num_shards < 1) return InvalidArgumentError("--num-shards must be >= 1");
  if (options.shard < 0 || options.shard >= options.num_shards)
    return InvalidArgumentError("--shard " + std::to_string(options.shard) + " not in [0, " +
                                std::to_string(options.num_shards) + ")");
  if (options.partitioner != "fixed_size" && options.partitioner != "mod")
    return InvalidArgumentError("--partitioner '" + options.partitioner + "': use fixed_size or mod");
  if (options.keep_checkpoints < 1) return InvalidArgumentError("--keep-checkpoints must be >= 1");
  // The real row count comes with the first Init (or the checkpoint); a placeholder until then.
  CTRAIN_ASSIGN_OR_RETURN(train::Partitioner p,
                          train::Partitioner::Create(options.partitioner, options.num_shards, options.num_shards));
  std::unique_ptr<ParameterShard> s(new ParameterShard(options, p));
  if (!options.model_dir.empty()) CTRAIN_RETURN_IF_ERROR(s->Restore());
  return s;
}

int64_t ParameterShard::global_step() const {
  ReaderLock l(table_mu_);
  return global_step_;
}

nlohmann::json ParameterShard::SpecJson() const {
  nlohmann::json j;
  j["model"] = nlohmann::json::parse(spec_.model_json(), nullptr, false);
  j["optimizer"] = nlohmann::json::parse(spec_.optimizer_json(), nullptr, false);
  j["seed"] = spec_.seed();
  j["num_workers"] = spec_.num_workers();
  j["sync_replicas"] = spec_.sync_replicas();
  j["max_staleness"] = spec_.max_staleness();
  return j;
}

// Builds the tables and this server's dense parameters for `spec`; with
// init_values, fills them with their initial values. CTRAIN_REQUIRES: table_mu_ exclusive.
Status ParameterShard::CreateTables(const proto::ModelSpec& spec, bool init_values) {
  const nlohmann::json mj = nlohmann::json::parse(spec.model_json(), nullptr, false);
  const nlohmann::json oj = nlohmann::json::parse(spec.optimizer_json(), nullptr, false);
  if (mj.is_discarded() || oj.is_discarded()) return InvalidArgumentError("Init: model or optimizer JSON unreadable");
  CTRAIN_ASSIGN_OR_RETURN(model::DeepFMConfig mc, train::ModelConfigFromJson(mj));
  CTRAIN_ASSIGN_OR_RETURN(optim::OptimizerConfig oc, train::OptimizerConfigFromJson(oj));
  CTRAIN_RETURN_IF_ERROR(mc.Validate());
  if (spec.num_workers() < 1) return InvalidArgumentError("Init: num_workers must be >= 1");
  if (spec.max_staleness() < 0) return InvalidArgumentError("Init: max_staleness must be >= 0");
  CTRAIN_ASSIGN_OR_RETURN(part_, train::Partitioner::Create(options_.partitioner, mc.feature_size, options_.num_shards));
  rows_ = part_.ShardRows(options_.shard);
  K_ = mc.embedding_size;
  use_w_ = mc.reads_w();
  use_v_ = mc.reads_v();
  CTRAIN_ASSIGN_OR_RETURN(auto wopt, optim::MakeOptimizer(oc));
  CTRAIN_ASSIGN_OR_RETURN(auto vopt, optim::MakeOptimizer(oc));
  CTRAIN_ASSIGN_OR_RETURN(dense_opt_, optim::MakeOptimizer(oc));
  train::LocalTableOptions to;
  to.concurrency = train::TableConcurrency::kHogwild;  // table_mu_ orders every access
  CTRAIN_ASSIGN_OR_RETURN(w_, train::LocalParameterTable::Create("embeddings/w", rows_, 1, std::move(wopt), to));
  CTRAIN_ASSIGN_OR_RETURN(v_, train::LocalParameterTable::Create("embeddings/V", rows_, K_, std::move(vopt), to));
  dense_.clear();
  {  // this server's dense parameters (ps/dense_placement.h)
    std::vector<int64_t> sizes;
    for (const proto::DenseTensor& d : spec.dense()) {
      CTRAIN_ASSIGN_OR_RETURN(const int64_t n,
                              CheckedElements("Init: dense parameter '" + d.name() + "'",
                                              std::vector<int64_t>(d.shape().begin(), d.shape().end())));
      sizes.push_back(n);
    }
    const std::vector<int32_t> place = PlaceDense(sizes, options_.num_shards);
    for (int i = 0; i < spec.dense_size(); ++i) {
      if (place[i] != options_.shard) continue;
      const proto::DenseTensor& d = spec.dense(i);
      Dense x;
      x.name = d.name();
      x.shape.assign(d.shape().begin(), d.shape().end());
      const int64_t n = Product(x.shape);
      if (init_values && !HasFloats(d.values(), n))
        return InvalidArgumentError("Init: dense parameter '" + x.name + "' has " + std::to_string(d.values().size()) +
                                    " bytes for " + std::to_string(n) + " floats");
      if (init_values) x.value.assign(Floats(d.values()), Floats(d.values()) + n);
      else x.value.assign(n, 0.0f);
      for (int k = 0; k < dense_opt_->num_slots(); ++k) x.slots.emplace_back(n, dense_opt_->SlotInit(k));
      dense_.push_back(std::move(x));
    }
  }
  if (init_values) {
    const uint64_t seed = spec.seed();
    CTRAIN_ASSIGN_OR_RETURN(const model::EmbeddingInit init, model::EmbeddingInitOf(mc));
    if (part_.kind() == train::Partitioner::Kind::kFixedSize) {
      model::InitEmbeddingRows(seed, mc.feature_size, K_, part_.GlobalId(options_.shard, 0), rows_,
                                       w_->data(), v_->data(), init);
    } else {  // mod: every S-th row; computed in contiguous chunks
      constexpr int64_t kChunk = 1 << 14;
      std::vector<float> w(kChunk), v(kChunk * K_);
      for (int64_t lo = 0; lo < mc.feature_size; lo += kChunk) {
        const int64_t n = std::min(kChunk, mc.feature_size - lo);
        model::InitEmbeddingRows(seed, mc.feature_size, K_, lo, n, w.data(), v.data(), init);
        for (int64_t r = 0; r < n; ++r) {
          const int64_t id = lo + r;
          if (part_.ShardOf(id) != options_.shard) continue;
          const int64_t l = part_.LocalRow(id);
          w_->data()[l] = w[r];
          std::memcpy(v_->data() + l * K_, &v[r * K_], K_ * sizeof(float));
        }
      }
    }
  }
  spec_ = spec;
  for (proto::DenseTensor& d : *spec_.mutable_dense()) d.clear_values();
  initialized_ = true;
  return Status::OK();
}

Status ParameterShard::CheckSpec(const proto::ModelSpec& spec) const {
  auto differs = [&](const std::string& what, const std::string& have, const std::string& want) {
    return FailedPreconditionError("parameter server shard " + std::to_string(options_.shard) + " holds a model with " +
                                   what + " " + have + ", this trainer asks for " + want +
                                   " (restart the parameter servers, or give them a new --model-dir)");
  };
  nlohmann::json hm = nlohmann::json::parse(spec_.model_json(), nullptr, false);
  if (hm.is_object() && !hm.contains("kind")) hm["kind"] = "deepfm";  // held before the kind was recorded
  const nlohmann::json wm = nlohmann::json::parse(spec.model_json(), nullptr, false);
  if (wm.is_discarded()) return InvalidArgumentError("Init: model JSON unreadable");
  if (!wm.is_object()) return InvalidArgumentError("Init: model JSON is not an object");
  for (auto it = wm.begin(); it != wm.end(); ++it)
    if (!hm.contains(it.key()) || hm[it.key()] != it.value())
      return differs(it.key(), hm.value(it.key(), nlohmann::json()).dump(), it.value().dump());
  const nlohmann::json ho = nlohmann::json::parse(spec_.optimizer_json(), nullptr, false);
  const nlohmann::json wo = nlohmann::json::parse(spec.optimizer_json(), nullptr, false);
  if (wo.is_discarded()) return InvalidArgumentError("Init: optimizer JSON unreadable");
  if (!wo.is_object()) return InvalidArgumentError("Init: optimizer JSON is not an object");
  if (wo.contains("name") && !wo["name"].is_string())
    return InvalidArgumentError("Init: optimizer JSON: 'name' is not a string");
  if (ho.value("name", "") != wo.value("name", ""))
    return differs("optimizer", ho.value("name", ""), wo.value("name", ""));
  // The servers run the optimizer: a trainer with another learning rate (or beta, epsilon, ...) would
  // have its setting ignored in silence.
  for (auto it = wo.begin(); it != wo.end(); ++it)
    if (ho.is_object() && ho.contains(it.key()) && ho[it.key()] != it.value())
      return differs("optimizer setting " + it.key(), ho.value(it.key(), nlohmann::json()).dump(), it.value().dump());
  if (spec.num_workers() != spec_.num_workers())
    return differs("--num-workers", std::to_string(spec_.num_workers()), std::to_string(spec.num_workers()));
  if (spec.sync_replicas() != spec_.sync_replicas())
    return differs("--sync-replicas", spec_.sync_replicas() ? "on" : "off", spec.sync_replicas() ? "on" : "off");
  if (spec.seed() != spec_.seed())
    return differs("--seed", std::to_string(spec_.seed()), std::to_string(spec.seed()));
  if (spec.dense_size() != spec_.dense_size())
    return differs("dense parameter count", std::to_string(spec_.dense_size()), std::to_string(spec.dense_size()));
  for (int i = 0; i < spec.dense_size(); ++i)
    if (spec.dense(i).name() != spec_.dense(i).name() ||
        !std::equal(spec.dense(i).shape().begin(), spec.dense(i).shape().end(), spec_.dense(i).shape().begin(),
                    spec_.dense(i).shape().end())) {
      auto text = [](const proto::DenseTensor& d) {
        std::string s = d.name() + " [";
        for (int k = 0; k < d.shape_size(); ++k) s += (k ? ", " : "") + std::to_string(d.shape(k));
        return s + "]";
      };
      return differs("dense parameter " + std::to_string(i), text(spec_.dense(i)), text(spec.dense(i)));
    }
  return Status::OK();
}

Status ParameterShard::Init(const proto::InitRequest& req, proto::InitResponse* resp) {
  {
    WriterLock l(table_mu_);
    if (!initialized_) {
      CTRAIN_RETURN_IF_ERROR(CreateTables(req.spec(), /*init_values=*/true));
      start_ = Clock::now();
      Log("initialised by worker " + std::to_string(req.worker_index()) + ": " + std::to_string(rows_) + " of " +
          std::to_string(part_.rows()) + " rows (" + std::string(part_.name()) + "), K " + std::to_string(K_) +
          ", " + std::to_string(dense_.size()) + " of " + std::to_string(spec_.dense_size()) + " dense parameters, " +
          (spec_.sync_replicas() ? "sync replicas" : "async") + ", " + std::to_string(spec_.num_workers()) +
          " workers");
    } else {
      CTRAIN_RETURN_IF_ERROR(CheckSpec(req.spec()));
    }
    const std::string placement = req.spec().dense_placement().empty() ? "servers" : req.spec().dense_placement();
    if (live_dense_placement_.empty()) live_dense_placement_ = placement;
    if (placement != live_dense_placement_)
      return FailedPreconditionError(
          "Init: worker " + std::to_string(req.worker_index()) + " places the dense parameters as '" + placement +
          "', an earlier worker of this job as '" + live_dense_placement_ +
          "' (--ps-dense and --ps-dense-sync-steps must be the same on every worker)");
    resp->set_global_step(global_step_);
  }
  resp->set_shard(options_.shard);
  resp->set_num_shards(options_.num_shards);
  resp->set_partitioner(options_.partitioner);
  resp->set_restored(restored_);
  resp->set_restored_meta_json(restored_meta_);
  FillLife(resp->mutable_life());
  resp->set_saves(!options_.model_dir.empty());
  resp->set_max_message_bytes(options_.max_message_bytes);
  return Status::OK();
}

Status ParameterShard::Pull(const proto::PullRequest& req, proto::PullResponse* resp) {
  const auto t0 = Clock::now();
  ReaderLock l(table_mu_);
  CTRAIN_RETURN_IF_ERROR(CheckCaller("Pull", -1));
  const int64_t n = req.ids_size();
  std::vector<int64_t> local(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = req.ids(i);
    if (id < 0 || id >= part_.rows()) return train::IdRangeError(id, part_.rows());
    if (part_.ShardOf(id) != options_.shard)
      return InvalidArgumentError("Pull: id " + std::to_string(id) + " belongs to shard " +
                                  std::to_string(part_.ShardOf(id)) + ", not " + std::to_string(options_.shard));
    local[i] = part_.LocalRow(id);
  }
  if (req.state() && options_.shard == 0)
    for (const Dense& s : state_) {
      proto::DenseTensor* t = resp->add_state();
      t->set_name(s.name);
      for (int64_t d : s.shape) t->add_shape(d);
      PutFloats(s.value.data(), static_cast<int64_t>(s.value.size()), t->mutable_values());
    }
  std::string* w = resp->mutable_w();
  std::string* v = resp->mutable_v();
  w->resize(n * sizeof(float));
  v->resize(n * K_ * sizeof(float));
  CTRAIN_RETURN_IF_ERROR(w_->Pull(local, reinterpret_cast<float*>(w->data())));
  CTRAIN_RETURN_IF_ERROR(v_->Pull(local, reinterpret_cast<float*>(v->data())));
  int64_t bytes = static_cast<int64_t>(w->size() + v->size());
  if (req.dense())
    for (const Dense& d : dense_) {
      PutFloats(d.value.data(), static_cast<int64_t>(d.value.size()), resp->add_dense());
      bytes += static_cast<int64_t>(d.value.size() * 4);
    }
  if (req.slots()) {  // an export: the rows' optimizer slots, then the dense parameters'
    for (int k = 0; k < w_->num_slots(); ++k) {
      std::string* ws = resp->add_w_slots();
      std::string* vs = resp->add_v_slots();
      ws->resize(n * sizeof(float));
      vs->resize(n * K_ * sizeof(float));
      float* wd = reinterpret_cast<float*>(ws->data());
      float* vd = reinterpret_cast<float*>(vs->data());
      for (int64_t i = 0; i < n; ++i) {
        wd[i] = w_->slot(k)[local[i]];
        std::memcpy(vd + i * K_, v_->slot(k) + local[i] * K_, K_ * sizeof(float));
      }
      bytes += static_cast<int64_t>(ws->size() + vs->size());
    }
    if (req.dense())
      for (const Dense& d : dense_)
        for (const auto& slot : d.slots) {
          PutFloats(slot.data(), static_cast<int64_t>(slot.size()), resp->add_dense_slots());
          bytes += static_cast<int64_t>(slot.size() * 4);
        }
  }
  resp->set_version(global_step_);
  FillLife(resp->mutable_life());
  pulls_ += 1;
  pulled_rows_ += n;
  bytes_out_ += bytes;
  bytes_in_ += n * 8;
  pull_ns_ += Nanos(t0);
  return Status::OK();
}

Status ParameterShard::CheckCaller(const char* what, int32_t worker) const {
  if (!initialized_)
    return FailedPreconditionError("parameter server shard " + std::to_string(options_.shard) +
                                   " is not initialised (no trainer has called Init yet)");
  if (worker != -1 && (worker < 0 || worker >= spec_.num_workers()))
    return InvalidArgumentError(std::string(what) + ": worker_index " + std::to_string(worker) + " not in [0, " +
                                std::to_string(spec_.num_workers()) + ")");
  return Status::OK();
}

Status ParameterShard::ValidatePush(const proto::PushRequest& req) const {
  CTRAIN_RETURN_IF_ERROR(CheckCaller("Push", req.worker_index()));
  // >= 0: a schedule may end at 0 (cosine decay to lr_decay_alpha = 0), as local training's does.
  if (!(req.learning_rate() >= 0) || !std::isfinite(req.learning_rate()))
    return InvalidArgumentError("Push: learning_rate must be finite and >= 0");
  if (req.examples() < 0) return InvalidArgumentError("Push: examples must be >= 0");
  const int64_t n = req.ids_size();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = req.ids(i);
    if (id < 0 || id >= part_.rows()) return train::IdRangeError(id, part_.rows());
    if (part_.ShardOf(id) != options_.shard)
      return InvalidArgumentError("Push: id " + std::to_string(id) + " belongs to shard " +
                                  std::to_string(part_.ShardOf(id)) + ", not " + std::to_string(options_.shard));
    if (i > 0 && id <= req.ids(i - 1))
      return InvalidArgumentError("Push: ids not strictly increasing at index " + std::to_string(i));
  }
  if (!req.w_grad().empty() && !HasFloats(req.w_grad(), n))
    return InvalidArgumentError("Push: w_grad has " + std::to_string(req.w_grad().size()) + " bytes for " +
                                std::to_string(n) + " ids");
  if (!req.v_grad().empty() && !HasFloats(req.v_grad(), n * K_))
    return InvalidArgumentError("Push: v_grad has " + std::to_string(req.v_grad().size()) + " bytes for " +
                                std::to_string(n) + " ids x K " + std::to_string(K_));
  if (req.dense_grad_size() != 0) {
    if (req.dense_grad_size() != static_cast<int>(dense_.size()))
      return InvalidArgumentError("Push: " + std::to_string(req.dense_grad_size()) + " dense gradients for " +
                                  std::to_string(dense_.size()) + " dense parameters");
    for (size_t i = 0; i < dense_.size(); ++i)
      if (!HasFloats(req.dense_grad(static_cast<int>(i)), static_cast<int64_t>(dense_[i].value.size())))
        return InvalidArgumentError("Push: dense gradient of '" + dense_[i].name + "' has the wrong size");
  }
  return ValidateDenseState(req);
}

void ParameterShard::ApplyLocked(const std::vector<int64_t>& ids, const float* w, const float* v,
                                 const std::vector<const float*>& dense, float lr) {
  const auto t0 = Clock::now();
  const int64_t step = global_step_ + 1;
  std::vector<int64_t> local(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) local[i] = part_.LocalRow(ids[i]);  // order kept: see partitioner.h
  w_->mutable_optimizer().set_learning_rate(lr);
  v_->mutable_optimizer().set_learning_rate(lr);
  dense_opt_->set_learning_rate(lr);
  // Validated before: these cannot fail.
  if (w != nullptr && !local.empty()) (void)w_->Push(train::SparseRows{local, w, 1}, step);
  if (v != nullptr && !local.empty()) (void)v_->Push(train::SparseRows{local, v, K_}, step);
  for (size_t i = 0; i < dense.size() && i < dense_.size(); ++i) {
    if (dense[i] == nullptr) continue;
    Dense& d = dense_[i];
    std::vector<float*> slots;
    for (auto& s : d.slots) slots.push_back(s.data());
    dense_opt_->ApplyDense(d.value.data(), dense[i], slots.data(), static_cast<int64_t>(d.value.size()), step);
  }
  global_step_ = step;
  pushed_rows_ += static_cast<int64_t>(ids.size());
  apply_ns_ += Nanos(t0);
}

Status ParameterShard::Push(const proto::PushRequest& req, proto::PushResponse* resp) {
  bytes_in_ += static_cast<int64_t>(req.ids_size() * 8 + req.w_grad().size() + req.v_grad().size());
  for (const auto* f : {&req.dense_grad(), &req.dense_delta(), &req.dense_value(), &req.dense_slot()})
    for (const std::string& d : *f) bytes_in_ += static_cast<int64_t>(d.size());
  if (req.num_chunks() <= 1) return PushWhole(req, resp);
  {
    ReaderLock l(table_mu_);
    CTRAIN_RETURN_IF_ERROR(CheckCaller("Push", req.worker_index()));  // before anything is staged
  }
  proto::PushRequest whole;
  CTRAIN_ASSIGN_OR_RETURN(PushAssembler::Result r, chunks_.Add(proto::PushRequest(req), &whole));
  if (r == PushAssembler::Result::kComplete) return PushWhole(whole, resp);
  FillLife(resp->mutable_life());
  resp->set_global_step(global_step());
  resp->set_staged(r == PushAssembler::Result::kStaged);
  resp->set_resend(r == PushAssembler::Result::kResend);
  return Status::OK();
}

Status ParameterShard::PushWhole(const proto::PushRequest& req, proto::PushResponse* resp) {
  FillLife(resp->mutable_life());
  pushes_ += 1;
  bool sync = false;
  {
    ReaderLock l(table_mu_);
    CTRAIN_RETURN_IF_ERROR(ValidatePush(req));
    sync = spec_.sync_replicas();
  }
  if (req.dense_only()) {  // dense state alone: applied now, no global step, no sync round
    WriterLock l(table_mu_);
    ApplyDenseStateLocked(req, 1.0f / static_cast<float>(spec_.num_workers()));
    resp->set_global_step(global_step_);
    return Status::OK();
  }
  std::vector<int64_t> ids(req.ids().begin(), req.ids().end());
  if (!sync) {
    WriterLock l(table_mu_);
    // A worker's dense delta (its share: / num_workers) is its own parameters' progress, not a gradient on stale
    // values: it is added even when --max-staleness drops the push's gradients.
    ApplyDenseStateLocked(req, 1.0f / static_cast<float>(spec_.num_workers()));
    if (spec_.max_staleness() > 0 && global_step_ - req.pulled_version() > spec_.max_staleness()) {
      dropped_stale_ += 1;
      resp->set_dropped_stale(true);
      resp->set_global_step(global_step_);
      return Status::OK();
    }
    std::vector<const float*> dense;
    for (const std::string& d : req.dense_grad()) dense.push_back(Floats(d));
    ApplyLocked(ids, req.w_grad().empty() ? nullptr : Floats(req.w_grad()),
                req.v_grad().empty() ? nullptr : Floats(req.v_grad()), dense, req.learning_rate());
    resp->set_global_step(global_step_);
    return Status::OK();
  }
  // Sync replicas: join the round; the last worker in applies the mean.
  MutexLock l(sync_mu_);
  for (const auto& p : round_)
    if (p->worker == req.worker_index())
      return FailedPreconditionError("Push: worker " + std::to_string(req.worker_index()) +
                                     " pushed twice in one sync round");
  auto p = std::make_unique<Pending>();
  p->worker = req.worker_index();
  p->examples = req.examples();
  p->lr = req.learning_rate();
  p->ids = std::move(ids);
  p->w = req.w_grad();
  p->v = req.v_grad();
  p->dense.assign(req.dense_grad().begin(), req.dense_grad().end());
  *p->dense_state.mutable_dense_delta() = req.dense_delta();
  round_.push_back(std::move(p));
  const int64_t my_round = rounds_done_;
  if (static_cast<int32_t>(round_.size()) < spec_.num_workers()) {
    // A lost worker stalls the round (as in TF): say which ones are missing, every 10 s.
    const auto since = Clock::now();
    while (!l.WaitFor(sync_cv_, std::chrono::seconds(10), [&]() CTRAIN_REQUIRES(sync_mu_) { return rounds_done_ > my_round || shutdown_; })) {
      std::string missing;
      for (int32_t w = 0; w < spec_.num_workers(); ++w) {
        bool in = false;
        for (const auto& q : round_) in = in || q->worker == w;
        if (!in) missing += (missing.empty() ? "" : ", ") + std::to_string(w);
      }
      Log("sync round " + std::to_string(my_round + 1) + ": waiting " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - since).count()) +
          " s for worker(s) " + missing + " (a lost worker stalls --sync-replicas training)");
    }
    if (rounds_done_ <= my_round) {
      // This push leaves the round it could not finish (a retry joins afresh).
      round_.erase(std::remove_if(round_.begin(), round_.end(),
                                  [&](const auto& q) { return q->worker == req.worker_index(); }),
                   round_.end());
      // The server is going away: Unavailable, which workers wait out (a restart from the checkpoint follows).
      return UnavailableError("parameter server shard " + std::to_string(options_.shard) +
                              " shut down while a sync round waited for workers");
    }
    resp->set_global_step(global_step());
    return Status::OK();
  }
  // Everyone is in: merge in worker order, weights examples / total.
  std::sort(round_.begin(), round_.end(), [](const auto& a, const auto& b) { return a->worker < b->worker; });
  int64_t total = 0;
  std::vector<const Pending*> in;
  for (const auto& q : round_)
    if (q->examples > 0) {
      total += q->examples;
      in.push_back(q.get());
    }
  {
    WriterLock tl(table_mu_);
    // The workers' dense deltas: their mean, added in worker order (deterministic sums).
    for (const auto& q : round_) ApplyDenseStateLocked(q->dense_state, 1.0f / static_cast<float>(spec_.num_workers()));
    if (in.size() == 1) {  // one contributor: its gradient as is (bit-identical to local training)
      const Pending& q = *in[0];
      std::vector<const float*> dense;
      for (const std::string& d : q.dense) dense.push_back(Floats(d));
      ApplyLocked(q.ids, q.w.empty() ? nullptr : Floats(q.w), q.v.empty() ? nullptr : Floats(q.v), dense, q.lr);
    } else if (!in.empty()) {
      std::vector<int64_t> ids_all;
      for (const Pending* q : in) ids_all.insert(ids_all.end(), q->ids.begin(), q->ids.end());
      std::sort(ids_all.begin(), ids_all.end());
      ids_all.erase(std::unique(ids_all.begin(), ids_all.end()), ids_all.end());
      const size_t U = ids_all.size();
      std::vector<float> w(U, 0.0f), v(U * K_, 0.0f);
      bool any_w = false, any_v = false;
      std::vector<std::vector<float>> dense(dense_.size());
      for (size_t i = 0; i < dense_.size(); ++i) dense[i].assign(dense_[i].value.size(), 0.0f);
      bool any_dense = false;
      for (const Pending* q : in) {
        const float wt = static_cast<float>(static_cast<double>(q->examples) / static_cast<double>(total));
        size_t j = 0;
        for (size_t i = 0; i < q->ids.size(); ++i) {
          while (ids_all[j] != q->ids[i]) ++j;
          if (!q->w.empty()) w[j] += wt * Floats(q->w)[i], any_w = true;
          if (!q->v.empty()) {
            any_v = true;
            for (int32_t k = 0; k < K_; ++k) v[j * K_ + k] += wt * Floats(q->v)[i * K_ + k];
          }
        }
        for (size_t i = 0; i < q->dense.size(); ++i) {
          any_dense = true;
          const float* g = Floats(q->dense[i]);
          for (size_t e = 0; e < dense[i].size(); ++e) dense[i][e] += wt * g[e];
        }
      }
      std::vector<const float*> dp;
      if (any_dense)
        for (auto& d : dense) dp.push_back(d.data());
      ApplyLocked(ids_all, any_w ? w.data() : nullptr, any_v ? v.data() : nullptr, dp, in[0]->lr);
    }
    resp->set_global_step(global_step_);
  }
  round_.clear();
  ++rounds_done_;
  sync_cv_.notify_all();
  return Status::OK();
}

Status ParameterShard::Done(const proto::DoneRequest& req, proto::DoneResponse* resp) {
  int32_t workers = 0;
  {
    ReaderLock l(table_mu_);
    CTRAIN_RETURN_IF_ERROR(CheckCaller("Done", req.worker_index()));
    workers = spec_.num_workers();
  }
  MutexLock l(done_mu_);
  done_.resize(static_cast<size_t>(workers), 0);
  if (!done_[req.worker_index()]) Log("worker " + std::to_string(req.worker_index()) + " finished");
  done_[req.worker_index()] = 1;
  resp->set_workers_done(static_cast<int32_t>(std::count(done_.begin(), done_.end(), 1)));
  return Status::OK();
}

bool ParameterShard::AllWorkersDone() const {
  MutexLock l(done_mu_);
  return !done_.empty() && std::count(done_.begin(), done_.end(), 1) == static_cast<std::ptrdiff_t>(done_.size());
}

void ParameterShard::Shutdown() {
  MutexLock l(sync_mu_);
  shutdown_ = true;
  sync_cv_.notify_all();
}

Status ParameterShard::Save(const proto::SaveRequest& req, proto::SaveResponse* resp) {
  if (options_.model_dir.empty())
    return FailedPreconditionError("parameter server shard " + std::to_string(options_.shard) +
                                   " has no --model-dir: it cannot save a checkpoint");
  nlohmann::json trainer_meta = nlohmann::json::object();
  if (!req.meta_json().empty()) {
    trainer_meta = nlohmann::json::parse(req.meta_json(), nullptr, false);
    if (trainer_meta.is_discarded()) return InvalidArgumentError("Save: meta_json is not JSON");
  }
  WriterLock l(table_mu_);
  if (!initialized_)
    return FailedPreconditionError("parameter server shard " + std::to_string(options_.shard) + " is not initialised");
  if (options_.shard == 0 && req.state_size() > 0) {
    std::vector<Dense> state;  // replaces state_ only when every tensor is valid
    for (const proto::DenseTensor& t : req.state()) {
      Dense s;
      s.name = t.name();
      s.shape.assign(t.shape().begin(), t.shape().end());
      CTRAIN_ASSIGN_OR_RETURN(const int64_t n, CheckedElements("Save: state tensor '" + s.name + "'", s.shape));
      if (!HasFloats(t.values(), n))
        return InvalidArgumentError("Save: state tensor '" + s.name + "' has the wrong size");
      s.value.assign(Floats(t.values()), Floats(t.values()) + n);
      state.push_back(std::move(s));
    }
    state_ = std::move(state);
  }
  std::vector<train::TensorRef> refs;
  refs.push_back(train::TensorRef::F32("embeddings/w", {rows_}, w_->data()));
  refs.push_back(train::TensorRef::F32("embeddings/V", {rows_, K_}, v_->data()));
  for (int k = 0; k < w_->num_slots(); ++k) {
    const std::string slot(w_->optimizer().SlotName(k));
    refs.push_back(train::TensorRef::F32("embeddings/w/" + slot, {rows_}, w_->slot(k)));
    refs.push_back(train::TensorRef::F32("embeddings/V/" + slot, {rows_, K_}, v_->slot(k)));
  }
  for (const Dense& d : dense_) {
    refs.push_back(train::TensorRef::F32(d.name, d.shape, d.value.data()));
    for (size_t k = 0; k < d.slots.size(); ++k)
      refs.push_back(train::TensorRef::F32(d.name + "/" + std::string(dense_opt_->SlotName(static_cast<int>(k))),
                                           d.shape, d.slots[k].data()));
  }
  for (const Dense& s : state_) refs.push_back(train::TensorRef::F32(s.name, s.shape, s.value.data()));
  nlohmann::json meta;
  meta["format"] = train::kShardFormat;
  meta["shard"] = options_.shard;
  meta["num_shards"] = options_.num_shards;
  meta["partitioner"] = options_.partitioner;
  meta["feature_size"] = part_.rows();
  meta["global_step"] = global_step_;
  meta["spec"] = SpecJson();
  nlohmann::json dn = nlohmann::json::array();
  for (const proto::DenseTensor& d : spec_.dense())  // all of them: the placement is computed from the list
    dn.push_back({{"name", d.name()}, {"shape", std::vector<int64_t>(d.shape().begin(), d.shape().end())}});
  meta["spec"]["dense"] = dn;
  nlohmann::json sn = nlohmann::json::array();
  for (const Dense& s : state_) sn.push_back({{"name", s.name}, {"shape", s.shape}});
  meta["state"] = sn;
  meta["trainer"] = trainer_meta;
  const std::string dir = options_.model_dir + "/" + train::ShardDirName(options_.shard, options_.num_shards);
  train::CheckpointOptions co;
  co.keep_last = options_.keep_checkpoints;
  CTRAIN_RETURN_IF_ERROR(train::SaveCheckpoint(dir, global_step_, refs, meta, co));
  resp->set_path(AbsolutePath(dir + "/" + train::CheckpointFileName(global_step_)));
  resp->set_global_step(global_step_);
  saved_step_ = global_step_;
  return Status::OK();
}

Status ParameterShard::Restore() {
  // The manifest's file for this shard, its rows remapped from another layout, or the own directory's newest.
  CTRAIN_ASSIGN_OR_RETURN(std::optional<train::Checkpoint> found,
                          LoadStartCheckpoint(options_.model_dir,
                                              {options_.shard, options_.num_shards, options_.partitioner},
                                              [this](const std::string& line) { Log(line); }, options_.force));
  if (!found.has_value()) return Status::OK();  // nothing saved: Init starts fresh
  train::Checkpoint& ck = *found;
  const nlohmann::json& m = ck.meta;
  if (m.value("format", "") != train::kShardFormat || m.value("shard", -1) != options_.shard ||
      m.value("num_shards", -1) != options_.num_shards || m.value("partitioner", "") != options_.partitioner)
    return FailedPreconditionError(ck.path + ": checkpoint of shard " + std::to_string(m.value("shard", -1)) + " of " +
                                   std::to_string(m.value("num_shards", -1)) + " (" + m.value("partitioner", "?") +
                                   "), this server is shard " + std::to_string(options_.shard) + " of " +
                                   std::to_string(options_.num_shards) + " (" + options_.partitioner + ")");
  if (!m.contains("spec") || !m["spec"].is_object()) return DataLossError(ck.path + ": no 'spec' in meta");
  const nlohmann::json& sj = m["spec"];
  proto::ModelSpec spec;
  spec.set_model_json(sj.value("model", nlohmann::json()).dump());
  spec.set_optimizer_json(sj.value("optimizer", nlohmann::json()).dump());
  spec.set_seed(sj.value("seed", uint64_t{0}));
  spec.set_num_workers(sj.value("num_workers", 1));
  spec.set_sync_replicas(sj.value("sync_replicas", false));
  spec.set_max_staleness(sj.value("max_staleness", int64_t{0}));
  for (const auto& d : sj.value("dense", nlohmann::json::array())) {
    proto::DenseTensor* t = spec.add_dense();
    t->set_name(d.value("name", ""));
    for (int64_t x : d.value("shape", std::vector<int64_t>())) t->add_shape(x);
  }
  WriterLock l(table_mu_);
  CTRAIN_RETURN_IF_ERROR(CreateTables(spec, /*init_values=*/false).WithContext(ck.path));
  auto copy = [&](const std::string& name, float* dst, int64_t n) -> Status {
    const train::NamedTensor* t = ck.Find(name);
    if (t == nullptr) return DataLossError(ck.path + ": no tensor '" + name + "'");
    if (t->dtype != train::DType::kF32 || t->num_elements() != n)
      return DataLossError(ck.path + ": tensor '" + name + "' has " + std::to_string(t->num_elements()) +
                           " values, the shard expects " + std::to_string(n));
    std::memcpy(dst, t->f32.data(), n * sizeof(float));
    return Status::OK();
  };
  CTRAIN_RETURN_IF_ERROR(copy("embeddings/w", w_->data(), rows_));
  CTRAIN_RETURN_IF_ERROR(copy("embeddings/V", v_->data(), rows_ * K_));
  for (int k = 0; k < w_->num_slots(); ++k) {
    const std::string slot(w_->optimizer().SlotName(k));
    CTRAIN_RETURN_IF_ERROR(copy("embeddings/w/" + slot, w_->slot(k), rows_));
    CTRAIN_RETURN_IF_ERROR(copy("embeddings/V/" + slot, v_->slot(k), rows_ * K_));
  }
  for (Dense& d : dense_) {
    CTRAIN_RETURN_IF_ERROR(copy(d.name, d.value.data(), static_cast<int64_t>(d.value.size())));
    for (size_t k = 0; k < d.slots.size(); ++k)
      CTRAIN_RETURN_IF_ERROR(copy(d.name + "/" + std::string(dense_opt_->SlotName(static_cast<int>(k))),
                                  d.slots[k].data(), static_cast<int64_t>(d.slots[k].size())));
  }
  state_.clear();
  for (const auto& sj2 : m.value("state", nlohmann::json::array())) {
    Dense s;
    s.name = sj2.value("name", "");
    s.shape = sj2.value("shape", std::vector<int64_t>());
    s.value.resize(Product(s.shape));
    CTRAIN_RETURN_IF_ERROR(copy(s.name, s.value.data(), static_cast<int64_t>(s.value.size())));
    state_.push_back(std::move(s));
  }
  global_step_ = m.value("global_step", int64_t{0});
  restored_step_ = global_step_;
  saved_step_ = global_step_;
  restored_ = true;
  restored_from_ = ck.path;
  restored_meta_ = m.value("trainer", nlohmann::json::object()).dump();
  Log("restored " + ck.path + " (global step " + std::to_string(global_step_) + ")");
  return Status::OK();
}

nlohmann::json ParameterShard::StatusJson() const {
  ReaderLock l(table_mu_);
  nlohmann::json j;
  j["shard"] = options_.shard;
  j["num_shards"] = options_.num_shards;
  j["partitioner"] = options_.partitioner;
  j["initialized"] = initialized_;
  const double up = std::chrono::duration<double>(Clock::now() - start_).count();
  j["uptime_s"] = up;
  if (initialized_) {
    int64_t floats = rows_ * (1 + K_) * (1 + w_->num_slots());
    int64_t dense_floats = 0;
    for (const Dense& d : dense_) dense_floats += static_cast<int64_t>(d.value.size() * (1 + d.slots.size()));
    j["feature_size"] = part_.rows();
    j["rows"] = rows_;
    j["embedding_size"] = K_;
    j["dense_parameters"] = dense_.size();
    j["bytes"] = (floats + dense_floats) * 4;
    j["global_step"] = global_step_;
    j["sync_replicas"] = spec_.sync_replicas();
    j["num_workers"] = spec_.num_workers();
    j["max_staleness"] = spec_.max_staleness();
  }
  j["restored_from"] = restored_from_;
  j["pulls"] = pulls_.load();
  j["pushes"] = pushes_.load();
  j["pulled_rows"] = pulled_rows_.load();
  j["pushed_rows"] = pushed_rows_.load();
  j["bytes_received"] = bytes_in_.load();
  j["bytes_sent"] = bytes_out_.load();
  j["dropped_stale"] = dropped_stale_.load();
  j["dense_syncs"] = dense_syncs_.load();
  j["pull_seconds"] = pull_ns_.load() / 1e9;
  j["apply_seconds"] = apply_ns_.load() / 1e9;
  j["pulls_per_s"] = up > 0 ? pulls_.load() / up : 0.0;
  j["pushes_per_s"] = up > 0 ? pushes_.load() / up : 0.0;
  return j;
}

}  // namespace ctrain::ps
