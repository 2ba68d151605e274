// CrossNet (layers/cross_net.h): every variant against the naive reference,
// a hand-computed DCN layer, finite-difference gradients of x0 and of every
// parameter, parameter names/shapes, FLOPs and FuxiCTR's mixture initialisation.
#include "ctrain/model/layers/cross_net.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::RandomVector;

const char* Name(CrossKind k) {
  switch (k) {
    case CrossKind::kVector: return "vector";
    case CrossKind::kMatrix: return "matrix";
    case CrossKind::kLowRank: return "low_rank";
    case CrossKind::kMixture: return "mixture";
  }
  return "?";
}

CrossNetSpec Spec(CrossKind kind, int32_t layers) {
  CrossNetSpec s;
  s.kind = kind;
  s.dim = 6;
  s.layers = layers;
  s.low_rank = kind == CrossKind::kLowRank || kind == CrossKind::kMixture ? 3 : 0;
  s.num_experts = kind == CrossKind::kMixture ? 3 : 1;
  return s;
}

// Random parameters of order 1 (every term matters; biases non-zero).
void Randomize(std::vector<DenseParam>* dense, uint32_t seed) {
  for (DenseParam& p : *dense) {
    const auto r = RandomVector(p.value.size(), seed++, -0.7f, 0.7f);
    p.value.assign(r.begin(), r.end());
  }
}

void CheckVariant(CrossKind kind, int32_t layers, int64_t B) {
  const CrossNetSpec spec = Spec(kind, layers);
  const std::string repro = std::string("cross_net ") + Name(kind) + " L=" + std::to_string(layers) +
                            " D=6 r=3 E=3 B=" + std::to_string(B);
  SCOPED_TRACE(repro);
  std::vector<DenseParam> dense;
  CrossNet net(spec, &dense);
  Randomize(&dense, 11);
  ASSERT_TRUE(net.Resize(B).ok());
  const int64_t D = spec.dim;
  std::vector<float> x0 = RandomVector(B * D, 3, -1.0f, 1.0f);
  const float* y = net.Forward(B, x0.data());
  std::vector<double> ref(B * D);
  CrossNetReferenceForward(spec, dense, B, x0.data(), ref.data());
  for (int64_t i = 0; i < B * D; ++i) ASSERT_NEAR(y[i], ref[i], 1e-5 * (1 + std::fabs(ref[i]))) << "i=" << i;
  if (layers > 0) {
    double moved = 0;
    for (int64_t i = 0; i < B * D; ++i) moved += std::fabs(ref[i] - x0[i]);
    EXPECT_GT(moved, 0.1) << "the cross layers should change x0";
  }

  // Analytic gradients of f = sum r ⊙ y.
  const std::vector<float> r = RandomVector(B * D, 5);
  std::vector<float> d_x0(B * D, 123.0f);  // overwritten
  for (DenseParam& p : dense) std::fill(p.grad.begin(), p.grad.end(), 77.0f);  // overwritten
  net.Backward(B, r.data(), d_x0.data());
  std::vector<std::vector<float>> grads;
  for (const DenseParam& p : dense) grads.push_back(p.grad);
  auto f = [&] {
    std::vector<double> out(B * D);
    CrossNetReferenceForward(spec, dense, B, x0.data(), out.data());
    double s = 0;
    for (int64_t i = 0; i < B * D; ++i) s += r[i] * out[i];
    return s;
  };
  const double eps = 1e-3, abs_tol = 2e-4, rel_tol = 2e-3;
  EXPECT_TRUE(CheckGradient(repro + " x0", &x0, d_x0, f, eps, abs_tol, rel_tol));
  for (size_t i = 0; i < dense.size(); ++i)
    EXPECT_TRUE(CheckGradient(repro + " " + dense[i].name, &dense[i].value, grads[i], f, eps, abs_tol, rel_tol));
}

TEST(CrossNet, VectorMatchesReferenceAndGradients) { CheckVariant(CrossKind::kVector, 3, 5); }
TEST(CrossNet, MatrixMatchesReferenceAndGradients) { CheckVariant(CrossKind::kMatrix, 2, 5); }
TEST(CrossNet, LowRankMatchesReferenceAndGradients) { CheckVariant(CrossKind::kLowRank, 2, 5); }
TEST(CrossNet, MixtureMatchesReferenceAndGradients) { CheckVariant(CrossKind::kMixture, 2, 5); }
TEST(CrossNet, OneRowAndOneLayer) {
  for (CrossKind k : {CrossKind::kVector, CrossKind::kMatrix, CrossKind::kLowRank, CrossKind::kMixture})
    CheckVariant(k, 1, 1);
}

TEST(CrossNet, NoLayersIsIdentity) {
  std::vector<DenseParam> dense;
  CrossNet net(Spec(CrossKind::kMixture, 0), &dense);
  EXPECT_TRUE(dense.empty());
  ASSERT_TRUE(net.Resize(2).ok());
  const std::vector<float> x0 = RandomVector(12, 1), g = RandomVector(12, 2);
  EXPECT_EQ(net.Forward(2, x0.data()), x0.data());
  std::vector<float> d(12);
  net.Backward(2, g.data(), d.data());
  EXPECT_EQ(d, g);
  EXPECT_EQ(net.GemmFlopsPerExample(), 0.0);
}

// DCN's layer by hand: x0 = (1, 2), w = (0.5, -1), b = (0.1, 0.2): x0·w = -1.5,
// x1 = x0 * -1.5 + b + x0 = (-0.4, -0.8).
TEST(CrossNet, DcnLayerByHand) {
  CrossNetSpec s = Spec(CrossKind::kVector, 1);
  s.dim = 2;
  std::vector<DenseParam> dense;
  CrossNet net(s, &dense);
  ASSERT_EQ(dense.size(), 2u);
  dense[0].value = {0.5f, -1.0f};
  dense[1].value = {0.1f, 0.2f};
  ASSERT_TRUE(net.Resize(1).ok());
  const std::vector<float> x0 = {1.0f, 2.0f};
  const float* y = net.Forward(1, x0.data());
  EXPECT_NEAR(y[0], -0.4f, 1e-6);
  EXPECT_NEAR(y[1], -0.8f, 1e-6);
}

TEST(CrossNet, ParameterNamesShapesAndFlops) {
  struct Case {
    CrossKind kind;
    std::vector<std::string> names;
    std::vector<std::vector<int64_t>> shapes;
    double flops;  // D = 6, r = 3, E = 3, L = 2
  };
  const std::vector<Case> cases = {
      {CrossKind::kVector, {"cross0/weights", "cross0/biases", "cross1/weights", "cross1/biases"},
       {{6, 1}, {6}, {6, 1}, {6}}, 2 * 6.0 * 6},
      {CrossKind::kMatrix, {"cross0/weights", "cross0/biases", "cross1/weights", "cross1/biases"},
       {{6, 6}, {6}, {6, 6}, {6}}, 2 * 6.0 * 36},
      {CrossKind::kLowRank,
       {"cross0/v/weights", "cross0/u/weights", "cross0/biases", "cross1/v/weights", "cross1/u/weights",
        "cross1/biases"},
       {{6, 3}, {3, 6}, {6}, {6, 3}, {3, 6}, {6}}, 2 * 6.0 * 36},
      {CrossKind::kMixture,
       {"cross0/experts_v", "cross0/experts_c", "cross0/experts_u", "cross0/biases", "cross1/experts_v",
        "cross1/experts_c", "cross1/experts_u", "cross1/biases", "cross_gate/weights"},
       {{3, 6, 3}, {3, 3, 3}, {3, 3, 6}, {6}, {3, 6, 3}, {3, 3, 3}, {3, 3, 6}, {6}, {6, 3}},
       2 * 6.0 * (18 + 3 * (36 + 9))},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(Name(c.kind));
    std::vector<DenseParam> dense;
    CrossNet net(Spec(c.kind, 2), &dense);
    std::vector<std::string> names;
    std::vector<std::vector<int64_t>> shapes;
    for (const DenseParam& p : dense) names.push_back(p.name), shapes.push_back(p.shape);
    EXPECT_EQ(names, c.names);
    EXPECT_EQ(shapes, c.shapes);
    EXPECT_EQ(net.GemmFlopsPerExample(), c.flops);
  }
}

// FuxiCTR's CrossNetMix draws U, V [E, D, r] and C [E, r, r] with xavier fans
// (D*r, E*r) and (r*r, E*r), and each expert's gate Linear(D, 1) with (D, 1).
TEST(CrossNet, MixtureInitialisationAsFuxiCtr) {
  CrossNetSpec s = Spec(CrossKind::kMixture, 1);
  s.dim = 40;
  s.low_rank = 8;
  s.num_experts = 4;
  std::vector<DenseParam> dense, state;
  CrossNet net(s, &dense);
  InitDenseParams(9, &dense, &state);
  net.InitMixture(9);
  auto check = [&](size_t i, double fan_in, double fan_out) {
    SCOPED_TRACE(dense[i].name);
    const double limit = std::sqrt(6.0 / (fan_in + fan_out));
    double mx = 0, ss = 0;
    for (float v : dense[i].value) mx = std::max(mx, std::fabs(static_cast<double>(v))), ss += v * v;
    EXPECT_LE(mx, limit);
    EXPECT_GT(mx, 0.9 * limit);
    EXPECT_NEAR(std::sqrt(ss / dense[i].value.size()), limit / std::sqrt(3.0), 0.12 * limit);
  };
  check(0, 40 * 8, 4 * 8);  // experts_v
  check(1, 8 * 8, 4 * 8);   // experts_c
  check(2, 40 * 8, 4 * 8);  // experts_u
  check(4, 40, 1);          // gate
  for (float b : dense[3].value) EXPECT_EQ(b, 0.0f);
}

}  // namespace
}  // namespace ctrain::model
