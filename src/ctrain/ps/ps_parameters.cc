#include "ctrain/ps/ps_parameters.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "ctrain/optim/optimizer.h"
#include "ctrain/train/sharded_checkpoint.h"
#include "ctrain/train/trainer_state.h"

namespace ctrain::ps {
namespace {

proto::DenseTensor ToTensor(const model::DenseParam& p, bool with_values) {
  proto::DenseTensor t;
  t.set_name(p.name);
  for (int64_t d : p.shape) t.add_shape(d);
  if (with_values) t.set_values(reinterpret_cast<const char*>(p.value.data()), p.value.size() * sizeof(float));
  return t;
}

}  // namespace

StatusOr<std::unique_ptr<PsParameters>> PsParameters::Connect(const train::TrainOptions& options,
                                                               const PsTrainOptions& ps) {
  const int32_t W = ps.num_workers, k = ps.client.worker_index;
  if (W < 1) return InvalidArgumentError("--num-workers must be >= 1");
  if (k < 0 || k >= W)
    return InvalidArgumentError("--worker-index " + std::to_string(k) + " not in [0, " + std::to_string(W) + ")");
  if (ps.sync_replicas && ps.max_staleness > 0)
    return InvalidArgumentError("--max-staleness bounds asynchronous training; --sync-replicas has no stale gradients");
  if (ps.max_staleness < 0) return InvalidArgumentError("--max-staleness must be >= 0");
  std::unique_ptr<PsParameters> p(new PsParameters(options, ps));
  CTRAIN_ASSIGN_OR_RETURN(p->client_, PsClient::Connect(ps.client));
  return p;
}

std::string PsParameters::Describe() const {
  return "worker " + std::to_string(ps_.client.worker_index) + " of " + std::to_string(ps_.num_workers) + ", " +
         (ps_.sync_replicas ? "sync replicas" : "async");
}

Status PsParameters::Init(const std::vector<model::DenseParam>& dense, std::string* restored_meta,
                          int64_t* global_step) {
  proto::ModelSpec spec;
  spec.set_model_json(train::ModelConfigToJson(options_.model).dump());
  spec.set_optimizer_json(train::OptimizerConfigToJson(options_.optimizer).dump());
  spec.set_seed(options_.seed);
  spec.set_num_workers(ps_.num_workers);
  spec.set_sync_replicas(ps_.sync_replicas);
  spec.set_max_staleness(ps_.max_staleness);
  spec.set_dense_placement(ps_.dense_on_workers ? "workers/" + std::to_string(ps_.dense_sync_steps) : "servers");
  for (const auto& d : dense) *spec.add_dense() = ToTensor(d, true);
  CTRAIN_RETURN_IF_ERROR(client_->Init(spec));
  // The chief checkpoints through the servers: one that cannot write would fail at the first save, an epoch
  // later.
  if (ps_.client.worker_index == 0 && !options_.model_dir.empty()) {
    std::string names;
    for (int32_t s : client_->ShardsThatCannotSave())
      names += (names.empty() ? "" : ", ") + std::to_string(s) + " at " + client_->address(s);
    if (!names.empty())
      return FailedPreconditionError("--model-dir " + options_.model_dir +
                                     ": the chief (worker 0) checkpoints through the parameter servers, but shard " +
                                     names + " was started without --model-dir; start every `ctrain ps` with "
                                     "--model-dir, or train without --model-dir");
  }
  // The chief's export (after training) must fit the message limit and have a directory to go to: said now,
  // not after the training.
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<optim::Optimizer> opt, optim::MakeOptimizer(options_.optimizer));
  // Keeping the dense parameters, a worker pulls them with their slots at the start and the chief sends its
  // slots: in one message per server, as an export.
  if (ps_.dense_on_workers) CTRAIN_RETURN_IF_ERROR(client_->CheckDenseFits(opt->num_slots(), "--ps-dense workers"));
  if (ps_.client.worker_index == 0 && !ps_.export_dir.empty()) {
    CTRAIN_RETURN_IF_ERROR(client_->CheckDenseFits(opt->num_slots(), "--ps-export-dir"));
    std::error_code ec;
    std::filesystem::create_directories(ps_.export_dir, ec);
    if (ec || !std::filesystem::is_directory(ps_.export_dir))
      return InvalidArgumentError("--ps-export-dir " + ps_.export_dir + " is not a directory that can be created" +
                                  (ec ? ": " + ec.message() : std::string()));
  }
  *restored_meta = client_->restored_meta();
  *global_step = client_->initial_global_step();
  return Status::OK();
}

Status PsParameters::Pull(std::span<const int64_t> ids, float* w_rows, float* v_rows,
                          std::vector<model::DenseParam>* dense) {
  if (ps_.dense_on_workers && !pull_dense_) return client_->Pull(ids, w_rows, v_rows, nullptr);
  CTRAIN_RETURN_IF_ERROR(client_->Pull(ids, w_rows, v_rows, &dense_values_));
  if (ps_.dense_on_workers) {  // the servers' copy after this worker's delta: the new base
    pull_dense_ = false;
    dense_base_ = dense_values_;
  }
  if (dense_values_.size() != dense->size())
    return InternalError("the parameter servers sent " + std::to_string(dense_values_.size()) +
                         " dense parameters, the model has " + std::to_string(dense->size()));
  // Copied into the model's own buffers (their addresses stay: the layers may hold them).
  for (size_t i = 0; i < dense->size(); ++i) (*dense)[i].value = dense_values_[i];
  return Status::OK();
}

DenseState PsParameters::TakeDelta(const std::vector<model::DenseParam>& dense) {
  DenseState state;
  dense_delta_.resize(dense.size());
  for (size_t i = 0; i < dense.size(); ++i) {
    const std::vector<float>& x = dense[i].value;
    std::vector<float>& base = dense_base_[i];
    std::vector<float>& d = dense_delta_[i];
    d.resize(x.size());
    for (size_t e = 0; e < x.size(); ++e) d[e] = x[e] - base[e];
    base = x;  // a flush before the next pull sends only what follows
    state.delta.push_back(d.data());
  }
  return state;
}

Status PsParameters::Push(const model::SparseGrad& w, const model::SparseGrad& v,
                          const std::vector<model::DenseParam>* dense, float learning_rate, int64_t examples) {
  const bool has_w = !w.ids.empty(), has_v = !v.ids.empty();
  if (has_w && has_v && w.ids != v.ids) return InternalError("the step's w and V gradients have different ids");
  const std::vector<int64_t>& ids = has_v ? v.ids : w.ids;
  if (ps_.dense_on_workers) {  // the rows' gradients; every k-th push with W workers, the dense delta
    if (dense == nullptr) return InternalError("--ps-dense workers: a push without the dense parameters");
    const bool sync_now = ps_.num_workers > 1 && ++pushes_ % ps_.dense_sync_steps == 0;
    if (!sync_now)
      return client_->Push(ids, has_w ? w.grad.data() : nullptr, has_v ? v.grad.data() : nullptr, nullptr,
                           learning_rate, examples);
    const DenseState state = TakeDelta(*dense);
    CTRAIN_RETURN_IF_ERROR(client_->Push(ids, has_w ? w.grad.data() : nullptr, has_v ? v.grad.data() : nullptr,
                                         nullptr, learning_rate, examples, &state));
    pull_dense_ = true;
    return Status::OK();
  }
  if (dense == nullptr) return client_->Push({}, nullptr, nullptr, nullptr, learning_rate, examples);
  dense_grads_.clear();
  for (const auto& d : *dense) dense_grads_.push_back(d.grad.data());
  return client_->Push(ids, has_w ? w.grad.data() : nullptr, has_v ? v.grad.data() : nullptr, &dense_grads_,
                       learning_rate, examples);
}

Status PsParameters::PullState(std::vector<model::DenseParam>* state) {
  std::vector<proto::DenseTensor> got;
  CTRAIN_RETURN_IF_ERROR(client_->PullState(&got));
  const std::string where = "the parameter servers' checkpoint (shard 0 at " + client_->address(0) + ")";
  if (got.size() != state->size())
    return DataLossError(where + " holds " + std::to_string(got.size()) + " BN moving statistics, the model has " +
                         std::to_string(state->size()));
  for (const proto::DenseTensor& t : got) {
    auto it = std::find_if(state->begin(), state->end(), [&](const model::DenseParam& p) { return p.name == t.name(); });
    if (it == state->end() || t.values().size() != it->value.size() * sizeof(float))
      return DataLossError(where + ": BN statistics '" + t.name() + "' " +
                           (it == state->end() ? "are not the model's" : "have another size than the model's"));
    std::memcpy(it->value.data(), t.values().data(), t.values().size());
  }
  return Status::OK();
}

Status PsParameters::PullDenseState(std::vector<model::DenseParam>* dense,
                                    std::vector<std::vector<std::vector<float>>>* slots) {
  PulledSlots pulled;
  const size_t nslots = slots->empty() ? 0 : (*slots)[0].size();
  pulled.w.assign(nslots, nullptr);  // no rows
  pulled.v.assign(nslots, nullptr);
  CTRAIN_RETURN_IF_ERROR(client_->Pull({}, nullptr, nullptr, &dense_values_, &pulled));
  if (dense_values_.size() != dense->size() || slots->size() != dense->size())
    return InternalError("the parameter servers sent " + std::to_string(dense_values_.size()) +
                         " dense parameters, the model has " + std::to_string(dense->size()));
  for (size_t i = 0; i < dense->size(); ++i) {
    if (dense_values_[i].size() != (*dense)[i].value.size())
      return InternalError("dense parameter '" + (*dense)[i].name + "' has another size on the parameter servers");
    (*dense)[i].value = dense_values_[i];
    for (size_t k = 0; k < nslots; ++k) (*slots)[i][k] = pulled.dense[i][k];
  }
  dense_base_ = dense_values_;
  pull_dense_ = false;
  return Status::OK();
}

Status PsParameters::FlushDense(const std::vector<model::DenseParam>& dense,
                                const std::vector<std::vector<std::vector<float>>>* slots) {
  DenseState state;
  if (ps_.num_workers > 1) {
    state = TakeDelta(dense);
  } else {  // the one worker's values are the model's
    for (const auto& d : dense) state.values.push_back(d.value.data());
  }
  if (slots != nullptr)
    for (const auto& per_param : *slots) {
      state.slots.emplace_back();
      for (const auto& s : per_param) state.slots.back().push_back(s.data());
    }
  state.dense_only = true;
  return client_->Push({}, nullptr, nullptr, nullptr, 0.0f, 0, &state);
}

Status PsParameters::Save(const std::string& model_dir, const nlohmann::json& trainer_meta,
                          const std::vector<model::DenseParam>& state) {
  nlohmann::json meta = trainer_meta;
  meta["parameter_servers"] = {{"num_workers", ps_.num_workers},
                               {"sync_replicas", ps_.sync_replicas},
                               {"addresses", ps_.client.addresses}};
  std::vector<proto::DenseTensor> tensors;
  for (const auto& s : state) tensors.push_back(ToTensor(s, true));
  std::vector<std::string> paths;
  int64_t step = 0;
  CTRAIN_RETURN_IF_ERROR(client_->Save(meta, tensors, &paths, &step));
  meta["global_step"] = step;
  nlohmann::json files = nlohmann::json::array();
  for (const std::string& p : paths) files.push_back(train::ShardManifestEntry(model_dir, p));
  nlohmann::json manifest{{"format", train::kShardedManifestFormat},
                          {"step", step},
                          {"partitioner", std::string(client_->partitioner().name())},
                          {"num_shards", client_->num_shards()},
                          {"feature_size", options_.model.feature_size},
                          {"shards", files},
                          {"meta", meta}};
  CTRAIN_RETURN_IF_ERROR(train::WriteShardedManifest(model_dir, manifest));
  manifest_ = model_dir + "/" + train::kShardedManifestName;
  return Status::OK();
}

Status PsParameters::Export(const std::string& dir, const nlohmann::json& trainer_meta,
                            const std::vector<model::DenseParam>& dense, const std::vector<model::DenseParam>& state) {
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<optim::Optimizer> opt, optim::MakeOptimizer(options_.optimizer));
  const int32_t nslots = opt->num_slots();
  const int64_t F = options_.model.feature_size;
  const int64_t K = options_.model.embedding_size;
  std::vector<float> w(F), v(F * K);
  std::vector<std::vector<float>> ws(nslots, std::vector<float>(F)), vs(nslots, std::vector<float>(F * K));
  std::vector<std::vector<float>> dense_values;
  std::vector<std::vector<std::vector<float>>> dense_slots;
  constexpr int64_t kBlock = int64_t{1} << 20;
  std::vector<int64_t> ids;
  for (int64_t b = 0; b == 0 || b < F; b += kBlock) {
    const int64_t e = std::min(F, b + kBlock);
    ids.resize(static_cast<size_t>(e - b));
    std::iota(ids.begin(), ids.end(), b);
    PulledSlots slots;
    for (int32_t k = 0; k < nslots; ++k) {
      slots.w.push_back(ws[k].data() + b);
      slots.v.push_back(vs[k].data() + b * K);
    }
    CTRAIN_RETURN_IF_ERROR(client_->Pull(ids, w.data() + b, v.data() + b * K, b == 0 ? &dense_values : nullptr, &slots));
    if (b == 0) dense_slots = std::move(slots.dense);
  }
  if (dense_values.size() != dense.size())
    return InternalError("the parameter servers sent " + std::to_string(dense_values.size()) +
                         " dense parameters, the model has " + std::to_string(dense.size()));
  // The names and shapes of a local checkpoint (train/trainer_checkpoint.cc Tensors()).
  train::CheckpointTensors t;
  t.Add("embeddings/w", {F}, w.data(), w.size());
  t.Add("embeddings/V", {F, K}, v.data(), v.size());
  for (int32_t k = 0; k < nslots; ++k) {
    const std::string slot(opt->SlotName(k));
    t.Add("embeddings/w/" + slot, {F}, ws[k].data(), ws[k].size());
    t.Add("embeddings/V/" + slot, {F, K}, vs[k].data(), vs[k].size());
  }
  for (size_t i = 0; i < dense.size(); ++i) {
    if (dense_values[i].size() != dense[i].value.size())
      return InternalError("dense parameter '" + dense[i].name + "' has another size on the parameter servers");
    t.Add(dense[i].name, dense[i].shape, dense_values[i].data(), dense_values[i].size());
    for (int32_t k = 0; k < nslots; ++k)
      t.Add(dense[i].name + "/" + std::string(opt->SlotName(k)), dense[i].shape, dense_slots[i][k].data(),
            dense_slots[i][k].size());
  }
  std::vector<std::vector<float>> state_values;
  for (const auto& s : state) state_values.push_back(s.value);
  for (size_t i = 0; i < state.size(); ++i)
    t.Add(state[i].name, state[i].shape, state_values[i].data(), state_values[i].size());
  nlohmann::json meta = trainer_meta;
  // The servers' global step (with several workers, more than this worker's own steps).
  meta["global_step"] = client_->last_version(0);
  meta["exported_from_parameter_servers"] = {{"addresses", ps_.client.addresses},
                                             {"num_workers", ps_.num_workers},
                                             {"sync_replicas", ps_.sync_replicas}};
  return train::WriteTrainerCheckpoint(dir, meta.value("global_step", int64_t{0}), t, meta, /*keep=*/1);
}

}  // namespace ctrain::ps
