#include "ctrain/model/layers/cin.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ctrain::model {

Cin::Cin(CinSpec spec, std::vector<DenseParam>* dense) : spec_(std::move(spec)), dense_(dense) {
  int64_t prev = spec_.fields;
  for (size_t k = 0; k < spec_.units.size(); ++k) {
    const int64_t h = spec_.units[k];
    const std::string scope = spec_.scope + std::to_string(k);
    wei_.push_back(AddDenseParam(dense_, scope + "/weights", {spec_.fields * prev, h}, true));
    bia_.push_back(AddDenseParam(dense_, scope + "/biases", {h}, true));
    fc_.emplace_back(spec_.fields * prev, h, spec_.gemm_dtype);
    pooled_width_ += h;
    prev = h;
  }
  if (spec_.units.empty()) return;
  out_wei_ = AddDenseParam(dense_, spec_.out_scope + "/weights", {pooled_width_, 1}, true);
  out_bia_ = AddDenseParam(dense_, spec_.out_scope + "/biases", {1}, true);
  fc_.emplace_back(pooled_width_, 1, spec_.gemm_dtype);
  x_.resize(spec_.units.size());
}

double Cin::GemmFlopsPerExample() const {
  double f = 0;
  int64_t prev = spec_.fields;
  for (int32_t h : spec_.units) {
    f += 3.0 * 2.0 * spec_.embedding_size * static_cast<double>(spec_.fields * prev) * h;
    prev = h;
  }
  return f + 3.0 * 2.0 * static_cast<double>(pooled_width_);
}

Status Cin::Resize(int64_t B) {
  if (fc_.empty()) return Status::OK();
  const int64_t K = spec_.embedding_size, F = spec_.fields, L = static_cast<int64_t>(spec_.units.size());
  int64_t max_in = 0, max_h = 0, prev = F;
  for (int64_t k = 0; k < L; ++k) {
    max_in = std::max(max_in, F * prev);
    max_h = std::max<int64_t>(max_h, spec_.units[k]);
    prev = spec_.units[k];
  }
  chunk_ = std::clamp<int64_t>(spec_.max_chunk_floats / (K * max_in), 1, B);
  const int64_t rest = B % chunk_;
  for (int64_t k = 0; k < L; ++k) {
    if (rest > 0) CTRAIN_RETURN_IF_ERROR(fc_[k].Prepare(rest * K));
    CTRAIN_RETURN_IF_ERROR(fc_[k].Prepare(chunk_ * K));
  }
  CTRAIN_RETURN_IF_ERROR(fc_[L].Prepare(B));
  if (B == batch_size_) return Status::OK();
  batch_size_ = B;
  // Grow only: a trainer alternates training and evaluation batch sizes.
  auto grow = [](std::vector<float>* v, int64_t n) {
    if (static_cast<int64_t>(v->size()) < n) v->resize(n);
  };
  for (int64_t k = 0; k < L; ++k) grow(&x_[k], B * K * spec_.units[k]);
  grow(&e_t_, B * K * F);
  grow(&d_e_t_, B * K * F);
  // Z: chunk_ examples, plus room for Backward's shifted copies (kShift, 2 * kShift).
  grow(&z_, chunk_ * K * max_in + 2 * kShift);
  grow(&dz_, chunk_ * K * max_in);
  grow(&dx_a_, chunk_ * K * max_h);
  grow(&dx_b_, chunk_ * K * max_h);
  grow(&pooled_, B * pooled_width_);
  grow(&d_pooled_, B * pooled_width_);
  grow(&y_, B);
  grow(&w_tmp_, max_in * max_h);
  grow(&b_tmp_, max_h);
  return Status::OK();
}

void Cin::OuterProduct(int64_t r0, int64_t rows, int64_t Hp, const float* prev, float* z) const {
  const int64_t F = spec_.fields;
  const float* et = e_t_.data();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* x0 = et + (r0 + r) * F;
    const float* xp = prev + (r0 + r) * Hp;
    float* zr = z + r * F * Hp;
    for (int64_t f = 0; f < F; ++f) {
      const float a = x0[f];
      float* zf = zr + f * Hp;
      for (int64_t i = 0; i < Hp; ++i) zf[i] = a * xp[i];
    }
  }
}

const float* Cin::Forward(int64_t B, const float* e) {
  const int64_t K = spec_.embedding_size, F = spec_.fields, L = static_cast<int64_t>(spec_.units.size());
  float* et = e_t_.data();
  // X^0 as [B*K, F]: row (b, d) holds e[b, :, d].
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t f = 0; f < F; ++f)
      for (int64_t d = 0; d < K; ++d) et[(b * K + d) * F + f] = e[(b * F + f) * K + d];
  for (int64_t b0 = 0; b0 < B; b0 += chunk_) {
    const int64_t r0 = b0 * K, rows = (std::min(B, b0 + chunk_) - b0) * K;
    const float* prev = et;
    int64_t Hp = F;
    for (int64_t k = 0; k < L; ++k) {
      OuterProduct(r0, rows, Hp, prev, z_.data());
      (void)fc_[k].Prepare(rows);  // prepared by Resize: a cache hit
      fc_[k].Forward(rows, z_.data(), (*dense_)[wei_[k]].value.data(), (*dense_)[bia_[k]].value.data(),
                     x_[k].data() + r0 * spec_.units[k]);
      prev = x_[k].data();
      Hp = spec_.units[k];
    }
  }
  // Sum pooling over d, concatenated over layers: pooled [B, sum H].
  const int64_t P = pooled_width_;
  float* pooled = pooled_.data();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    int64_t off = 0;
    for (int64_t k = 0; k < L; ++k) {
      const int64_t H = spec_.units[k];
      float* p = pooled + b * P + off;
      std::fill(p, p + H, 0.0f);
      for (int64_t d = 0; d < K; ++d) {
        const float* x = x_[k].data() + (b * K + d) * H;
        for (int64_t h = 0; h < H; ++h) p[h] += x[h];
      }
      off += H;
    }
  }
  fc_[L].Forward(B, pooled, (*dense_)[out_wei_].value.data(), (*dense_)[out_bia_].value.data(), y_.data());
  return y_.data();
}

void Cin::Backward(int64_t B, const float* d_y, bool accumulate, float* d_e) {
  const int64_t K = spec_.embedding_size, F = spec_.fields, L = static_cast<int64_t>(spec_.units.size());
  const int64_t P = pooled_width_;
  fc_[L].Backward(B, pooled_.data(), (*dense_)[out_wei_].value.data(), d_y, d_pooled_.data(),
                  (*dense_)[out_wei_].grad.data(), (*dense_)[out_bia_].grad.data());
  const float* et = e_t_.data();
  float* det = d_e_t_.data();
  std::fill(det, det + B * K * F, 0.0f);
  const bool chunked = chunk_ < B;
  for (int64_t b0 = 0, c = 0; b0 < B; b0 += chunk_, ++c) {
    const int64_t r0 = b0 * K, rows = (std::min(B, b0 + chunk_) - b0) * K;
    // One chunk: Z lands where Forward put it, so a bf16 FullyConnected reuses its Forward copy. Several:
    // the recomputed Z of chunk c goes to a pointer its FullyConnected did not see last (alternating
    // shifts), so it converts this chunk's Z again (FullyConnected keys its bf16 reuse on the pointer).
    float* z = z_.data() + (chunked ? kShift * (1 + c % 2) : 0);
    float* dx = dx_a_.data();     // dX^k of the chunk's rows
    float* dprev = dx_b_.data();  // dX^{k-1}
    int64_t off = P;
    for (int64_t k = L; k-- > 0;) {
      const int64_t H = spec_.units[k];
      const int64_t Hp = k == 0 ? F : spec_.units[k - 1];
      off -= H;
      // dX^k[(b,d), h] = dp^k[b, h] (+ what layer k+1 sent back, already in dx).
      const bool from_next = k + 1 < L;
      const float* dp = d_pooled_.data();
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const float* g = dp + ((r0 + r) / K) * P + off;
        float* o = dx + r * H;
        if (from_next) {
          for (int64_t h = 0; h < H; ++h) o[h] += g[h];
        } else {
          for (int64_t h = 0; h < H; ++h) o[h] = g[h];
        }
      }
      const float* prev = k == 0 ? et : x_[k - 1].data();
      OuterProduct(r0, rows, Hp, prev, z);
      (void)fc_[k].Prepare(rows);  // prepared by Resize: a cache hit
      DenseParam& w = (*dense_)[wei_[k]];
      DenseParam& bias = (*dense_)[bia_[k]];
      // The first chunk writes the parameter gradients, the others add theirs (chunk order: fixed).
      fc_[k].Backward(rows, z, w.value.data(), dx, dz_.data(), c == 0 ? w.grad.data() : w_tmp_.data(),
                      c == 0 ? bias.grad.data() : b_tmp_.data());
      if (c > 0) {
        for (size_t i = 0; i < w.grad.size(); ++i) w.grad[i] += w_tmp_[i];
        for (size_t i = 0; i < bias.grad.size(); ++i) bias.grad[i] += b_tmp_[i];
      }
      const float* dz = dz_.data();
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const float* x0 = et + (r0 + r) * F;
        const float* xp = prev + (r0 + r) * Hp;
        const float* dzr = dz + r * F * Hp;
        float* d0 = det + (r0 + r) * F;
        if (k == 0) {
          // X^{k-1} is X^0 itself: both factors' gradients go to X^0.
          for (int64_t f = 0; f < F; ++f) {
            const float* dzf = dzr + f * Hp;
            float s = 0.0f;
            for (int64_t i = 0; i < Hp; ++i) {
              s += dzf[i] * xp[i];
              d0[i] += dzf[i] * x0[f];
            }
            d0[f] += s;
          }
        } else {
          float* dpr = dprev + r * Hp;
          std::fill(dpr, dpr + Hp, 0.0f);
          for (int64_t f = 0; f < F; ++f) {
            const float* dzf = dzr + f * Hp;
            float s = 0.0f;
            for (int64_t i = 0; i < Hp; ++i) {
              s += dzf[i] * xp[i];
              dpr[i] += dzf[i] * x0[f];
            }
            d0[f] += s;
          }
        }
      }
      std::swap(dx, dprev);
    }
  }
  // dX^0 [B*K, F] back to d_e [B, F, K].
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t f = 0; f < F; ++f)
      for (int64_t d = 0; d < K; ++d) {
        const float g = det[(b * K + d) * F + f];
        float& o = d_e[(b * F + f) * K + d];
        o = accumulate ? o + g : g;
      }
}

void CinReferenceForward(int64_t B, int32_t F, int32_t K, const std::vector<int32_t>& units, const float* e,
                         const std::vector<const float*>& weights, const std::vector<const float*>& biases,
                         const float* out_w, const float* out_b, double* y) {
  for (int64_t b = 0; b < B; ++b) {
    // X[h][d] of the previous layer, starting from X^0 = e[b].
    std::vector<std::vector<double>> prev(F, std::vector<double>(K));
    for (int32_t f = 0; f < F; ++f)
      for (int32_t d = 0; d < K; ++d) prev[f][d] = e[(b * F + f) * K + d];
    double out = out_b[0];
    int64_t off = 0;
    for (size_t k = 0; k < units.size(); ++k) {
      const int64_t Hp = static_cast<int64_t>(prev.size()), H = units[k];
      std::vector<std::vector<double>> next(H, std::vector<double>(K));
      for (int64_t h = 0; h < H; ++h) {
        double pooled = 0;
        for (int32_t d = 0; d < K; ++d) {
          double s = biases[k][h];
          for (int32_t f = 0; f < F; ++f)
            for (int64_t i = 0; i < Hp; ++i)
              s += static_cast<double>(weights[k][(f * Hp + i) * H + h]) * e[(b * F + f) * K + d] * prev[i][d];
          next[h][d] = s;
          pooled += s;
        }
        out += pooled * out_w[off + h];
      }
      off += H;
      prev = std::move(next);
    }
    y[b] = out;
  }
}

}  // namespace ctrain::model
