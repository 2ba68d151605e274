// RemoteParameters: the trainer's parameters when they live outside this
// process, with their optimizer: the parameter servers (ps/ps_parameters.h,
// docs/parameter-servers.md). Given to Trainer::Create, it replaces the local
// tables, the dense optimizer and the local checkpoint files; everything else
// (the step loop, schedules, evaluation, early stopping, observers, stop
// requests, progress) is the same code as local training.
//
// Per step the trainer calls Pull once (the step's unique ids: rows of w
// [n, 1] and V [n, K], and every dense parameter's current value) and Push once
// (the step's sparse and dense gradients, the step's scheduled learning rate
// and its example count). Evaluation pulls the same way and pushes nothing.
//
// Dense parameters kept on the worker (keeps_dense(), `--ps-dense workers`):
// the trainer runs the dense optimizer itself, with its own slots, before each
// Push, as local training does; Pull overwrites the dense values only when the
// servers' copy moved under them (other workers' progress, averaged in every
// --ps-dense-sync-steps steps). The trainer starts from PullDenseState and
// calls FlushDense before each checkpoint, before an export and at the end.
//
// Batches among workers (Trainer::Train, memory mode): worker k of W takes
// batch i * W + k of each epoch's batches (the epoch order is local
// training's). Async: only the batches that exist, ceil((S - k) / W) of an
// epoch of S. Sync replicas: ceil(S / W) rounds; a worker without a batch in
// the last round pushes an empty gradient of weight 0 (one sync worker runs
// exactly local training's steps).
//
// Thread safety: called from the training thread only.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/model/deepfm.h"

namespace ctrain::train {

class RemoteParameters {
 public:
  virtual ~RemoteParameters() = default;

  // Declares the model to the servers: `dense` holds the initial dense values
  // (the servers keep them unless they restored a checkpoint). *restored_meta:
  // the trainer meta of the checkpoint they restored ("" = a fresh start);
  // *global_step: the updates the servers applied so far.
  virtual Status Init(const std::vector<model::DenseParam>& dense, std::string* restored_meta,
                      int64_t* global_step) = 0;
  // ids unique, any order: w_rows [n], v_rows [n, K]; every dense value into
  // (*dense)[i].value.
  virtual Status Pull(std::span<const int64_t> ids, float* w_rows, float* v_rows,
                      std::vector<model::DenseParam>* dense) = 0;
  // The step's gradients: w and V rows (ids strictly increasing; either may be
  // empty), `dense` (null: none, the empty push of a sync round without a
  // batch), applied with `learning_rate`; `examples` weighs the push.
  virtual Status Push(const model::SparseGrad& w, const model::SparseGrad& v,
                      const std::vector<model::DenseParam>* dense, float learning_rate, int64_t examples) = 0;
  // A checkpoint of the servers' parameters and slots, with this trainer's
  // meta (TrainPosition, schedules, early stopping) and `state` (BN moving
  // statistics), into `model_dir`. Called by the chief only.
  virtual Status Save(const std::string& model_dir, const nlohmann::json& meta,
                      const std::vector<model::DenseParam>& state) = 0;
  // The whole model as ONE local checkpoint in `dir` (train/trainer_state.h
  // WriteTrainerCheckpoint: every row of the tables, the dense parameters,
  // their optimizer slots, `state`, with `meta`), gathered from the servers:
  // what `ctrain predict`, `eval`, `export` and a warm start read on a host
  // that cannot see the servers' checkpoint files. `dense`: the model's dense
  // parameters (names and shapes). Called by the chief after training.
  virtual Status Export(const std::string& dir, const nlohmann::json& meta,
                        const std::vector<model::DenseParam>& dense,
                        const std::vector<model::DenseParam>& state) = 0;

  // After Init restored a checkpoint: the BN moving statistics the chief saved with it into (*state)[i].value.
  // DataLoss when the checkpoint holds none, or others than the model's (named).
  virtual Status PullState(std::vector<model::DenseParam>* state) = 0;
  // The dense parameters and their optimizer live in this worker (above).
  virtual bool keeps_dense() const = 0;
  // keeps_dense: the servers' dense values (a restored checkpoint's, or Init's) into (*dense)[i].value and
  // their optimizer slots into (*slots)[i][k] (sized by the caller).
  virtual Status PullDenseState(std::vector<model::DenseParam>* dense,
                                std::vector<std::vector<std::vector<float>>>* slots) = 0;
  // keeps_dense: this worker's dense progress to the servers now, not a training step; with `slots` (the
  // chief: the values of its dense optimizer slots) the servers keep those too.
  virtual Status FlushDense(const std::vector<model::DenseParam>& dense,
                            const std::vector<std::vector<std::vector<float>>>* slots) = 0;

  virtual int32_t num_workers() const = 0;
  virtual int32_t worker_index() const = 0;
  virtual bool sync_replicas() const = 0;
  // What the trainer logs as this process ("worker 1 of 2, sync replicas").
  virtual std::string Describe() const = 0;
};

}  // namespace ctrain::train
