// DLRM (Naumov et al. 2019, "Deep Learning Recommendation Model for
// Personalization and Recommendation Systems", arXiv:1906.00091), as
// facebookresearch/dlrm's dlrm_s_pytorch.py with --arch-interaction-op=dot
// (its default, no self-interaction) and FuxiCTR's DLRM (interaction_op
// "dot"). Math, shapes, FLOPs and the mapping to both: docs/model.md#dlrm.
//
// A batch has F fields of (id, value); the first N = config.num_dense_fields
// are dense, the remaining C = F - N categorical:
//   d[b, :]   = (values[b, 0], ..., values[b, N-1])                 [B, N]
//   x[b, :]   = bottom(d[b, :])                                     [B, K]   (N > 0 only)
//               bottom: an Mlp with hidden widths bottom_mlp + [K], each
//               Linear -> ReLU -> [BatchNorm] -> [Dropout], no output layer
//               (ReLU on every bottom layer, as the reference)
//   e[b,f,:]  = V[ids[b,f], :] * values[b,f]                       [B, F, K]   (the embedding stage)
//   T vectors = (x, e[b,N,:], ..., e[b,F-1,:])   T = C + 1; without dense fields (N = 0): (e[b,0,:], ...), T = F
//   z[b, :]   = <t_i, t_j> for 0 <= i < j < T, the reference's order     [B, P], P = T (T - 1) / 2
//               (layers/dot_interaction.h)
//   r[b, :]   = (x[b, :], z[b, :]) when N > 0, else z[b, :]         [B, R], R = K [N > 0] + P
//   y_top     = top(r): Mlp, hidden widths top_mlp (same layer order), then Linear -> 1
//   logit     = bias + y_top; loss = mean_b sigmoid_xent(logit, label) + l2 (EmbeddingModel's)
// The reference ends in a sigmoid; here the logit feeds the shared loss.
// DLRM has no first-order term: it does not read w (ModelConfig::reads_w()).
//
// The dense fields' ids: the embedding stage (model/embedding_model.h)
// gathers and value-scales every field, so e[b, f, :] for f < N exists but
// is not read by the head: its d_e is zero. The caller still gathers those
// rows, and the rows receive a SparseGrad of exactly 2 * l2_reg * V[u, :]
// (zero without l2) that the optimizer applies; the l2 term counts them. This
// touches only rows no dlrm prediction reads (an id a categorical field also
// uses gets that field's gradient added, and its l2 counted once, as for any
// id), so training and predictions are those of a model without them; the cost
// is N extra K-wide gathers per example and N dead rows per dense field id in
// the table (Criteo: 13 rows). docs/model.md#dlrm says the same.
//
// Multi-hot batches (data::Batch::field_splits): the categorical fields pool
// as for every model; each dense field must hold exactly one (id, value) per
// row, else TrainStep/Predict fail with InvalidArgument naming the row and field.
//
// Errors (TrainStep/Predict): EmbeddingModel's, the multi-hot dense-field
// refusal above, and FullyConnected's (bf16 without AVX512_BF16). Config
// errors (status(), from ModelConfig::Validate): num_dense_fields outside
// [0, F], or no vector to feed the top MLP (N = 0 with F < 2).
// Determinism, memory, thread safety: as DeepFM (model/deepfm.h); the bottom
// MLP's dropout streams are layers 0..L_b (L_b = bottom_mlp.size()), the top
// MLP's follow from L_b + 1.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ctrain/model/embedding_model.h"
#include "ctrain/model/layers/mlp.h"
#include "ctrain/model/model.h"

namespace ctrain::model {

class Dlrm final : public EmbeddingModel {
 public:
  // config.kind must be "dlrm". An invalid config is reported by status() and every TrainStep/Predict.
  explicit Dlrm(ModelConfig config);
  Dlrm(const Dlrm&) = delete;
  Dlrm& operator=(const Dlrm&) = delete;

  // Trainable dense parameters, in this order: bias [1]; with N > 0, for each bottom layer i
  // (i < L_b + 1, the last of width K): bot_mlp{i}/weights [in, out], bot_mlp{i}/biases [out],
  // (if batch_norm) bot_bn_{i}/gamma, bot_bn_{i}/beta [out]; then for each top hidden layer i:
  // top_mlp{i}/weights, top_mlp{i}/biases, (if batch_norm) top_bn_{i}/gamma, top_bn_{i}/beta;
  // then top_out/weights [last, 1], top_out/biases [1]. State: the BN moving statistics
  // (bot_bn_{i}/..., top_bn_{i}/moving_mean|moving_variance). Initialisation: InitDenseParams
  // (Glorot-uniform weights, zero biases, gamma 1); see docs/model.md#dlrm for the reference's.

  // Overridden only to refuse a multi-hot dense field before the step runs (then EmbeddingModel's).
  Status TrainStep(const data::Batch& batch, std::span<const int64_t> unique_ids, std::span<const int32_t> index,
                   const float* w_rows, const float* v_rows, int64_t step, SparseGrad* w_grad, SparseGrad* v_grad,
                   LossTerms* loss) override;
  Status Predict(const data::Batch& batch, std::span<const int64_t> unique_ids, std::span<const int32_t> index,
                 const float* w_rows, const float* v_rows, float* probs) override;

  // Both MLPs' GEMMs (3 x 2 x in x out per layer) plus the dot interaction's 6 P K (layers/dot_interaction.h,
  // a batched GEMM in the reference).
  double GemmFlopsPerExample() const override;

  // T and the top MLP's input width R (above).
  int32_t num_vectors() const { return num_vectors_; }
  int64_t top_input_width() const { return top_in_; }

 private:
  Status ResizeHead(int64_t B) override;
  void HeadForward(const HeadInput& in, bool training, int64_t step, float* logits) override;
  void HeadBackward(const HeadInput& in, const float* d_logits, float* d_e) override;
  // InvalidArgument when a multi-hot batch gives a dense field other than one id in some row.
  Status CheckDenseFields(const data::Batch& batch) const;

  int32_t num_dense_ = 0;    // N
  int32_t num_vectors_ = 0;  // T
  int64_t top_in_ = 0;       // R
  Mlp bottom_, top_;
  int64_t batch_size_ = 0;
  std::vector<float> dense_x_;   // [B, N]
  std::vector<float> vectors_;   // [B, T, K]
  std::vector<float> d_vectors_; // [B, T, K]
  std::vector<float> top_in_x_;  // [B, R]
  std::vector<float> d_top_in_;  // [B, R]
  std::vector<float> d_bottom_;  // [B, K]
  const float* bottom_out_ = nullptr;
};

}  // namespace ctrain::model
