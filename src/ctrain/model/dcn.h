// DCN (Wang et al. 2017, "Deep & Cross Network for Ad Click Predictions") and
// DCN-V2 (Wang et al. 2021, "DCN V2: Improved Deep & Cross Network and
// Practical Lessons for Web-scale Learning to Rank Systems"), as FuxiCTR's
// DCN and DCNv2 (reczoo/FuxiCTR model_zoo). Math, FLOPs: docs/model.md.
//
//   x0        = flatten(e)                                   [B, D], D = F*K (e: model/embedding_model.h)
//   x_L       = CrossNet(x0): L = cross_layers layers         [B, D] (layers/cross_net.h)
//               dcn:    x_{l+1} = x0 * (x_l · w_l) + b_l + x_l
//               dcn_v2: x_{l+1} = x0 ⊙ (x_l W_l + b_l) + x_l, W_l full rank (low_rank 0), V_l U_l
//                       (low_rank r > 0), or a gated mixture of num_experts low-rank experts
//   parallel: h = concat(x_L, MLP(x0))                        [B, D + H]
//   stacked:  h = MLP(x_L)                                    [B, H]
//   (deep_layers empty: no MLP, h = x_L: the cross network alone)
//   logit     = h · output/weights + output/biases            [B]
//   loss      = mean_b sigmoid_xent(logit, label) + l2 (the embedding rows; neither kind reads w)
// MLP: layers/mlp.h over deep_layers (Linear -> ReLU -> [BatchNorm] -> Dropout per hidden
// layer, no output layer: its last hidden layer, width H, feeds the output layer).
//
// Trainable dense parameters, in this order: output/biases [1] (the base's
// bias, model/embedding_model.h); the cross layers' (layers/cross_net.h:
// cross{l}/weights, cross{l}/biases, ...); with deep_layers, mlp{i}/weights
// [in, out], mlp{i}/biases [out], (batch_norm) bn_{i}/gamma, bn_{i}/beta; then
// output/weights [dim(h), 1]. State: bn_{i}/moving_mean, bn_{i}/moving_variance.
// Initialisation (InitDense): InitDenseParams (model.h: "/weights"
// Glorot-uniform, the variance of FuxiCTR's xavier_normal_; biases 0; gamma 1),
// then the mixture's tensors as FuxiCTR's CrossNetMix draws them (CrossNet::InitMixture).
//
// Errors: EmbeddingModel's (FailedPrecondition for an invalid config, e.g.
// num_experts > 1 without low_rank; FullyConnected's for bf16 without AVX512_BF16).
// Determinism, memory, thread safety: as model/model.h.
#pragma once

#include <cstdint>
#include <vector>

#include "ctrain/model/embedding_model.h"
#include "ctrain/model/layers/cross_net.h"
#include "ctrain/model/layers/fully_connected.h"
#include "ctrain/model/layers/mlp.h"
#include "ctrain/model/model.h"

namespace ctrain::model {

class DCN final : public EmbeddingModel {
 public:
  // config.kind is dcn or dcn_v2 (InvalidArgument in status() otherwise).
  explicit DCN(ModelConfig config);
  DCN(const DCN&) = delete;
  DCN& operator=(const DCN&) = delete;

  void InitDense(uint64_t seed) override;
  // The cross network's GEMMs (layers/cross_net.h), the MLP's and the output layer's (3 x 2 x in x out each).
  double GemmFlopsPerExample() const override;

 private:
  Status ResizeHead(int64_t B) override;
  void HeadForward(const HeadInput& in, bool training, int64_t step, float* logits) override;
  void HeadBackward(const HeadInput& in, const float* d_logits, float* d_e) override;

  bool stacked_ = false, deep_ = false;
  CrossNet cross_;
  Mlp mlp_;
  int out_w_ = -1;
  // The output layer over h = concat(blocks): one GEMM per block, over its rows of output/weights.
  std::vector<FullyConnected> out_fc_;
  std::vector<int64_t> block_width_;
  std::vector<const float*> block_;  // this step's blocks [B, width]
  int64_t batch_size_ = 0;
  std::vector<float> y_, d_block0_, d_block1_, d_tmp_;
};

}  // namespace ctrain::model
