// DeepFM (Guo et al. 2017, "DeepFM: A Factorization-Machine based Neural
// Network for CTR Prediction"), as in the seed TF code lambdaji/tf_repos
// deep_ctr/Model_pipeline/DeepFM.py. Math, shapes and FLOP counts: docs/model.md.
//
//   e[b,f,:]  = V[ids[b,f], :] * values[b,f]                      [B, F, K]
//   y_first   = sum_f w[ids[b,f]] * values[b,f]                    [B]
//   y_fm      = 1/2 sum_k ((sum_f e)^2 - sum_f e^2)                 [B]
//   y_deep    = MLP(flatten(e)): per hidden layer
//               Linear -> ReLU -> [BatchNorm] -> Dropout, then Linear(->1)
//   logit     = bias + y_first + y_fm + y_deep
//   loss      = mean_b sigmoid_xent(logit, label) + l2
//   l2        = l2_reg * ( sum_{u in unique ids} w[u]^2 + sum_{u} ||V[u,:]||^2 )
//
// Parameter ownership: the model owns only the dense parameters (bias, MLP,
// BN). The tables w [feature_size] and V [feature_size, K] live with the
// caller (in-process arrays now, a parameter server later). Per step the caller
//   1. model::UniqueIds(batch, &unique_ids, &index) (model/model.h)
//   2. gathers w_rows [U] and v_rows [U, K] for unique_ids from its tables,
//   3. calls TrainStep, which fills the dense grads and the sparse grads,
//   4. applies its optimizers (this class never updates a parameter, except the
//      BN moving statistics, which are state, not trained).
//
// Switches: use_first_order / use_fm / use_deep select terms, giving LR
// (first order only) and FM (first + second order) as special cases. A table
// no enabled term reads is not touched: its rows pointer may be null, its l2
// term is 0 and its SparseGrad comes back empty.
//
// Determinism: for a fixed OpenMP thread count, TrainStep/Predict produce the
// same bits on every run; reductions run in a fixed order; dropout masks are a
// function of (seed, step, layer, element).
// Memory: activations and gradients are allocated when the batch size changes
// and reused otherwise; a steady-state step allocates nothing.
// Thread safety: a DeepFM object is used by one thread at a time (its kernels
// use OpenMP internally).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/batch.h"
#include "ctrain/model/layers/embedding_lookup.h"
#include "ctrain/model/layers/fully_connected.h"
#include "ctrain/model/model.h"

namespace ctrain::model {

// DeepFM's hyper-parameters are model::ModelConfig's (model/model.h).
using DeepFMConfig = ModelConfig;

class DeepFM final : public Model {
 public:
  // An invalid config is reported by every TrainStep/Predict (see Validate) and by status().
  explicit DeepFM(DeepFMConfig config);
  DeepFM(const DeepFM&) = delete;
  DeepFM& operator=(const DeepFM&) = delete;

  const DeepFMConfig& config() const { return config_; }
  std::string_view kind() const override { return "deepfm"; }
  const Status& status() const override { return status_; }

  // Trainable dense parameters, in this order: fm_bias [1]; then, if use_deep,
  // for each hidden layer i: mlp{i}/weights [in, out], mlp{i}/biases [out],
  // (if batch_norm) bn_{i}/gamma [out], bn_{i}/beta [out]; then
  // deep_out/weights [last, 1], deep_out/biases [1]. Callers may change values,
  // never sizes.
  std::vector<DenseParam>& dense_params() override { return dense_; }
  // Non-trainable state for checkpoints: bn_{i}/moving_mean, bn_{i}/moving_variance [out]
  // (empty without batch_norm). Updated by TrainStep.
  std::vector<DenseParam>& state() override { return state_; }

  // Initialises dense params like the seed: MLP weights Glorot-uniform
  // (tf.contrib.layers.xavier_initializer, limit sqrt(6/(in+out))), biases 0,
  // gamma 1, beta 0, moving mean 0, moving variance 1. Deterministic in seed.
  void InitDense(uint64_t seed) override;

  // Multi-hot batches (data::Batch::field_splits set) pool each field as the
  // weighted sum of its ids' embeddings (layers/pooled_embedding.h); the
  // first-order term sums w[id] * value over every id. Everything after the
  // pooled e[b,f,:] (FM, MLP) is the one-hot model. A one-hot batch and a
  // multi-hot batch with one id per field give the same bits.

  // Forward + backward on a batch in training mode (batch BN stats, dropout).
  //   unique_ids, index: from UniqueIds(batch)
  //   w_rows [U], v_rows [U, K]: the table rows of unique_ids
  //   step: selects the dropout masks (same step => same masks)
  // Fills every dense_params()[i].grad, *w_grad (dim 1) and *v_grad (dim K),
  // updates BN moving stats, and writes the loss terms to *loss.
  // Errors:
  //   FailedPrecondition: the config is invalid (message from Validate).
  //   InvalidArgument: variable-length batch (row_splits), bad field_splits,
  //     batch.field_size != config, empty
  //     batch, index/unique_ids inconsistent with batch.ids (names position p),
  //     or null rows for an enabled table.
  //   InvalidArgument "step S: loss is not finite (term: logloss|l2) ...": a NaN/Inf
  //     loss term (as TF's CheckNumerics); *loss is filled, gradients are
  //     unspecified and must not be applied.
  //   FailedPrecondition: gemm_dtype is kBF16 and the CPU lacks AVX512_BF16
  //     ("fully_connected mb..ic..oc.. bf16: bf16 GEMM needs a CPU with AVX512_BF16 ...").
  //   Internal: oneDNN failed to create a primitive.
  Status TrainStep(const data::Batch& batch, std::span<const int64_t> unique_ids, std::span<const int32_t> index,
                   const float* w_rows, const float* v_rows, int64_t step, SparseGrad* w_grad, SparseGrad* v_grad,
                   LossTerms* loss) override;

  // Inference mode (no dropout, BN moving stats): probs [B] = sigmoid(logit).
  // Errors as TrainStep (except the loss check).
  Status Predict(const data::Batch& batch, std::span<const int64_t> unique_ids, std::span<const int32_t> index,
                 const float* w_rows, const float* v_rows, float* probs) override;

  // Logits of the last TrainStep/Predict [B].
  std::span<const float> logits() const { return {logits_.data(), static_cast<size_t>(batch_size_)}; }

  // Floating-point operations of the MLP GEMMs per training example (forward +
  // backward data + backward weights: 3 x 2 x in x out per layer).
  double GemmFlopsPerExample() const override;

 private:
  bool uses_v() const { return config_.use_fm || config_.use_deep; }
  Status Check(const data::Batch& batch, std::span<const int64_t> unique_ids, std::span<const int32_t> index,
               const float* w_rows, const float* v_rows) const;
  Status Resize(int64_t B);
  void Forward(const data::Batch& batch, std::span<const int32_t> index, const float* w_rows, const float* v_rows,
               bool training, int64_t step);

  DeepFMConfig config_;
  Status status_;
  std::vector<DenseParam> dense_;
  std::vector<DenseParam> state_;
  // Indices into dense_ / state_.
  int bias_ = 0;
  std::vector<int> wei_, bia_, gamma_, beta_, mmean_, mvar_;  // per linear layer (hidden layers + output)
  std::vector<int32_t> widths_;  // [F*K, hidden..., 1]
  std::vector<FullyConnected> fc_;

  // Per-batch buffers (sized for batch_size_).
  int64_t batch_size_ = 0;
  std::vector<float> e_, d_e_, fm_sum_, y_first_, y_fm_, y_deep_, logits_, d_logits_, g0_, g1_;
  std::vector<std::vector<float>> act_, xhat_, bn_out_, inv_std_, mask_, drop_;
  std::vector<const float*> layer_in_;  // input of linear layer i
  RowPositions positions_;
  std::vector<int32_t> slot_of_;  // multi-hot batches: (row, field) slot of each id occurrence
};

}  // namespace ctrain::model
