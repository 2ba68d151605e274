// CrossNetReferenceForward (layers/cross_net.h): the formulas written as loops
// in double, one example at a time, parameters found by name; for tests.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ctrain/model/layers/cross_net.h"

namespace ctrain::model {
namespace {

const std::vector<float>& Param(const std::vector<DenseParam>& dense, const std::string& name) {
  for (const DenseParam& p : dense)
    if (p.name == name) return p.value;
  static const std::vector<float> none;
  return none;
}

// y [out] = x [in] · W [in, out] (W row-major).
std::vector<double> VecMat(const std::vector<double>& x, const float* W, int64_t in, int64_t out) {
  std::vector<double> y(out, 0.0);
  for (int64_t i = 0; i < in; ++i)
    for (int64_t j = 0; j < out; ++j) y[j] += x[i] * static_cast<double>(W[i * out + j]);
  return y;
}

}  // namespace

void CrossNetReferenceForward(const CrossNetSpec& spec, const std::vector<DenseParam>& dense, int64_t B,
                              const float* x0, double* out) {
  const int64_t D = spec.dim, r = spec.low_rank, E = spec.num_experts;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> base(x0 + b * D, x0 + (b + 1) * D), x = base;
    for (int32_t l = 0; l < spec.layers; ++l) {
      const std::string s = spec.scope + std::to_string(l);
      const std::vector<float>& bias = Param(dense, s + "/biases");
      std::vector<double> next(D);
      if (spec.kind == CrossKind::kVector) {
        const double dot = VecMat(x, Param(dense, s + "/weights").data(), D, 1)[0];
        for (int64_t d = 0; d < D; ++d) next[d] = base[d] * dot + bias[d] + x[d];
      } else if (spec.kind == CrossKind::kMatrix || spec.kind == CrossKind::kLowRank) {
        const std::vector<double> z =
            spec.kind == CrossKind::kMatrix
                ? VecMat(x, Param(dense, s + "/weights").data(), D, D)
                : VecMat(VecMat(x, Param(dense, s + "/v/weights").data(), D, r), Param(dense, s + "/u/weights").data(),
                         r, D);
        for (int64_t d = 0; d < D; ++d) next[d] = base[d] * (z[d] + bias[d]) + x[d];
      } else {
        const float* gate = Param(dense, spec.scope + "_gate/weights").data();
        std::vector<double> logit = VecMat(x, gate, D, E), prob(E);
        double mx = logit[0], sum = 0;
        for (double v : logit) mx = std::max(mx, v);
        for (int64_t e = 0; e < E; ++e) sum += prob[e] = std::exp(logit[e] - mx);
        for (int64_t e = 0; e < E; ++e) prob[e] /= sum;
        for (int64_t d = 0; d < D; ++d) next[d] = x[d];
        for (int64_t e = 0; e < E; ++e) {
          std::vector<double> a = VecMat(x, Param(dense, s + "/experts_v").data() + e * D * r, D, r);
          for (double& v : a) v = std::tanh(v);
          std::vector<double> h = VecMat(a, Param(dense, s + "/experts_c").data() + e * r * r, r, r);
          for (double& v : h) v = std::tanh(v);
          const std::vector<double> c = VecMat(h, Param(dense, s + "/experts_u").data() + e * r * D, r, D);
          for (int64_t d = 0; d < D; ++d) next[d] += prob[e] * base[d] * (c[d] + bias[d]);
        }
      }
      x = next;
    }
    for (int64_t d = 0; d < D; ++d) out[b * D + d] = x[d];
  }
}

}  // namespace ctrain::model
