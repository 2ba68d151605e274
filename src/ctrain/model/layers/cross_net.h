// CrossNet: the cross networks of DCN (Wang et al. 2017, "Deep & Cross Network
// for Ad Click Predictions") and DCN-V2 (Wang et al. 2021, "DCN V2: Improved
// Deep & Cross Network and Practical Lessons for Web-scale Learning to Rank
// Systems"), over x0 [B, D] (D = F*K, the flattened field embeddings). With
// x_0 = x0 and l = 0 .. L-1, each variant (CrossKind) computes
//
//   kVector  (DCN):         x_{l+1} = x0 * (x_l · w_l) + b_l + x_l          w_l [D], b_l [D]
//   kMatrix  (DCN-V2):      x_{l+1} = x0 ⊙ (x_l W_l + b_l) + x_l             W_l [D, D]
//   kLowRank (DCN-V2 §3.2): x_{l+1} = x0 ⊙ ((x_l V_l) U_l + b_l) + x_l       V_l [D, r], U_l [r, D]
//   kMixture (DCN-V2's mixture of low-rank experts, FuxiCTR's CrossNetMix):
//     p       = softmax_e(x_l · g_e)                                       g_e [D] (shared by every layer)
//     E_e(x_l) = x0 ⊙ (tanh(tanh(x_l V_{l,e}) C_{l,e}) U_{l,e} + b_l)      V [D, r], C [r, r], U [r, D]
//     x_{l+1} = sum_e p_e E_e(x_l) + x_l
//
// and returns x_L [B, D] (x0 itself when L = 0). Matrices are stored [in, out]
// (row vectors times matrix, as FullyConnected): the paper's W is the
// transpose of W_l here, its U V^T is (V_l U_l)^T, and CrossNetMix's
// C_list[l][e] and U_list[l][e] are C_{l,e}^T and U_{l,e}^T.
//
// Parameters (registered in the owner's dense vector, per layer l, in this order):
//   kVector:  "<scope><l>/weights" [D, 1], "<scope><l>/biases" [D]
//   kMatrix:  "<scope><l>/weights" [D, D], "<scope><l>/biases" [D]
//   kLowRank: "<scope><l>/v/weights" [D, r], "<scope><l>/u/weights" [r, D], "<scope><l>/biases" [D]
//   kMixture: "<scope><l>/experts_v" [E, D, r], "<scope><l>/experts_c" [E, r, r],
//             "<scope><l>/experts_u" [E, r, D], "<scope><l>/biases" [D];
//             then once "<scope>_gate/weights" [D, E] (column e = g_e).
// Initialisation: "/weights" Glorot-uniform and biases 0 by the zoo's default
// (InitDenseParams, model.h; FuxiCTR's xavier_normal has the same variance);
// the mixture's tensors as FuxiCTR's CrossNetMix draws them (xavier on the
// [E, D, r] / [E, r, r] tensors: fan_in = D*r or r*r, fan_out = E*r) and its
// gate as E separate Linear(D, 1) (fans D, 1): InitMixture, after InitDenseParams.
//
// Every product but kVector's is a FullyConnected GEMM (bf16 with gemm_dtype kBF16;
// kVector's x_l w is a fused fp32 dot product per row, memory-bound either way);
// elementwise work is OpenMP over rows. Determinism: fixed reduction order.
// Memory: buffers allocated when B changes. Thread safety: one per thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/model/layers/fully_connected.h"
#include "ctrain/model/model.h"

namespace ctrain::model {

enum class CrossKind { kVector, kMatrix, kLowRank, kMixture };

struct CrossNetSpec {
  CrossKind kind = CrossKind::kVector;
  int64_t dim = 0;          // D >= 1
  int32_t layers = 0;       // L >= 0
  int32_t low_rank = 0;     // r >= 1 for kLowRank and kMixture
  int32_t num_experts = 1;  // E >= 1 for kMixture
  std::string scope = "cross";
  DataType gemm_dtype = DataType::kF32;
};

// The variant a config selects: dcn -> kVector; dcn_v2 -> kMatrix (low_rank 0), kLowRank (low_rank > 0,
// num_experts 1) or kMixture (num_experts > 1).
CrossKind CrossKindOf(const ModelConfig& config);

class CrossNet {
 public:
  CrossNet() = default;
  // Registers the parameters in *dense, which must outlive the CrossNet and never be resized after.
  CrossNet(CrossNetSpec spec, std::vector<DenseParam>* dense);

  const CrossNetSpec& spec() const { return spec_; }
  // Re-draws the kMixture tensors and gate as FuxiCTR does (see above); no-op for other kinds.
  void InitMixture(uint64_t seed);
  // Prepares the GEMM primitives and buffers. Errors: FullyConnected::Prepare's.
  Status Resize(int64_t B);
  // x0 [B, D] -> x_L [B, D] (owned by the CrossNet, or x0 when L = 0); x0 must stay valid until Backward.
  const float* Forward(int64_t B, const float* x0);
  // Backward of the last Forward: d_out [B, D] -> every parameter's grad (overwrite), d_x0 [B, D] (overwrite).
  void Backward(int64_t B, const float* d_out, float* d_x0);
  // 3 x 2 x in x out per GEMM (forward, backward data, backward weights), per example.
  double GemmFlopsPerExample() const;

 private:
  void ForwardLayer(int32_t l, int64_t B, const float* x0, const float* xl, float* next);
  void BackwardLayer(int32_t l, int64_t B, const float* x0, const float* xl, const float* g, float* d_x0, float* d_xl);
  void MixtureForward(int32_t l, int64_t B, const float* x0, const float* xl, float* next);
  void MixtureBackward(int32_t l, int64_t B, const float* x0, const float* xl, const float* g, float* d_x0,
                       float* d_xl);
  float* value(int i) { return (*dense_)[i].value.data(); }
  float* grad(int i) { return (*dense_)[i].grad.data(); }

  CrossNetSpec spec_;
  std::vector<DenseParam>* dense_ = nullptr;
  // Per layer: main weights (kVector/kMatrix W; kLowRank/kMixture V), u (U), c (kMixture C), bias.
  std::vector<int> w_, u_, c_, b_;
  int gate_ = -1;
  // GEMMs per layer (kMixture: per layer and expert, index l * E + e; gate per layer).
  std::vector<FullyConnected> fc_w_, fc_u_, fc_c_, fc_gate_;
  int64_t batch_size_ = 0;
  const float* x0_ = nullptr;
  std::vector<std::vector<float>> x_;  // x_1 .. x_L [B, D]
  // Forward activations: kVector s [B]; kMatrix/kLowRank z [B, D], kLowRank p [B, r];
  // kMixture per (l, e): a [B, r], h [B, r], c [B, D]; per l: gate probabilities [B, E].
  std::vector<std::vector<float>> z_, p_, a_, h_, cexp_, prob_;
  // Backward scratch.
  std::vector<float> g0_, g1_, tmp_, dz_, dr0_, dr1_, dgate_, gate_grad_;
};

// Naive reference of Forward (loops in double, parameters read by name from `dense`): out [B, D], for tests.
void CrossNetReferenceForward(const CrossNetSpec& spec, const std::vector<DenseParam>& dense, int64_t B,
                              const float* x0, double* out);

}  // namespace ctrain::model
