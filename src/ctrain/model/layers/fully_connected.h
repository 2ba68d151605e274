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
// Precision: only f32 is implemented. The `DataType` enum is where bf16
// (bf16 src/wei with f32 accumulation and f32 dst) will be added; asking for a
// type that is not implemented is an Unimplemented error from Prepare.
//
// Determinism: for a fixed OpenMP thread count oneDNN's f32 GEMM is run-to-run
// reproducible; diff_bia uses a fixed order.
// Thread safety: one FullyConnected per thread (it owns a stream and caches).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "ctrain/base/status.h"

namespace ctrain::model {

enum class DataType { kF32 = 0, kBF16 = 1 };

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

  // Creates (once) the primitives for batch size B. Cheap when already prepared.
  // Errors: InvalidArgument (B, in or out < 1), Unimplemented (a DataType other
  // than kF32), Internal (oneDNN refused the descriptors; message names the shape).
  Status Prepare(int64_t B);

  // REQUIRES: the last Prepare call was Prepare(B) and returned OK, with the
  // same OpenMP thread count as now. bia may be null (no bias).
  void Forward(int64_t B, const float* src, const float* wei, const float* bia, float* dst);
  // REQUIRES: as Forward. diff_src may be null; diff_bia may be null.
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
  Prims* Get(int64_t B);
};

// Column sums: bias_grad[j] = sum_b diff_dst[b, j], b ascending.  diff_dst [B, out].
void ColumnSums(int64_t B, int64_t out, const float* diff_dst, float* bias_grad);

// Naive reference (double accumulation, loops), for tests.
void FullyConnectedReferenceForward(int64_t B, int64_t in, int64_t out, const float* src, const float* wei,
                                    const float* bia, float* dst);
void FullyConnectedReferenceBackward(int64_t B, int64_t in, int64_t out, const float* src, const float* wei,
                                     const float* diff_dst, float* diff_src, float* diff_wei, float* diff_bia);

}  // namespace ctrain::model
