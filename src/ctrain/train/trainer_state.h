// The trainer's persistent state: the training position and the checkpoint
// files that hold the trainer's tensors. The embedding tables themselves are
// train/parameter_table.h LocalParameterTables (w [feature_size, 1] and
// V [feature_size, K] with their optimizer slots); the trainer lists their
// memory here as "embeddings/w" [feature_size], "embeddings/V"
// [feature_size, K] and "embeddings/<w|V>/<slot>" (docs/checkpoint.md).
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
  // Tensors saved beside them, as they are: the keyed table's integer tensors and its gathered rows
  // (TensorRef::rows; trainer_keyed.cc).
  std::vector<TensorRef> i64;
  void Add(std::string name, std::vector<int64_t> shape, float* data, size_t count) {
    refs.push_back({std::move(name), std::move(shape), data, count});
  }
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
// base: the full checkpoint an incremental one extends (CheckpointOptions::base).
Status WriteTrainerCheckpoint(const std::string& model_dir, int64_t step, const CheckpointTensors& tensors,
                              const nlohmann::json& meta, int32_t keep, const std::string& base = "");
// The newest checkpoint of model_dir, or nullopt when there is none (no
// index). Errors: LoadLatestCheckpoint's (DataLoss naming file and offset).
StatusOr<std::optional<LoadedCheckpoint>> ReadTrainerCheckpoint(const std::string& model_dir);

}  // namespace ctrain::train
