// layers/cin.h: the GEMM-based CIN against its naive reference (the paper's formula term by term),
// by finite differences, and its parameters, FLOPs and determinism.
#include "ctrain/model/layers/cin.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/model/layers/bf16.h"
#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::RandomVector;

struct CinCase {
  int64_t B;
  int32_t F, K;
  std::vector<int32_t> units;
  int64_t max_chunk_floats = int64_t{16} << 20;  // small values: several chunks
};

std::string Repro(const CinCase& c) {
  std::string u;
  for (int32_t h : c.units) u += (u.empty() ? "" : ",") + std::to_string(h);
  return "cin B=" + std::to_string(c.B) + " F=" + std::to_string(c.F) + " K=" + std::to_string(c.K) + " units=" + u +
         " max_chunk_floats=" + std::to_string(c.max_chunk_floats);
}

// A Cin with random parameters (biases included, so no term vanishes).
std::vector<DenseParam> MakeCin(const CinCase& c, Cin* cin) {
  std::vector<DenseParam> dense;
  dense.reserve(2 * c.units.size() + 2);
  CinSpec s;
  s.fields = c.F;
  s.embedding_size = c.K;
  s.units = c.units;
  s.max_chunk_floats = c.max_chunk_floats;
  *cin = Cin(s, &dense);
  uint32_t seed = 3;
  for (DenseParam& p : dense) p.value = RandomVector(p.value.size(), seed++, -0.5f, 0.5f);
  return dense;
}

std::vector<double> Reference(const CinCase& c, const std::vector<DenseParam>& dense, const float* e) {
  std::vector<const float*> w, b;
  const size_t L = c.units.size();
  for (size_t k = 0; k < L; ++k) {
    w.push_back(dense[2 * k].value.data());
    b.push_back(dense[2 * k + 1].value.data());
  }
  std::vector<double> y(c.B);
  CinReferenceForward(c.B, c.F, c.K, c.units, e, w, b, dense[2 * L].value.data(), dense[2 * L + 1].value.data(),
                      y.data());
  return y;
}

// The last three run in chunks: 2, 2, 1 examples (Z per example: K*F*F = 36 floats); 1 example each;
// 2 + 1 (K*F*F = 50).
const std::vector<CinCase> kCases = {{5, 3, 4, {2}},          {4, 4, 3, {3, 5}},         {3, 5, 2, {4, 2, 3}},
                                     {1, 1, 1, {1, 1}},       {5, 3, 4, {2, 3}, 72},     {4, 4, 3, {3, 5}, 48},
                                     {3, 5, 2, {4, 2, 3}, 100}};

TEST(Cin, ParametersInFuxiCtrLayoutAndFlops) {
  std::vector<DenseParam> dense;
  CinSpec s;
  s.fields = 39;
  s.embedding_size = 10;
  s.units = {16, 16, 16};
  Cin cin(s, &dense);
  std::vector<std::string> names;
  for (const DenseParam& p : dense) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"cin0/weights", "cin0/biases", "cin1/weights", "cin1/biases",
                                             "cin2/weights", "cin2/biases", "cin_out/weights", "cin_out/biases"}));
  EXPECT_EQ(dense[0].shape, (std::vector<int64_t>{39 * 39, 16}));
  EXPECT_EQ(dense[2].shape, (std::vector<int64_t>{39 * 16, 16}));
  EXPECT_EQ(dense[6].shape, (std::vector<int64_t>{48, 1}));
  // 6 * K * (1521*16 + 624*16 + 624*16) + 6 * 48
  EXPECT_EQ(cin.GemmFlopsPerExample(), 6.0 * 10 * (1521 * 16 + 624 * 16 + 624 * 16) + 6.0 * 48);
}

TEST(Cin, ForwardEqualsNaiveReference) {
  for (const CinCase& c : kCases) {
    SCOPED_TRACE(Repro(c));
    Cin cin;
    std::vector<DenseParam> dense = MakeCin(c, &cin);
    const std::vector<float> e = RandomVector(c.B * c.F * c.K, 17);
    ASSERT_TRUE(cin.Resize(c.B).ok());
    const float* y = cin.Forward(c.B, e.data());
    const std::vector<double> want = Reference(c, dense, e.data());
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    ASSERT_GT(scale, 0.05) << "outputs should not vanish";
    for (int64_t b = 0; b < c.B; ++b) EXPECT_NEAR(y[b], want[b], 1e-5 * (1 + scale)) << "b=" << b;
  }
}

// Hand-computed: F=1, K=2, one layer with one map: X^1[d] = c + W e[d]^2, y = w_out (sum_d X^1[d]) + c_out.
TEST(Cin, OneFieldOneMapByHand) {
  std::vector<DenseParam> dense;
  CinSpec s;
  s.fields = 1;
  s.embedding_size = 2;
  s.units = {1};
  Cin cin(s, &dense);
  dense[0].value = {3.0f};   // W
  dense[1].value = {0.5f};   // c
  dense[2].value = {2.0f};   // w_out
  dense[3].value = {-1.0f};  // c_out
  const std::vector<float> e = {1.0f, 2.0f, -1.0f, 0.5f};  // B=2
  ASSERT_TRUE(cin.Resize(2).ok());
  const float* y = cin.Forward(2, e.data());
  // b0: X = 0.5 + 3*1, 0.5 + 3*4 -> 16; y = 2*16 - 1 = 31.  b1: 0.5 + 3, 0.5 + 0.75 -> 4.75; y = 8.5
  EXPECT_FLOAT_EQ(y[0], 31.0f);
  EXPECT_FLOAT_EQ(y[1], 8.5f);
  const std::vector<float> dy = {1.0f, 0.5f};
  std::vector<float> de(4, 0.0f);
  cin.Backward(2, dy.data(), false, de.data());
  // d e[b,d] = dy * w_out * W * 2 e[b,d]
  EXPECT_FLOAT_EQ(de[0], 1.0f * 2 * 3 * 2 * 1.0f);
  EXPECT_FLOAT_EQ(de[1], 1.0f * 2 * 3 * 2 * 2.0f);
  EXPECT_FLOAT_EQ(de[2], 0.5f * 2 * 3 * 2 * -1.0f);
  EXPECT_FLOAT_EQ(de[3], 0.5f * 2 * 3 * 2 * 0.5f);
  EXPECT_FLOAT_EQ(dense[3].grad[0], 1.5f);                      // d c_out = sum dy
  EXPECT_FLOAT_EQ(dense[2].grad[0], 1.0f * 16 + 0.5f * 4.75f);  // d w_out = sum dy * pooled
  EXPECT_FLOAT_EQ(dense[1].grad[0], 2.0f * (1.0f * 2 + 0.5f * 2));  // d c = sum dy * w_out * K
}

// Finite differences of sum_b r_b y_b (the reference forward, in double) against Backward.
TEST(Cin, BackwardMatchesFiniteDifferences) {
  for (const CinCase& c : kCases) {
    const std::string repro = Repro(c);
    SCOPED_TRACE(repro);
    Cin cin;
    std::vector<DenseParam> dense = MakeCin(c, &cin);
    std::vector<float> e = RandomVector(c.B * c.F * c.K, 23);
    const std::vector<float> r = RandomVector(c.B, 29);
    ASSERT_TRUE(cin.Resize(c.B).ok());
    cin.Forward(c.B, e.data());
    std::vector<float> de(e.size(), 7.0f);  // overwritten
    cin.Backward(c.B, r.data(), false, de.data());
    auto f = [&] {
      const std::vector<double> y = Reference(c, dense, e.data());
      double s = 0;
      for (int64_t b = 0; b < c.B; ++b) s += r[b] * y[b];
      return s;
    };
    const double eps = 1e-3, abs_tol = 1e-4, rel_tol = 5e-3;
    EXPECT_TRUE(CheckGradient(repro + " e", &e, de, f, eps, abs_tol, rel_tol));
    for (DenseParam& p : dense) {
      const std::vector<float> g = p.grad;
      EXPECT_TRUE(CheckGradient(repro + " " + p.name, &p.value, g, f, eps, abs_tol, rel_tol));
    }
    // accumulate adds to d_e.
    std::vector<float> acc(e.size(), 1.0f);
    cin.Forward(c.B, e.data());
    cin.Backward(c.B, r.data(), true, acc.data());
    for (size_t i = 0; i < e.size(); ++i) EXPECT_FLOAT_EQ(acc[i], 1.0f + de[i]) << i;
  }
}

TEST(Cin, DeterministicAndBatchSizeChanges) {
  const CinCase c{6, 4, 3, {5, 3}};
  Cin cin;
  std::vector<DenseParam> dense = MakeCin(c, &cin);
  const std::vector<float> e = RandomVector(c.B * c.F * c.K, 31), r = RandomVector(c.B, 37);
  auto run = [&](int64_t B, std::vector<float>* y, std::vector<float>* de, std::vector<float>* dw) {
    ASSERT_TRUE(cin.Resize(B).ok());
    const float* out = cin.Forward(B, e.data());
    y->assign(out, out + B);
    de->assign(B * c.F * c.K, 0.0f);
    cin.Backward(B, r.data(), false, de->data());
    *dw = dense[0].grad;
  };
  std::vector<float> y1, de1, dw1, y2, de2, dw2, y3, de3, dw3;
  run(c.B, &y1, &de1, &dw1);
  run(2, &y3, &de3, &dw3);  // a smaller batch in between: the first rows only
  run(c.B, &y2, &de2, &dw2);
  EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), sizeof(float) * y1.size()));
  EXPECT_EQ(0, std::memcmp(de1.data(), de2.data(), sizeof(float) * de1.size()));
  EXPECT_EQ(0, std::memcmp(dw1.data(), dw2.data(), sizeof(float) * dw1.size()));
  for (int b = 0; b < 2; ++b) EXPECT_NEAR(y3[b], y1[b], 1e-5f);
}

// Chunks change the order of nothing but the GEMMs' row blocks: the same values as one chunk (to
// float rounding), and in bf16 each chunk's own Z is converted for its backward (a stale Z, the last
// chunk's, would give other weight gradients).
TEST(Cin, ChunksGiveOneChunksValuesInF32AndBf16) {
  for (DataType type : {DataType::kF32, DataType::kBF16}) {
    if (type == DataType::kBF16 && !Bf16GemmSupported().ok()) continue;
    SCOPED_TRACE(DataTypeName(type));
    auto run = [&](int64_t budget, std::vector<float>* y, std::vector<float>* de, std::vector<float>* grads) {
      std::vector<DenseParam> dense;
      CinSpec s;
      s.fields = 6;
      s.embedding_size = 4;
      s.units = {8, 5};
      s.gemm_dtype = type;
      s.max_chunk_floats = budget;
      Cin cin(s, &dense);
      uint32_t seed = 3;
      for (DenseParam& p : dense) p.value = RandomVector(p.value.size(), seed++, -0.5f, 0.5f);
      const int64_t B = 37;
      const std::vector<float> e = RandomVector(B * 6 * 4, 41), r = RandomVector(B, 43);
      ASSERT_TRUE(cin.Resize(B).ok());
      const float* out = cin.Forward(B, e.data());
      y->assign(out, out + B);
      de->assign(e.size(), 0.0f);
      cin.Backward(B, r.data(), false, de->data());
      grads->clear();
      for (const DenseParam& p : dense) grads->insert(grads->end(), p.grad.begin(), p.grad.end());
    };
    std::vector<float> y1, de1, g1, y2, de2, g2;
    run(int64_t{16} << 20, &y1, &de1, &g1);
    run(4 * 6 * 8 * 5, &y2, &de2, &g2);  // 5 examples a chunk: 7 full chunks and one of 2
    auto rel = [](const std::vector<float>& a, const std::vector<float>& b) {
      double num = 0, den = 0;
      for (size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
      return std::sqrt(num / den);
    };
    EXPECT_LT(rel(y2, y1), 1e-5);
    EXPECT_LT(rel(de2, de1), 1e-5);
    EXPECT_LT(rel(g2, g1), 1e-5);
  }
}

}  // namespace
}  // namespace ctrain::model
