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
// Parameter ownership and the step: model/model.h; the embedding stage, the
// first-order term, the loss and the sparse gradients: model/embedding_model.h.
// This class is the head: y_fm and y_deep (an Mlp, layers/mlp.h).
//
// Kinds (DeepFmTermsOf, model/model.h): "deepfm" (its switches use_first_order /
// use_fm / use_deep), "lr" (first order: logistic regression), "fm" (first +
// second order: Rendle 2010's factorization machine, O(kF) form) and
// "wide_deep" (Cheng et al. 2016: the wide part is the first-order term over
// the same sparse ids, plus the deep MLP). A table no enabled term reads is not
// touched: its rows pointer may be null, its l2 term is 0 and its SparseGrad
// comes back empty.
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
#include <vector>

#include "ctrain/model/embedding_model.h"
#include "ctrain/model/layers/mlp.h"
#include "ctrain/model/model.h"

namespace ctrain::model {

// DeepFM's hyper-parameters are model::ModelConfig's (model/model.h).
using DeepFMConfig = ModelConfig;

class DeepFM final : public EmbeddingModel {
 public:
  // config.kind is one of deepfm, lr, fm, wide_deep. An invalid config is
  // reported by every TrainStep/Predict (see ModelConfig::Validate) and by status().
  explicit DeepFM(DeepFMConfig config);
  DeepFM(const DeepFM&) = delete;
  DeepFM& operator=(const DeepFM&) = delete;

  // Trainable dense parameters, in this order: fm_bias [1]; then, with the
  // deep term, for each hidden layer i: mlp{i}/weights [in, out], mlp{i}/biases [out],
  // (if batch_norm) bn_{i}/gamma [out], bn_{i}/beta [out]; then
  // deep_out/weights [last, 1], deep_out/biases [1].
  // Non-trainable state: bn_{i}/moving_mean, bn_{i}/moving_variance [out]
  // (empty without batch_norm). Initialisation (InitDense): as the seed: MLP
  // weights Glorot-uniform (tf.contrib.layers.xavier_initializer, limit
  // sqrt(6/(in+out))), biases 0, gamma 1, beta 0, moving mean 0, moving variance 1.

  // Multi-hot batches (data::Batch::field_splits set) pool each field as the
  // weighted sum of its ids' embeddings (layers/pooled_embedding.h); the
  // first-order term sums w[id] * value over every id. Everything after the
  // pooled e[b,f,:] (FM, MLP) is the one-hot model. A one-hot batch and a
  // multi-hot batch with one id per field give the same bits.

  // TrainStep/Predict: EmbeddingModel's; errors as there (FullyConnected's
  // FailedPrecondition for bf16 without AVX512_BF16, Internal when oneDNN fails).

  // Floating-point operations of the MLP GEMMs per training example (forward +
  // backward data + backward weights: 3 x 2 x in x out per layer).
  double GemmFlopsPerExample() const override;

 private:
  Status ResizeHead(int64_t B) override;
  void HeadForward(const HeadInput& in, bool training, int64_t step, float* logits) override;
  void HeadBackward(const HeadInput& in, const float* d_logits, float* d_e) override;

  DeepFmTerms terms_;
  Mlp mlp_;
  int64_t batch_size_ = 0;
  std::vector<float> fm_sum_, y_fm_;
  const float* y_deep_ = nullptr;
};

}  // namespace ctrain::model
