// The trainer's persistent state: the embedding tables with their optimizer
// slots, the training position, and the checkpoint files that hold them.
//
// EmbeddingTables: w [feature_size] and V [feature_size, K] plus, for each
// optimizer slot, a table of the same shape. Pull copies rows out; Push
// applies the optimizer to the rows of a SparseGrad only (lazy: untouched rows
// and their slots are not read or written). Pull/Push from several threads at
// once are allowed and unsynchronised (Hogwild!): a row may be read while it
// is written.
//
// Checkpoints are train/checkpoint.h files (atomic, CRC-checked, newest
// `keep` kept); this file only maps the trainer's tensors onto them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/model/deepfm.h"
#include "ctrain/optim/optimizer.h"
#include "ctrain/train/checkpoint.h"

namespace ctrain::train {

// Where training stands (saved in checkpoint meta).
struct TrainPosition {
  int64_t global_step = 0;      // updates applied
  int64_t epoch = 0;            // 0-based epoch in progress
  int64_t batch_in_epoch = 0;   // batches of that epoch already applied
  int64_t examples = 0;         // training examples consumed
  int64_t train_rows = 0;       // rows of the training set (0 = not started)
};

// Views of the tensors a checkpoint holds (the memory belongs to the trainer).
struct CheckpointTensors {
  struct Ref {
    std::string name;
    std::vector<int64_t> shape;
    float* data = nullptr;
    size_t count = 0;
  };
  std::vector<Ref> refs;
  void Add(std::string name, std::vector<int64_t> shape, float* data, size_t count) {
    refs.push_back({std::move(name), std::move(shape), data, count});
  }
};

class EmbeddingTables {
 public:
  // Allocates and initialises w and V like the seed (DeepFM::InitEmbeddings)
  // and the optimizer slots (SlotInit). Errors: InvalidArgument for a bad config.
  Status Init(const model::DeepFMConfig& config, const optim::Optimizer& optimizer, uint64_t seed);
  // w_rows[i] = w[ids[i]], v_rows[i, :] = V[ids[i], :]. REQUIRES: ids in range.
  void Pull(const std::vector<int64_t>& ids, float* w_rows, float* v_rows) const;
  // Applies the optimizer to the rows of the two grads (each may be empty).
  void Push(const optim::Optimizer& optimizer, const model::SparseGrad& w_grad, const model::SparseGrad& v_grad,
            int64_t step);
  // Adds w, V and their slots ("embeddings/w", "embeddings/w/<slot>", ...).
  void AddTensors(const optim::Optimizer& optimizer, CheckpointTensors* t);

 private:
  int64_t rows_ = 0;
  int32_t dim_ = 0;
  std::vector<float> w_, v_;
  std::vector<std::vector<float>> w_slots_, v_slots_;
  std::vector<float*> w_slot_ptrs_, v_slot_ptrs_;
};

struct LoadedCheckpoint {
  std::string path;
  int64_t step = 0;
  nlohmann::json meta;
  Checkpoint ckpt;
  // Copies every tensor of `t` from this checkpoint. Errors: NotFound naming a
  // missing tensor; InvalidArgument for a dtype/shape/size mismatch.
  Status CopyInto(const CheckpointTensors& t) const;
};

// Writes checkpoint `step` and keeps the newest `keep`. Creates model_dir.
Status WriteTrainerCheckpoint(const std::string& model_dir, int64_t step, const CheckpointTensors& tensors,
                              const nlohmann::json& meta, int32_t keep);
// The newest checkpoint of model_dir, or nullopt when there is none (no
// index). Errors: LoadLatestCheckpoint's (DataLoss naming file and offset).
StatusOr<std::optional<LoadedCheckpoint>> ReadTrainerCheckpoint(const std::string& model_dir);

}  // namespace ctrain::train
