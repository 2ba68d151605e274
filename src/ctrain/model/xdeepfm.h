// xDeepFM (Lian et al. 2018, "xDeepFM: Combining Explicit and Implicit Feature
// Interactions for Recommender Systems", KDD), as FuxiCTR's xDeepFM
// (reczoo/FuxiCTR model_zoo/xDeepFM/src/xDeepFM.py). Math, shapes, FLOPs and the
// mapping to FuxiCTR: docs/model.md "xDeepFM".
//
//   e[b,f,:]  = V[ids[b,f], :] * values[b,f]                      [B, F, K]
//   y_first   = sum_f w[ids[b,f]] * values[b,f]                    [B]   (the linear part; the base computes it)
//   y_cin     = CIN(e): cin_layer_units feature maps per layer, sum-pooled over K,
//               concatenated, Linear(->1)                          [B]   (layers/cin.h)
//   y_dnn     = MLP(flatten(e)): per hidden layer (deep_layers)
//               Linear -> ReLU -> [BatchNorm] -> Dropout, then Linear(->1)   [B]
//   logit     = bias + y_first + y_cin + y_dnn
// With deep_layers empty there is no DNN (FuxiCTR's "only CIN" case: logit = bias + y_first + y_cin),
// unlike DeepFM, whose deep part becomes one Linear layer then.
//
// Parameters (dense_params(), in this order): bias [1]; the CIN's cin{k}/weights
// [F*H_{k-1}, H_k], cin{k}/biases [H_k] (H_0 = F) for each layer k, cin_out/weights
// [sum H_k, 1], cin_out/biases [1]; then, with a DNN, for each hidden layer i
// dnn{i}/weights [in, out], dnn{i}/biases [out], (if batch_norm) dnn_bn_{i}/gamma,
// dnn_bn_{i}/beta [out], then dnn_out/weights [last, 1], dnn_out/biases [1].
// State: dnn_bn_{i}/moving_mean, dnn_bn_{i}/moving_variance [out] (batch_norm only).
// Initialisation: the zoo's (InitDenseParams): every */weights Glorot-uniform with
// fan_in = shape[0], fan_out = shape[1] (FuxiCTR: xavier_normal_ on its Linear and
// Conv1d weights, the same fans and variance), biases 0, gamma 1, beta 0.
// The tables w and V: InitEmbeddings, as every kind.
//
// Errors: EmbeddingModel's; an empty cin_layer_units is refused by Validate.
// Determinism, memory, thread safety: as DeepFM (model/deepfm.h).
#pragma once

#include <cstdint>

#include "ctrain/model/embedding_model.h"
#include "ctrain/model/layers/cin.h"
#include "ctrain/model/layers/mlp.h"
#include "ctrain/model/model.h"

namespace ctrain::model {

class XDeepFM final : public EmbeddingModel {
 public:
  // config.kind must be "xdeepfm"; an invalid config is reported by status() and every TrainStep/Predict.
  explicit XDeepFM(ModelConfig config);
  XDeepFM(const XDeepFM&) = delete;
  XDeepFM& operator=(const XDeepFM&) = delete;

  // The CIN's (layers/cin.h) + the DNN's (3 x 2 x in x out per linear layer).
  double GemmFlopsPerExample() const override;

 private:
  Status ResizeHead(int64_t B) override;
  void HeadForward(const HeadInput& in, bool training, int64_t step, float* logits) override;
  void HeadBackward(const HeadInput& in, const float* d_logits, float* d_e) override;

  Cin cin_;
  Mlp dnn_;
  bool has_dnn_ = false;
  const float* y_cin_ = nullptr;
  const float* y_dnn_ = nullptr;
};

}  // namespace ctrain::model
