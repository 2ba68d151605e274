// Cin: the Compressed Interaction Network of xDeepFM (Lian et al. 2018, "xDeepFM:
// Combining Explicit and Implicit Feature Interactions for Recommender Systems",
// KDD, eq. 6-8), as FuxiCTR's CompressedInteractionNet (reczoo/FuxiCTR,
// fuxictr/pytorch/layers/interactions/compressed_interaction_net.py): every layer
// keeps all its feature maps (no split-half: FuxiCTR feeds each layer's whole
// output to the next layer and to the pooling), a bias per feature map (its
// Conv1d's), no activation, sum pooling over the embedding dimension, and a
// Linear to one output.
//
// Over X^0 = e [B, F, K] (H_0 = F), for layers k = 1..L with H_k = units[k-1]:
//   X^k[b,h,d] = c^k[h] + sum_{f<F, i<H_{k-1}} W^k[f*H_{k-1} + i, h] * X^0[b,f,d] * X^{k-1}[b,i,d]
//   p^k[b,h]   = sum_d X^k[b,h,d]                                    (sum pooling over K)
//   y[b]       = [p^1, ..., p^L][b,:] · w_out + c_out                 [B]
// The row index f*H_{k-1} + i of W^k is FuxiCTR's channel order (einsum "bhd,bmd->bhmd" with
// X^0 first, viewed as [B, F*H_{k-1}, K]): W^k is its Conv1d weight [H_k, F*H_{k-1}, 1] transposed.
//
// Each layer is one GEMM on FullyConnected (so bf16 and threads come from it): the
// outer product is laid out as Z^k [B*K, F*H_{k-1}], Z^k[(b,d), f*H_{k-1}+i] =
// X^0[b,f,d] * X^{k-1}[b,i,d], and X^k is kept as [B*K, H_k] = Z^k · W^k + c^k.
// The layers run over chunks of examples (CinSpec::max_chunk_floats bounds Z). Backward recomputes
// Z^k from X^0 and X^{k-1} (one chunk-sized buffer instead of one per layer), then
// FullyConnected::Backward gives dW^k, dc^k (summed over chunks in order) and dZ^k, and
//   dX^{k-1}[b,i,d] = sum_f dZ^k[(b,d), f*H+i] * X^0[b,f,d],   dX^0[b,f,d] += sum_i dZ^k[(b,d), f*H+i] * X^{k-1}[b,i,d].
//
// Parameters, registered in *dense at construction in this order (names from CinSpec):
//   "<scope><k-1>/weights" [F*H_{k-1}, H_k], "<scope><k-1>/biases" [H_k] for k = 1..L;
//   "<out_scope>/weights" [sum_k H_k, 1], "<out_scope>/biases" [1].
// Default names: cin0/weights, cin0/biases, ..., cin_out/weights, cin_out/biases.
//
// FLOPs per example (GemmFlopsPerExample): 3 x 2 x K x F*H_{k-1} x H_k per layer (forward,
// backward data, backward weights; K rows per example) + 3 x 2 x sum_k H_k for the output.
// Errors: Resize returns FullyConnected::Prepare's (bf16 without AVX512_BF16: FailedPrecondition).
// Determinism: the element-wise kernels run per row (b,d) or per example in a fixed order; the GEMMs
// as FullyConnected; the chunking does not depend on the thread count. Memory: buffers grow when B
// does and are reused otherwise (never shrunk: training and evaluation batch sizes alternate); Z and
// dZ hold 2*chunk*K*F*max(F, H_k) floats (<= 2 * max_chunk_floats), the layer outputs B*K*sum H_k.
// Thread safety: one Cin per thread (it owns FullyConnected primitives).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/model/layers/fully_connected.h"
#include "ctrain/model/model.h"

namespace ctrain::model {

struct CinSpec {
  int32_t fields = 0;              // F (>= 1)
  int32_t embedding_size = 0;      // K (>= 1)
  std::vector<int32_t> units;      // H_1..H_L (each >= 1, at least one layer)
  std::string scope = "cin";       // layer k-1: "<scope><k-1>/weights|biases"
  std::string out_scope = "cin_out";
  DataType gemm_dtype = DataType::kF32;
  // Bound on Z (and dZ): the layers run over chunks of max(1, max_chunk_floats / (K*F*max H_{k-1}))
  // examples, so an evaluation batch (8192) does not need 8192*K*F*F floats. 16M floats = 64 MB
  // (F = 39, K = 10: 1103 examples per chunk; a training batch of 1024 is one chunk).
  int64_t max_chunk_floats = int64_t{16} << 20;
};

class Cin {
 public:
  Cin() = default;
  // Registers the parameters in *dense, which must outlive the Cin and never be resized after.
  Cin(CinSpec spec, std::vector<DenseParam>* dense);

  const CinSpec& spec() const { return spec_; }
  bool empty() const { return fc_.empty(); }

  // Prepares the GEMM primitives (B*K rows per layer, B for the output) and buffers.
  Status Resize(int64_t B);
  // e [B, F, K] -> y [B] (owned by the Cin). e must stay valid and unchanged until Backward.
  const float* Forward(int64_t B, const float* e);
  // Backward of the last Forward: d_y [B] -> every parameter's grad (overwrites) and d_e [B, F, K]
  // (adds to it when `accumulate`, else overwrites).
  void Backward(int64_t B, const float* d_y, bool accumulate, float* d_e);
  double GemmFlopsPerExample() const;

 private:
  // Z [rows, F*Hp] of rows [r0, r0 + rows) from X^0 (transposed, [B*K, F]) and X^{k-1} [B*K, Hp].
  void OuterProduct(int64_t r0, int64_t rows, int64_t Hp, const float* prev, float* z) const;
  static constexpr int64_t kShift = 16;  // floats (64 bytes): Backward's alternate Z pointers

  CinSpec spec_;
  std::vector<DenseParam>* dense_ = nullptr;
  std::vector<int> wei_, bia_;
  int out_wei_ = -1, out_bia_ = -1;
  std::vector<FullyConnected> fc_;  // one per layer, then the output layer
  int64_t batch_size_ = 0, pooled_width_ = 0, chunk_ = 1;
  std::vector<std::vector<float>> x_;  // X^k [B*K, H_k]
  std::vector<float> e_t_, z_, dz_, pooled_, y_, d_pooled_, dx_a_, dx_b_, d_e_t_, w_tmp_, b_tmp_;
};

// Naive reference (double accumulation, the formula above term by term), for tests:
// weights[k] [F*H_{k-1}, H_k], biases[k] [H_k], out_w [sum H_k], out_b [1]; y [B].
void CinReferenceForward(int64_t B, int32_t F, int32_t K, const std::vector<int32_t>& units, const float* e,
                         const std::vector<const float*>& weights, const std::vector<const float*>& biases,
                         const float* out_w, const float* out_b, double* y);

}  // namespace ctrain::model
