// CrossNet: construction, buffers, the layer loop and the kVector / kMatrix /
// kLowRank layers (layers/cross_net.h). The mixture's layers: cross_net_mix.cc.
#include "ctrain/model/layers/cross_net.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ctrain::model {

CrossKind CrossKindOf(const ModelConfig& c) {
  if (c.kind == "dcn") return CrossKind::kVector;
  if (c.num_experts > 1) return CrossKind::kMixture;
  return c.low_rank > 0 ? CrossKind::kLowRank : CrossKind::kMatrix;
}

CrossNet::CrossNet(CrossNetSpec spec, std::vector<DenseParam>* dense) : spec_(std::move(spec)), dense_(dense) {
  const int64_t D = spec_.dim, r = spec_.low_rank, E = spec_.num_experts;
  const DataType t = spec_.gemm_dtype;
  for (int32_t l = 0; l < spec_.layers; ++l) {
    const std::string s = spec_.scope + std::to_string(l);
    switch (spec_.kind) {
      case CrossKind::kVector:
        // No GEMM: x_l w is a dot product per row, run in fp32 whatever gemm_dtype (ForwardLayer).
        w_.push_back(AddDenseParam(dense_, s + "/weights", {D, 1}, true));
        break;
      case CrossKind::kMatrix:
        w_.push_back(AddDenseParam(dense_, s + "/weights", {D, D}, true));
        fc_w_.emplace_back(D, D, t);
        break;
      case CrossKind::kLowRank:
        w_.push_back(AddDenseParam(dense_, s + "/v/weights", {D, r}, true));
        u_.push_back(AddDenseParam(dense_, s + "/u/weights", {r, D}, true));
        fc_w_.emplace_back(D, r, t);
        fc_u_.emplace_back(r, D, t);
        break;
      case CrossKind::kMixture:
        w_.push_back(AddDenseParam(dense_, s + "/experts_v", {E, D, r}, true));
        c_.push_back(AddDenseParam(dense_, s + "/experts_c", {E, r, r}, true));
        u_.push_back(AddDenseParam(dense_, s + "/experts_u", {E, r, D}, true));
        for (int64_t e = 0; e < E; ++e) {
          fc_w_.emplace_back(D, r, t);
          fc_c_.emplace_back(r, r, t);
          fc_u_.emplace_back(r, D, t);
        }
        fc_gate_.emplace_back(D, E, t);
        break;
    }
    b_.push_back(AddDenseParam(dense_, s + "/biases", {D}, true));
  }
  if (spec_.kind == CrossKind::kMixture && spec_.layers > 0)
    gate_ = AddDenseParam(dense_, spec_.scope + "_gate/weights", {D, E}, true);
  x_.resize(spec_.layers);
}

double CrossNet::GemmFlopsPerExample() const {
  const double D = static_cast<double>(spec_.dim), r = spec_.low_rank, E = spec_.num_experts, L = spec_.layers;
  switch (spec_.kind) {
    case CrossKind::kVector: return L * 6.0 * D;
    case CrossKind::kMatrix: return L * 6.0 * D * D;
    case CrossKind::kLowRank: return L * 6.0 * 2.0 * D * r;
    case CrossKind::kMixture: return L * 6.0 * (D * E + E * (2.0 * D * r + r * r));
  }
  return 0;
}

Status CrossNet::Resize(int64_t B) {
  for (auto* fcs : {&fc_w_, &fc_u_, &fc_c_, &fc_gate_})
    for (FullyConnected& fc : *fcs) CTRAIN_RETURN_IF_ERROR(fc.Prepare(B));
  if (B == batch_size_) return Status::OK();
  batch_size_ = B;
  const int64_t D = spec_.dim, r = std::max(1, spec_.low_rank), E = spec_.num_experts, L = spec_.layers;
  for (auto& x : x_) x.assign(B * D, 0.0f);
  auto alloc = [](std::vector<std::vector<float>>* v, int64_t n, int64_t size) {
    v->resize(n);
    for (auto& x : *v) x.assign(size, 0.0f);
  };
  switch (spec_.kind) {
    case CrossKind::kVector: alloc(&z_, L, B); break;
    case CrossKind::kMatrix: alloc(&z_, L, B * D); break;
    case CrossKind::kLowRank:
      alloc(&z_, L, B * D);
      alloc(&p_, L, B * r);
      break;
    case CrossKind::kMixture:
      alloc(&a_, L * E, B * r);
      alloc(&h_, L * E, B * r);
      alloc(&cexp_, L * E, B * D);
      alloc(&prob_, L, B * E);
      dgate_.assign(B * E, 0.0f);
      gate_grad_.assign(D * E, 0.0f);
      break;
  }
  for (auto* v : {&g0_, &g1_, &tmp_, &dz_}) v->assign(B * D, 0.0f);
  dr0_.assign(B * r, 0.0f);
  dr1_.assign(B * r, 0.0f);
  return Status::OK();
}

const float* CrossNet::Forward(int64_t B, const float* x0) {
  x0_ = x0;
  const float* xl = x0;
  for (int32_t l = 0; l < spec_.layers; ++l) {
    ForwardLayer(l, B, x0, xl, x_[l].data());
    xl = x_[l].data();
  }
  return xl;
}

void CrossNet::Backward(int64_t B, const float* d_out, float* d_x0) {
  const int64_t n = B * spec_.dim;
  if (spec_.layers == 0) {
    if (d_x0 != d_out) std::memcpy(d_x0, d_out, sizeof(float) * n);
    return;
  }
  std::fill(d_x0, d_x0 + n, 0.0f);
  if (gate_ >= 0) std::fill((*dense_)[gate_].grad.begin(), (*dense_)[gate_].grad.end(), 0.0f);
  const float* g = d_out;  // dL/dx_{l+1}
  float* next = g0_.data();
  float* other = g1_.data();
  for (int32_t l = spec_.layers; l-- > 0;) {
    const float* xl = l > 0 ? x_[l - 1].data() : x0_;
    BackwardLayer(l, B, x0_, xl, g, d_x0, next);
    g = next;
    std::swap(next, other);
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) d_x0[i] += g[i];
}

void CrossNet::ForwardLayer(int32_t l, int64_t B, const float* x0, const float* xl, float* next) {
  const int64_t D = spec_.dim;
  const float* bias = value(b_[l]);
  switch (spec_.kind) {
    case CrossKind::kVector: {
      // s = x_l w [B] and the layer in one pass per row: a [B, D] x [D, 1] product is a dot product per row,
      // which a GEMM library runs far below memory speed (N = 1).
      float* s = z_[l].data();
      const float* w = value(w_[l]);
#pragma omp parallel for schedule(static)
      for (int64_t b = 0; b < B; ++b) {
        const float* x = xl + b * D;
        const float* z0 = x0 + b * D;
        float* out = next + b * D;
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t d = 0; d < D; ++d) acc += x[d] * w[d];
        s[b] = acc;
#pragma omp simd
        for (int64_t d = 0; d < D; ++d) out[d] = z0[d] * acc + bias[d] + x[d];
      }
      return;
    }
    case CrossKind::kMatrix:
    case CrossKind::kLowRank: {
      float* z = z_[l].data();
      if (spec_.kind == CrossKind::kMatrix) {
        fc_w_[l].Forward(B, xl, value(w_[l]), bias, z);
      } else {
        fc_w_[l].Forward(B, xl, value(w_[l]), nullptr, p_[l].data());
        fc_u_[l].Forward(B, p_[l].data(), value(u_[l]), bias, z);
      }
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < B * D; ++i) next[i] = x0[i] * z[i] + xl[i];
      return;
    }
    case CrossKind::kMixture: MixtureForward(l, B, x0, xl, next); return;
  }
}

// g = dL/dx_{l+1}: adds this layer's x0 term to d_x0, writes d_xl = dL/dx_l.
void CrossNet::BackwardLayer(int32_t l, int64_t B, const float* x0, const float* xl, const float* g, float* d_x0,
                             float* d_xl) {
  const int64_t D = spec_.dim;
  float* tmp = tmp_.data();
  switch (spec_.kind) {
    case CrossKind::kVector: {
      // ds = dL/ds [B]; d_xl's product term ds w^T (an outer product) and dL/dw = x_l^T ds (a column sum
      // weighted by ds) are memory-bound loops, not GEMMs (K = 1 and N = 1).
      const float* s = z_[l].data();
      const float* w = value(w_[l]);
      float* ds = dr0_.data();
#pragma omp parallel for schedule(static)
      for (int64_t b = 0; b < B; ++b) {
        const float* gb = g + b * D;
        const float* z0 = x0 + b * D;
        float* dz0 = d_x0 + b * D;
        float* t = tmp + b * D;
        const float sb = s[b];
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t d = 0; d < D; ++d) {
          acc += gb[d] * z0[d];
          dz0[d] += gb[d] * sb;
        }
        ds[b] = acc;
#pragma omp simd
        for (int64_t d = 0; d < D; ++d) t[d] = acc * w[d];
      }
      ColumnSums(B, D, g, grad(b_[l]));
      WeightedColumnSums(B, D, xl, ds, grad(w_[l]));
      break;
    }
    case CrossKind::kMatrix:
    case CrossKind::kLowRank: {
      const float* z = z_[l].data();
      float* dz = dz_.data();
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < B * D; ++i) {
        dz[i] = g[i] * x0[i];
        d_x0[i] += g[i] * z[i];
      }
      if (spec_.kind == CrossKind::kMatrix) {
        fc_w_[l].Backward(B, xl, value(w_[l]), dz, tmp, grad(w_[l]), grad(b_[l]));
      } else {
        float* dp = dr0_.data();
        fc_u_[l].Backward(B, p_[l].data(), value(u_[l]), dz, dp, grad(u_[l]), grad(b_[l]));
        fc_w_[l].Backward(B, xl, value(w_[l]), dp, tmp, grad(w_[l]), nullptr);
      }
      break;
    }
    case CrossKind::kMixture: MixtureBackward(l, B, x0, xl, g, d_x0, d_xl); return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < B * D; ++i) d_xl[i] = g[i] + tmp[i];
}

}  // namespace ctrain::model
