// PsParameters: the parameter servers as the trainer's RemoteParameters
// (train/remote_parameters.h, docs/parameter-servers.md). One Pull and one
// Push call per shard per step, in parallel (ps/client.h): the rows of w and V
// travel together. The rows' optimizer runs on the servers; the learning rate
// of each push is the trainer's scheduled rate. The dense parameters
// (--ps-dense):
//   servers  each server's calls also carry the dense parameters it holds
//            (ps/dense_placement.h) and their gradients; its optimizer
//            updates them. 2 x the dense bytes per step.
//   workers  the worker keeps them and runs their optimizer. One worker:
//            they never travel during training (the servers get its values
//            and slots before a checkpoint, an export and at the end;
//            training is local training's, bit for bit). W workers: every
//            --ps-dense-sync-steps k steps a push carries the worker's
//            delta (values - those last pulled) and the next pull the
//            servers' values, to which the servers add each delta / W
//            (model averaging; sync replicas: a round's in worker order;
//            Downpour SGD's push/fetch cycle otherwise). A worker's
//            dense values are at most k of its own steps away from the
//            servers' copy. 2 x the dense bytes per k steps.
//
// Save (the chief): every shard writes its part (train/sharded_checkpoint.h),
// then the manifest in model_dir names them, with the trainer's meta and the
// "parameter_servers" layout (num_workers, sync_replicas, addresses).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/ps/client.h"
#include "ctrain/train/remote_parameters.h"
#include "ctrain/train/train_config.h"

namespace ctrain::ps {

struct PsTrainOptions {
  ClientOptions client;       // servers, security, worker_index, wait bound, stop flag
  int32_t num_workers = 1;
  bool sync_replicas = false;
  int64_t max_staleness = 0;  // async only; 0 = no bound
  std::string export_dir;     // chief: the whole model as one local checkpoint here after training ("" = none)
  bool dense_on_workers = false;  // --ps-dense workers (resolved from auto)
  int64_t dense_sync_steps = 1;   // --ps-dense-sync-steps: workers, W > 1
};

class PsParameters final : public train::RemoteParameters {
 public:
  // Connects (no call yet). Errors: InvalidArgument for a worker index outside
  // [0, num_workers), num_workers < 1, max_staleness < 0 or with sync_replicas;
  // PsClient::Connect's.
  static StatusOr<std::unique_ptr<PsParameters>> Connect(const train::TrainOptions& options,
                                                         const PsTrainOptions& ps);

  Status Init(const std::vector<model::DenseParam>& dense, std::string* restored_meta, int64_t* global_step) override;
  Status Pull(std::span<const int64_t> ids, float* w_rows, float* v_rows,
              std::vector<model::DenseParam>* dense) override;
  Status Push(const model::SparseGrad& w, const model::SparseGrad& v, const std::vector<model::DenseParam>* dense,
              float learning_rate, int64_t examples) override;
  Status Save(const std::string& model_dir, const nlohmann::json& meta,
              const std::vector<model::DenseParam>& state) override;
  // Pulls every row with its optimizer slots in blocks of 2^20 ids (each split to the message
  // size limit, ps/chunking.h). Errors: the client's; the checkpoint writer's (path named).
  Status Export(const std::string& dir, const nlohmann::json& meta, const std::vector<model::DenseParam>& dense,
                const std::vector<model::DenseParam>& state) override;
  Status PullState(std::vector<model::DenseParam>* state) override;
  bool keeps_dense() const override { return ps_.dense_on_workers; }
  Status PullDenseState(std::vector<model::DenseParam>* dense,
                        std::vector<std::vector<std::vector<float>>>* slots) override;
  Status FlushDense(const std::vector<model::DenseParam>& dense,
                    const std::vector<std::vector<std::vector<float>>>* slots) override;
  int32_t num_workers() const override { return ps_.num_workers; }
  int32_t worker_index() const override { return ps_.client.worker_index; }
  bool sync_replicas() const override { return ps_.sync_replicas; }
  std::string Describe() const override;

  PsClient& client() { return *client_; }
  const ClientOptions& client_options() const { return ps_.client; }
  const PsTrainOptions& ps_options() const { return ps_; }
  // The manifest written last ("" = none).
  const std::string& manifest() const { return manifest_; }

 private:
  PsParameters(const train::TrainOptions& options, const PsTrainOptions& ps) : options_(options), ps_(ps) {}
  train::TrainOptions options_;
  PsTrainOptions ps_;
  std::unique_ptr<PsClient> client_;
  std::vector<std::vector<float>> dense_values_;
  std::vector<const float*> dense_grads_;
  std::string manifest_;
  // keeps_dense with W > 1: the dense values last pulled, the pushes so far, a pull owed after a delta.
  std::vector<std::vector<float>> dense_base_, dense_delta_;
  int64_t pushes_ = 0;
  bool pull_dense_ = false;
  // Fills dense_delta_ with values - dense_base_ and moves the base to the values; the state's pointers.
  DenseState TakeDelta(const std::vector<model::DenseParam>& dense);
};

}  // namespace ctrain::ps
