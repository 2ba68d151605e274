#include "ctrain/train/trainer_state.h"

#include <cstring>

namespace ctrain::train {

// ---- EmbeddingTables ----

Status EmbeddingTables::Init(const model::DeepFMConfig& config, const optim::Optimizer& optimizer, uint64_t seed) {
  CTRAIN_RETURN_IF_ERROR(config.Validate());
  rows_ = config.feature_size;
  dim_ = config.embedding_size;
  w_.assign(rows_, 0.0f);
  v_.assign(rows_ * dim_, 0.0f);
  model::DeepFM::InitEmbeddings(seed, rows_, dim_, w_.data(), v_.data());
  const int S = optimizer.num_slots();
  w_slots_.resize(S);
  v_slots_.resize(S);
  w_slot_ptrs_.resize(S);
  v_slot_ptrs_.resize(S);
  for (int k = 0; k < S; ++k) {
    w_slots_[k].assign(rows_, optimizer.SlotInit(k));
    v_slots_[k].assign(rows_ * dim_, optimizer.SlotInit(k));
    w_slot_ptrs_[k] = w_slots_[k].data();
    v_slot_ptrs_[k] = v_slots_[k].data();
  }
  return Status::OK();
}

void EmbeddingTables::Pull(const std::vector<int64_t>& ids, float* w_rows, float* v_rows) const {
  const size_t n = ids.size();
  for (size_t i = 0; i < n; ++i) w_rows[i] = w_[ids[i]];
  for (size_t i = 0; i < n; ++i) std::memcpy(v_rows + i * dim_, v_.data() + ids[i] * dim_, dim_ * sizeof(float));
}

void EmbeddingTables::Push(const optim::Optimizer& optimizer, const model::SparseGrad& w_grad,
                           const model::SparseGrad& v_grad, int64_t step) {
  if (!w_grad.ids.empty())
    optimizer.ApplySparse(w_.data(), w_slot_ptrs_.data(), 1, w_grad.ids, w_grad.grad.data(), step);
  if (!v_grad.ids.empty())
    optimizer.ApplySparse(v_.data(), v_slot_ptrs_.data(), dim_, v_grad.ids, v_grad.grad.data(), step);
}

void EmbeddingTables::AddTensors(const optim::Optimizer& optimizer, CheckpointTensors* t) {
  t->Add("embeddings/w", {rows_}, w_.data(), w_.size());
  t->Add("embeddings/V", {rows_, dim_}, v_.data(), v_.size());
  for (int k = 0; k < optimizer.num_slots(); ++k) {
    const std::string slot(optimizer.SlotName(k));
    t->Add("embeddings/w/" + slot, {rows_}, w_slots_[k].data(), w_slots_[k].size());
    t->Add("embeddings/V/" + slot, {rows_, dim_}, v_slots_[k].data(), v_slots_[k].size());
  }
}

// ---- checkpoint files (train/checkpoint.h) ----

Status LoadedCheckpoint::CopyInto(const CheckpointTensors& t) const {
  for (const auto& ref : t.refs) {
    const NamedTensor* x = ckpt.Find(ref.name);
    if (x == nullptr) return NotFoundError(ckpt.path + ": no tensor '" + ref.name + "'");
    if (x->dtype != DType::kF32 || x->shape != ref.shape || x->f32.size() != ref.count)
      return InvalidArgumentError(ckpt.path + ": tensor '" + ref.name + "' has " + std::to_string(x->f32.size()) +
                                  " float values, the model expects " + std::to_string(ref.count));
    std::memcpy(ref.data, x->f32.data(), ref.count * sizeof(float));
  }
  return Status::OK();
}

Status WriteTrainerCheckpoint(const std::string& model_dir, int64_t step, const CheckpointTensors& tensors,
                              const nlohmann::json& meta, int32_t keep) {
  std::vector<TensorRef> refs;
  refs.reserve(tensors.refs.size());
  for (const auto& t : tensors.refs) refs.push_back(TensorRef::F32(t.name, t.shape, t.data));
  CheckpointOptions o;
  o.keep_last = keep;
  return SaveCheckpoint(model_dir, step, refs, meta, o);
}

StatusOr<std::optional<LoadedCheckpoint>> ReadTrainerCheckpoint(const std::string& model_dir) {
  StatusOr<std::string> latest = LatestCheckpointPath(model_dir);
  if (!latest.ok()) {
    if (latest.status().code() == StatusCode::kNotFound) return std::optional<LoadedCheckpoint>();
    return latest.status();
  }
  CTRAIN_ASSIGN_OR_RETURN(Checkpoint ck, LoadLatestCheckpoint(model_dir));
  LoadedCheckpoint out;
  out.path = ck.path;
  out.step = ck.step;
  out.meta = ck.meta;
  out.ckpt = std::move(ck);
  return std::optional<LoadedCheckpoint>(std::move(out));
}

}  // namespace ctrain::train
