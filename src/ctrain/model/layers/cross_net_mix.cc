// CrossNet's mixture of low-rank experts (kMixture, layers/cross_net.h), as
// FuxiCTR's CrossNetMix computes it: per layer a softmax gate over E experts
// (gate weights shared by every layer), each expert
//   E_e(x_l) = x0 ⊙ (tanh(tanh(x_l V_e) C_e) U_e + b_l)
// and x_{l+1} = sum_e p_e E_e(x_l) + x_l.
#include <algorithm>
#include <cmath>

#include "ctrain/model/layers/cross_net.h"
#include "ctrain/model/random.h"

namespace ctrain::model {
namespace {

// Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)): the variance of xavier_normal_ with those fans.
void GlorotUniformFans(uint64_t seed, int index, double fan_in, double fan_out, std::vector<float>* v) {
  const double limit = std::sqrt(6.0 / (fan_in + fan_out));
  const uint64_t key = StreamKey(seed, 0x1000 + static_cast<uint64_t>(index));  // InitDenseParams' stream of `index`
  for (size_t j = 0; j < v->size(); ++j)
    (*v)[j] = static_cast<float>((2.0 * UniformOpen(CounterBits(key, j)) - 1.0) * limit);
}

}  // namespace

void CrossNet::InitMixture(uint64_t seed) {
  if (spec_.kind != CrossKind::kMixture) return;
  const double D = static_cast<double>(spec_.dim), r = spec_.low_rank, E = spec_.num_experts;
  // torch's fans of a 3-d tensor [E, a, b]: fan_in = a * b, fan_out = E * b (FuxiCTR's U, V are [E, D, r], C [E, r, r]).
  for (int32_t l = 0; l < spec_.layers; ++l) {
    GlorotUniformFans(seed, w_[l], D * r, E * r, &(*dense_)[w_[l]].value);
    GlorotUniformFans(seed, c_[l], r * r, E * r, &(*dense_)[c_[l]].value);
    GlorotUniformFans(seed, u_[l], D * r, E * r, &(*dense_)[u_[l]].value);
  }
  if (gate_ >= 0) GlorotUniformFans(seed, gate_, D, 1.0, &(*dense_)[gate_].value);  // E x Linear(D, 1)
}

void CrossNet::MixtureForward(int32_t l, int64_t B, const float* x0, const float* xl, float* next) {
  const int64_t D = spec_.dim, r = spec_.low_rank, E = spec_.num_experts;
  float* p = prob_[l].data();
  fc_gate_[l].Forward(B, xl, value(gate_), nullptr, p);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {  // softmax over the experts
    float* row = p + b * E;
    const float mx = *std::max_element(row, row + E);
    float sum = 0.0f;
    for (int64_t e = 0; e < E; ++e) sum += (row[e] = std::exp(row[e] - mx));
    for (int64_t e = 0; e < E; ++e) row[e] /= sum;
  }
  const float* V = value(w_[l]);
  const float* C = value(c_[l]);
  const float* U = value(u_[l]);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t k = l * E + e;
    float* a = a_[k].data();
    float* h = h_[k].data();
    fc_w_[k].Forward(B, xl, V + e * D * r, nullptr, a);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < B * r; ++i) a[i] = std::tanh(a[i]);
    fc_c_[k].Forward(B, a, C + e * r * r, nullptr, h);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < B * r; ++i) h[i] = std::tanh(h[i]);
    fc_u_[k].Forward(B, h, U + e * r * D, nullptr, cexp_[k].data());
  }
  const float* bias = value(b_[l]);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t d = 0; d < D; ++d) {
      const int64_t i = b * D + d;
      float moe = 0.0f;
      for (int64_t e = 0; e < E; ++e) moe += p[b * E + e] * (cexp_[l * E + e][i] + bias[d]);
      next[i] = x0[i] * moe + xl[i];
    }
}

void CrossNet::MixtureBackward(int32_t l, int64_t B, const float* x0, const float* xl, const float* g, float* d_x0,
                               float* d_xl) {
  const int64_t D = spec_.dim, r = spec_.low_rank, E = spec_.num_experts;
  const float* p = prob_[l].data();
  const float* bias = value(b_[l]);
  float* dgate = dgate_.data();
  float* dz = dz_.data();  // sum_e d c_e: the bias gradient's rows
  // d p_e = <g ⊙ x0, c_e + b>; softmax backward; d x0 += g ⊙ sum_e p_e (c_e + b).
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    float* dp = dgate + b * E;
    std::fill(dp, dp + E, 0.0f);
    for (int64_t d = 0; d < D; ++d) {
      const int64_t i = b * D + d;
      const float gx = g[i] * x0[i];
      float moe = 0.0f;
      for (int64_t e = 0; e < E; ++e) {
        const float ce = cexp_[l * E + e][i] + bias[d];
        dp[e] += gx * ce;
        moe += p[b * E + e] * ce;
      }
      d_x0[i] += g[i] * moe;
    }
    float dot = 0.0f;
    for (int64_t e = 0; e < E; ++e) dot += p[b * E + e] * dp[e];
    for (int64_t e = 0; e < E; ++e) dp[e] = p[b * E + e] * (dp[e] - dot);
  }
  // The gate (shared by the layers): its grad accumulates over layers; d_xl starts as g + the gate's term.
  fc_gate_[l].Backward(B, xl, value(gate_), dgate, tmp_.data(), gate_grad_.data(), nullptr);
  float* gg = grad(gate_);
  for (size_t j = 0; j < gate_grad_.size(); ++j) gg[j] += gate_grad_[j];
  const float* tmp = tmp_.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < B * D; ++i) d_xl[i] = g[i] + tmp[i];

  const float* V = value(w_[l]);
  const float* C = value(c_[l]);
  const float* U = value(u_[l]);
  std::fill(dz, dz + B * D, 0.0f);
  float* dc = tmp_.data();  // free again: neither g nor d_xl
  for (int64_t e = 0; e < E; ++e) {
    const int64_t k = l * E + e;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t d = 0; d < D; ++d) {
        const int64_t i = b * D + d;
        dc[i] = g[i] * x0[i] * p[b * E + e];
        dz[i] += dc[i];
      }
    const float* a = a_[k].data();
    const float* h = h_[k].data();
    float* dh = dr0_.data();
    float* da = dr1_.data();
    fc_u_[k].Backward(B, h, U + e * r * D, dc, dh, grad(u_[l]) + e * r * D, nullptr);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < B * r; ++i) dh[i] *= 1.0f - h[i] * h[i];
    fc_c_[k].Backward(B, a, C + e * r * r, dh, da, grad(c_[l]) + e * r * r, nullptr);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < B * r; ++i) da[i] *= 1.0f - a[i] * a[i];
    fc_w_[k].Backward(B, xl, V + e * D * r, da, dc, grad(w_[l]) + e * D * r, nullptr);  // dc reused: d x_l term
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < B * D; ++i) d_xl[i] += dc[i];
  }
  ColumnSums(B, D, dz, grad(b_[l]));
}

}  // namespace ctrain::model
