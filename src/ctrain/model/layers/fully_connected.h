// Fully connected (dense) layer  dst = src · wei + bia, on oneDNN matmul.
//
// Shapes (row-major): src [B, in], wei [in, out], bia [out], dst [B, out].
// This is the layout of tf.contrib.layers.fully_connected (kernel [in, out])
// used by the seed's MLP, so checkpoints transpose nothing.
//
// Backward (three products, as HugeCTR's FullyConnectedLayer::bprop):
//   diff_src = diff_dst · weiᵀ     [B, in]     (backward data; skipped if diff_src is null)
//   diff_wei = srcᵀ · diff_dst     [in, out]   (backward weights; overwrites)
//   diff_bia = column sums of diff_dst [out]   (own kernel, fixed summation order)
//
// oneDNN use follows its programming model: for each (batch size B, OpenMP
// thread count) the three matmul primitives are created once (Prepare) and
// reused every step; memory objects and argument maps are cached and only data
// handles change, so a step allocates nothing. (oneDNN picks its blocking for
// the thread count at creation, hence the thread count in the cache key.) Transposes are
// expressed through strides (format tag `ba`), so no copies are made.
//
// Precision (DataType):
//   kF32:  f32 operands, f32 accumulation.
//   kBF16: mixed precision as in oneDNN's / TF's bf16 training. Inputs,
//     outputs, weights, bias and all gradients stay f32 in the caller's
//     buffers; inside the layer the GEMM operands src and wei (Forward) and
//     diff_dst (Backward) are rounded to bf16 (round to nearest even, bf16.h)
//     into layer-owned buffers, multiplied with f32 accumulation (VDPBF16PS)
//     and written as f32. diff_bia is the f32 column sum of the f32 diff_dst.
//     Forward converts src and wei; Backward reuses those bf16 copies when it
//     gets the same src and wei pointers as the last Forward with this B (so
//     W is converted once per step), and converts again otherwise. Contents
//     behind those pointers must not change in between (they do not within a
//     DeepFM step). Error per output element, relative to the exact f32
//     product: |err| <= (2·2^-8 + 2^-16)·Σ|a||b| + f32 accumulation error.
//     Needs AVX512_BF16 (Bf16GemmSupported()); there is no silent f32 fallback.
// One output (out == 1) in f32: no oneDNN. Forward is a dot product per row, backward data an outer
// product, backward weights WeightedColumnSums (a GEMM library runs these N = 1 / K = 1 products far below
// memory speed; every model's output layer is one). Each sum has a fixed order whatever the thread count.
// Determinism: for a fixed OpenMP thread count oneDNN's f32 and bf16 GEMMs are run-to-run
// reproducible; diff_bia uses a fixed order.
// Thread safety: one FullyConnected per thread (it owns a stream and caches).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "ctrain/base/status.h"
#include "ctrain/model/layers/bf16.h"

namespace ctrain::model {

enum class DataType { kF32 = 0, kBF16 = 1 };

// "f32" / "bf16".
const char* DataTypeName(DataType type);

class FullyConnected {
 public:
  FullyConnected(int64_t in, int64_t out, DataType type = DataType::kF32);
  ~FullyConnected();
  FullyConnected(FullyConnected&&) noexcept;
  FullyConnected& operator=(FullyConnected&&) noexcept;
  FullyConnected(const FullyConnected&) = delete;
  FullyConnected& operator=(const FullyConnected&) = delete;

  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  DataType type() const { return type_; }

  // Creates (once) the primitives for batch size B. Cheap when already prepared.
  // Errors: InvalidArgument (B, in or out < 1); FailedPrecondition (kBF16 on a
  // CPU without AVX512_BF16: "<shape>: bf16 GEMM needs a CPU with AVX512_BF16
  // (oneDNN's effective ISA here is <isa>)"); Unimplemented (an unknown
  // DataType, or oneDNN has no implementation for the shape/type); Internal
  // (oneDNN refused the descriptors). Messages start with the shape
  // "fully_connected mb<B>ic<in>oc<out>[ bf16]".
  Status Prepare(int64_t B);

  // REQUIRES: the last Prepare call was Prepare(B) and returned OK, with the
  // same OpenMP thread count as now. bia may be null (no bias).
  void Forward(int64_t B, const float* src, const float* wei, const float* bia, float* dst);
  // REQUIRES: as Forward. diff_src may be null; diff_bia may be null.
  // kBF16: see Precision above for the reuse of Forward's bf16 copies.
  void Backward(int64_t B, const float* src, const float* wei, const float* diff_dst, float* diff_src,
                float* diff_wei, float* diff_bia);

 private:
  struct Prims;
  int64_t in_, out_;
  DataType type_;
  std::map<std::pair<int64_t, int>, std::unique_ptr<Prims>> cache_;  // (B, threads)
  Prims* last_ = nullptr;
  int64_t last_b_ = -1;
  int last_threads_ = -1;
  Prims* Get(int64_t B);  // null on RowDotPath
  // f32 with one output: a [B, in] x [in, 1] product (and its K = 1 / N = 1 backward) is memory-bound, and
  // oneDNN's matmul runs it far below memory speed, so the layer runs it as loops over rows (no primitives).
  bool RowDotPath() const { return out_ == 1 && type_ == DataType::kF32; }
};

// Column sums: bias_grad[j] = sum_b diff_dst[b, j], b ascending.  diff_dst [B, out].
void ColumnSums(int64_t B, int64_t out, const float* diff_dst, float* bias_grad);
// result [cols] = m^T weights: result[j] = sum over b of weights[b] * m[b, j] (m [B, cols], weights [B]),
// overwritten, summed in row order (deterministic for any thread count). A [B, cols] x [B, 1] product as a
// memory-bound loop: the weight gradient of a layer with one output (DCN's cross vectors).
void WeightedColumnSums(int64_t B, int64_t cols, const float* m, const float* weights, float* result);

// Naive reference (double accumulation, loops), for tests.
void FullyConnectedReferenceForward(int64_t B, int64_t in, int64_t out, const float* src, const float* wei,
                                    const float* bia, float* dst);
void FullyConnectedReferenceBackward(int64_t B, int64_t in, int64_t out, const float* src, const float* wei,
                                     const float* diff_dst, float* diff_src, float* diff_wei, float* diff_bia);

}  // namespace ctrain::model
