#include "ctrain/train/trainer_state.h"

#include <cstring>

#include "ctrain/train/keyed_checkpoint.h"
#include "ctrain/train/sharded_checkpoint.h"

namespace ctrain::train {

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
                              const nlohmann::json& meta, int32_t keep, const std::string& base) {
  std::vector<TensorRef> refs;
  refs.reserve(tensors.refs.size());
  for (const auto& t : tensors.refs) refs.push_back(TensorRef::F32(t.name, t.shape, t.data));
  refs.insert(refs.end(), tensors.i64.begin(), tensors.i64.end());
  CheckpointOptions o;
  o.keep_last = keep;
  o.base = base;
  return SaveCheckpoint(model_dir, step, refs, meta, o);
}

StatusOr<std::optional<LoadedCheckpoint>> ReadTrainerCheckpoint(const std::string& model_dir) {
  StatusOr<std::string> latest = LatestCheckpointPath(model_dir);
  if (!latest.ok()) {
    // No local checkpoint: a parameter-server job's sharded one, if any (train/sharded_checkpoint.h).
    if (latest.status().code() == StatusCode::kNotFound) return ReadShardedCheckpoint(model_dir);
    return latest.status();
  }
  CTRAIN_ASSIGN_OR_RETURN(Checkpoint latest_ck, LoadLatestCheckpoint(model_dir));
  // An incremental checkpoint of a keyed table: composed with its full one (train/keyed_checkpoint.h).
  CTRAIN_ASSIGN_OR_RETURN(Checkpoint ck, WithKeyedBase(std::move(latest_ck)));
  LoadedCheckpoint out;
  out.path = ck.path;
  out.step = ck.step;
  out.meta = ck.meta;
  out.ckpt = std::move(ck);
  return std::optional<LoadedCheckpoint>(std::move(out));
}

}  // namespace ctrain::train
