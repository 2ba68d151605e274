#include "ctrain/model/layers/fully_connected.h"

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

namespace ctrain::model {

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::engine& CpuEngine() {
  static dnnl::engine* eng = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *eng;
}

dnnl::memory::desc Md(int64_t rows, int64_t cols, dt type, tag t) { return dnnl::memory::desc({rows, cols}, type, t); }

// A 64-byte aligned array of bf16 values owned by the layer.
struct Bf16Buffer {
  struct Free {
    void operator()(uint16_t* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<uint16_t[], Free> data;
  void Allocate(int64_t n) {
    data.reset(static_cast<uint16_t*>(::operator new[](sizeof(uint16_t) * std::max<int64_t>(n, 1),
                                                       std::align_val_t(64))));
  }
  uint16_t* get() const { return data.get(); }
};

}  // namespace

const char* DataTypeName(DataType type) {
  switch (type) {
    case DataType::kF32: return "f32";
    case DataType::kBF16: return "bf16";
  }
  return "unknown";
}

struct FullyConnected::Prims {
  dnnl::stream stream;
  dnnl::matmul fwd, bwd_data, bwd_wei;
  // forward: src[B,in] x wei[in,out] (+ bia[1,out]) -> dst[B,out]
  dnnl::memory f_src, f_wei, f_bia, f_dst;
  dnnl::matmul fwd_nobias;
  // backward data: diff_dst[B,out] x weiT[out,in] (strides of wei) -> diff_src[B,in]
  dnnl::memory d_diff_dst, d_wei_t, d_diff_src;
  // backward weights: srcT[in,B] (strides of src) x diff_dst[B,out] -> diff_wei[in,out]
  dnnl::memory w_src_t, w_diff_dst, w_diff_wei;
  // Argument maps built once (dnnl::memory is a shared handle, so set_data_handle
  // on the members above is seen through these copies); no per-step allocation.
  std::unordered_map<int, dnnl::memory> fwd_args, fwd_nobias_args, bwd_data_args, bwd_wei_args;
  // kBF16 only: the bf16 operands (src [B,in], wei [in,out], diff_dst [B,out]).
  // The operand memories above point at these for good; only f32 handles change.
  Bf16Buffer src_b, wei_b, dy_b;
  const float* converted_src = nullptr;  // what src_b / wei_b hold (the last Forward's arguments)
  const float* converted_wei = nullptr;
};

FullyConnected::FullyConnected(int64_t in, int64_t out, DataType type) : in_(in), out_(out), type_(type) {}
FullyConnected::~FullyConnected() = default;
FullyConnected::FullyConnected(FullyConnected&&) noexcept = default;
FullyConnected& FullyConnected::operator=(FullyConnected&&) noexcept = default;

Status FullyConnected::Prepare(int64_t B) {
  const int threads = omp_get_max_threads();
  if (B == last_b_ && threads == last_threads_) return Status::OK();
  auto it = cache_.find({B, threads});
  if (it != cache_.end()) {
    last_ = it->second.get();
    last_b_ = B;
    last_threads_ = threads;
    return Status::OK();
  }
  const bool bf16 = type_ == DataType::kBF16;
  const std::string shape = "fully_connected mb" + std::to_string(B) + "ic" + std::to_string(in_) + "oc" +
                            std::to_string(out_) + (bf16 ? " bf16" : "");
  if (B < 1 || in_ < 1 || out_ < 1) return InvalidArgumentError(shape + ": every dimension must be >= 1");
  if (type_ != DataType::kF32 && !bf16)
    return UnimplementedError(shape + ": unknown data type " + std::to_string(static_cast<int>(type_)));
  if (bf16) {
    Status s = Bf16GemmSupported();
    if (!s.ok()) return Status(s.code(), shape + ": " + std::string(s.message()));
  }
  if (RowDotPath()) {  // no primitives: Forward/Backward run their own loops
    last_ = nullptr;
    last_b_ = B;
    last_threads_ = threads;
    return Status::OK();
  }
  const dt op = bf16 ? dt::bf16 : dt::f32;  // GEMM operand type; outputs are always f32
  auto p = std::make_unique<Prims>();
  try {
    dnnl::engine& eng = CpuEngine();
    p->stream = dnnl::stream(eng);
    const auto src = Md(B, in_, op, tag::ab), wei = Md(in_, out_, op, tag::ab), bia = Md(1, out_, dt::f32, tag::ab),
               dst = Md(B, out_, dt::f32, tag::ab);
    p->fwd = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, bia, dst), eng));
    p->fwd_nobias = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), eng));
    p->f_src = dnnl::memory(src, eng, DNNL_MEMORY_NONE);
    p->f_wei = dnnl::memory(wei, eng, DNNL_MEMORY_NONE);
    p->f_bia = dnnl::memory(bia, eng, DNNL_MEMORY_NONE);
    p->f_dst = dnnl::memory(dst, eng, DNNL_MEMORY_NONE);

    const auto diff_dst = Md(B, out_, op, tag::ab);
    const auto wei_t = Md(out_, in_, op, tag::ba);  // [out, in] view of the row-major [in, out] buffer
    const auto diff_src = Md(B, in_, dt::f32, tag::ab);
    p->bwd_data = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(diff_dst, wei_t, diff_src), eng));
    p->d_diff_dst = dnnl::memory(diff_dst, eng, DNNL_MEMORY_NONE);
    p->d_wei_t = dnnl::memory(wei_t, eng, DNNL_MEMORY_NONE);
    p->d_diff_src = dnnl::memory(diff_src, eng, DNNL_MEMORY_NONE);

    const auto src_t = Md(in_, B, op, tag::ba);  // [in, B] view of the row-major [B, in] buffer
    const auto diff_wei = Md(in_, out_, dt::f32, tag::ab);
    p->bwd_wei = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_t, diff_dst, diff_wei), eng));
    p->w_src_t = dnnl::memory(src_t, eng, DNNL_MEMORY_NONE);
    p->w_diff_dst = dnnl::memory(diff_dst, eng, DNNL_MEMORY_NONE);
    p->w_diff_wei = dnnl::memory(diff_wei, eng, DNNL_MEMORY_NONE);
    if (bf16) {
      p->src_b.Allocate(B * in_);
      p->wei_b.Allocate(in_ * out_);
      p->dy_b.Allocate(B * out_);
      p->f_src.set_data_handle(p->src_b.get());
      p->w_src_t.set_data_handle(p->src_b.get());
      p->f_wei.set_data_handle(p->wei_b.get());
      p->d_wei_t.set_data_handle(p->wei_b.get());
      p->d_diff_dst.set_data_handle(p->dy_b.get());
      p->w_diff_dst.set_data_handle(p->dy_b.get());
    }
    p->fwd_args = {{DNNL_ARG_SRC, p->f_src}, {DNNL_ARG_WEIGHTS, p->f_wei}, {DNNL_ARG_BIAS, p->f_bia},
                   {DNNL_ARG_DST, p->f_dst}};
    p->fwd_nobias_args = {{DNNL_ARG_SRC, p->f_src}, {DNNL_ARG_WEIGHTS, p->f_wei}, {DNNL_ARG_DST, p->f_dst}};
    p->bwd_data_args = {{DNNL_ARG_SRC, p->d_diff_dst}, {DNNL_ARG_WEIGHTS, p->d_wei_t}, {DNNL_ARG_DST, p->d_diff_src}};
    p->bwd_wei_args = {{DNNL_ARG_SRC, p->w_src_t}, {DNNL_ARG_WEIGHTS, p->w_diff_dst}, {DNNL_ARG_DST, p->w_diff_wei}};
  } catch (const dnnl::error& e) {
    if (e.status == dnnl_unimplemented)
      return UnimplementedError(shape + ": oneDNN has no matmul implementation for it: " + e.what());
    return InternalError(shape + ": oneDNN: " + e.what());
  }
  last_ = p.get();
  last_b_ = B;
  last_threads_ = threads;
  cache_.emplace(std::make_pair(B, threads), std::move(p));
  return Status::OK();
}

FullyConnected::Prims* FullyConnected::Get(int64_t B) {
  // A REQUIRES violation: fail loudly, never run a wrong shape.
  if (B != last_b_ || (last_ == nullptr && !RowDotPath())) {
    std::fprintf(stderr, "FullyConnected(%lld->%lld): Forward/Backward with B=%lld but last Prepare was B=%lld\n",
                 static_cast<long long>(in_), static_cast<long long>(out_), static_cast<long long>(B),
                 static_cast<long long>(last_b_));
    std::abort();
  }
  return last_;
}

void FullyConnected::Forward(int64_t B, const float* src, const float* wei, const float* bia, float* dst) {
  Prims* p = Get(B);
  if (p == nullptr) {  // RowDotPath: dst[b] = src[b, :] . wei + bia, one dot product per row
    const int64_t in = in_;
    const float b0 = bia != nullptr ? bia[0] : 0.0f;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < B; ++b) {
      const float* x = src + b * in;
      float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < in; ++i) acc += x[i] * wei[i];
      dst[b] = acc + b0;
    }
    return;
  }
  if (type_ == DataType::kBF16) {
    ConvertF32ToBf16(src, p->src_b.get(), B * in_);
    ConvertF32ToBf16(wei, p->wei_b.get(), in_ * out_);
    p->converted_src = src;
    p->converted_wei = wei;
  } else {
    p->f_src.set_data_handle(const_cast<float*>(src));
    p->f_wei.set_data_handle(const_cast<float*>(wei));
  }
  p->f_dst.set_data_handle(dst);
  if (bia != nullptr) {
    p->f_bia.set_data_handle(const_cast<float*>(bia));
    p->fwd.execute(p->stream, p->fwd_args);
  } else {
    p->fwd_nobias.execute(p->stream, p->fwd_nobias_args);
  }
  p->stream.wait();
}

void FullyConnected::Backward(int64_t B, const float* src, const float* wei, const float* diff_dst, float* diff_src,
                              float* diff_wei, float* diff_bia) {
  Prims* p = Get(B);
  if (p == nullptr) {  // RowDotPath: an outer product and a weighted column sum
    if (diff_src != nullptr) {
      const int64_t in = in_;
#pragma omp parallel for schedule(static)
      for (int64_t b = 0; b < B; ++b) {
        const float g = diff_dst[b];
        float* d = diff_src + b * in;
#pragma omp simd
        for (int64_t i = 0; i < in; ++i) d[i] = g * wei[i];
      }
    }
    WeightedColumnSums(B, in_, src, diff_dst, diff_wei);
    if (diff_bia != nullptr) ColumnSums(B, 1, diff_dst, diff_bia);
    return;
  }
  if (type_ == DataType::kBF16) {
    if (src != p->converted_src) {
      ConvertF32ToBf16(src, p->src_b.get(), B * in_);
      p->converted_src = src;
    }
    if (diff_src != nullptr && wei != p->converted_wei) {
      ConvertF32ToBf16(wei, p->wei_b.get(), in_ * out_);
      p->converted_wei = wei;
    }
    ConvertF32ToBf16(diff_dst, p->dy_b.get(), B * out_);
  } else {
    p->d_diff_dst.set_data_handle(const_cast<float*>(diff_dst));
    p->d_wei_t.set_data_handle(const_cast<float*>(wei));
    p->w_src_t.set_data_handle(const_cast<float*>(src));
    p->w_diff_dst.set_data_handle(const_cast<float*>(diff_dst));
  }
  if (diff_src != nullptr) {
    p->d_diff_src.set_data_handle(diff_src);
    p->bwd_data.execute(p->stream, p->bwd_data_args);
  }
  p->w_diff_wei.set_data_handle(diff_wei);
  p->bwd_wei.execute(p->stream, p->bwd_wei_args);
  p->stream.wait();
  if (diff_bia != nullptr) ColumnSums(B, out_, diff_dst, diff_bia);
}

namespace {

// result[j] = sum over b, in order, of (weights ? weights[b] : 1) * m[b, j]; blocks of columns in parallel.
void SumColumns(int64_t B, int64_t out, const float* m, const float* weights, float* result) {
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (out + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t j0 = blk * kBlock, j1 = std::min(out, j0 + kBlock);
    float acc[kBlock] = {};
    for (int64_t b = 0; b < B; ++b) {
      const float* row = m + b * out;
      const float w = weights != nullptr ? weights[b] : 1.0f;
      if (weights == nullptr) {
#pragma omp simd
        for (int64_t j = j0; j < j1; ++j) acc[j - j0] += row[j];
      } else {
#pragma omp simd
        for (int64_t j = j0; j < j1; ++j) acc[j - j0] += w * row[j];
      }
    }
    for (int64_t j = j0; j < j1; ++j) result[j] = acc[j - j0];
  }
}

}  // namespace

void ColumnSums(int64_t B, int64_t out, const float* diff_dst, float* bias_grad) {
  SumColumns(B, out, diff_dst, nullptr, bias_grad);
}

void WeightedColumnSums(int64_t B, int64_t cols, const float* m, const float* weights, float* result) {
  SumColumns(B, cols, m, weights, result);
}

void FullyConnectedReferenceForward(int64_t B, int64_t in, int64_t out, const float* src, const float* wei,
                                    const float* bia, float* dst) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < out; ++j) {
      double s = bia ? bia[j] : 0.0;
      for (int64_t i = 0; i < in; ++i) s += static_cast<double>(src[b * in + i]) * wei[i * out + j];
      dst[b * out + j] = static_cast<float>(s);
    }
}

void FullyConnectedReferenceBackward(int64_t B, int64_t in, int64_t out, const float* src, const float* wei,
                                     const float* diff_dst, float* diff_src, float* diff_wei, float* diff_bia) {
  if (diff_src)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < in; ++i) {
        double s = 0;
        for (int64_t j = 0; j < out; ++j) s += static_cast<double>(diff_dst[b * out + j]) * wei[i * out + j];
        diff_src[b * in + i] = static_cast<float>(s);
      }
  for (int64_t i = 0; i < in; ++i)
    for (int64_t j = 0; j < out; ++j) {
      double s = 0;
      for (int64_t b = 0; b < B; ++b) s += static_cast<double>(src[b * in + i]) * diff_dst[b * out + j];
      diff_wei[i * out + j] = static_cast<float>(s);
    }
  if (diff_bia)
    for (int64_t j = 0; j < out; ++j) {
      double s = 0;
      for (int64_t b = 0; b < B; ++b) s += diff_dst[b * out + j];
      diff_bia[j] = static_cast<float>(s);
    }
}

}  // namespace ctrain::model
