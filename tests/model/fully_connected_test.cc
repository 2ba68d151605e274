#include "ctrain/model/layers/fully_connected.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <omp.h>

#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::Dot;
using testing::RandomVector;

// Max |a - b| / (1 + |b|) over the arrays.
double MaxScaledErr(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]) / (1.0 + std::fabs(b[i])));
  return m;
}

// oneDNN vs the naive loops for forward and all three gradients.
void CompareWithReference(int64_t B, int64_t in, int64_t out, uint32_t seed) {
  const std::string repro = "fully_connected mb" + std::to_string(B) + "ic" + std::to_string(in) + "oc" +
                            std::to_string(out) + " seed=" + std::to_string(seed);
  SCOPED_TRACE(repro);
  FullyConnected fc(in, out);
  ASSERT_TRUE(fc.Prepare(B).ok());
  const auto src = RandomVector(B * in, seed), wei = RandomVector(in * out, seed + 1),
             bia = RandomVector(out, seed + 2), diff_dst = RandomVector(B * out, seed + 3);
  std::vector<float> dst(B * out), ref_dst(B * out);
  fc.Forward(B, src.data(), wei.data(), bia.data(), dst.data());
  FullyConnectedReferenceForward(B, in, out, src.data(), wei.data(), bia.data(), ref_dst.data());
  // f32 accumulation over `in` terms of magnitude <= 1: allow ~sqrt(in) ulps of the sum scale.
  const double tol = 1e-6 * std::sqrt(static_cast<double>(std::max(in, B))) * 4;
  EXPECT_LE(MaxScaledErr(dst, ref_dst), tol);

  std::vector<float> ds(B * in), dw(in * out), db(out), rds(B * in), rdw(in * out), rdb(out);
  fc.Backward(B, src.data(), wei.data(), diff_dst.data(), ds.data(), dw.data(), db.data());
  FullyConnectedReferenceBackward(B, in, out, src.data(), wei.data(), diff_dst.data(), rds.data(), rdw.data(),
                                  rdb.data());
  EXPECT_LE(MaxScaledErr(ds, rds), tol) << "diff_src";
  EXPECT_LE(MaxScaledErr(dw, rdw), tol) << "diff_wei";
  EXPECT_LE(MaxScaledErr(db, rdb), tol) << "diff_bia";

  // Null diff_src skips backward data and still gives the same weights gradient.
  std::vector<float> dw2(in * out), db2(out);
  fc.Backward(B, src.data(), wei.data(), diff_dst.data(), nullptr, dw2.data(), db2.data());
  EXPECT_EQ(dw2, dw);
  EXPECT_EQ(db2, db);
  // Same inputs, same bits (cached primitives are reused).
  std::vector<float> dst2(B * out);
  fc.Forward(B, src.data(), wei.data(), bia.data(), dst2.data());
  EXPECT_EQ(dst2, dst);
  // No bias.
  fc.Forward(B, src.data(), wei.data(), nullptr, dst2.data());
  FullyConnectedReferenceForward(B, in, out, src.data(), wei.data(), nullptr, ref_dst.data());
  EXPECT_LE(MaxScaledErr(dst2, ref_dst), tol);
}

TEST(FullyConnected, Ref1x1x1) { CompareWithReference(1, 1, 1, 1); }
TEST(FullyConnected, Ref7x13x5) { CompareWithReference(7, 13, 5, 2); }
TEST(FullyConnected, RefOutputLayer) { CompareWithReference(33, 400, 1, 3); }
TEST(FullyConnected, RefDeepFmFirstLayer) { CompareWithReference(64, 1248, 400, 4); }
TEST(FullyConnected, Ref251x511x1023) { CompareWithReference(251, 511, 1023, 5); }

TEST(FullyConnected, RefDcnOutputLayer) { CompareWithReference(256, 624, 1, 6); }

// One output runs its own loops (RowDotPath): the same bits for any thread count, and a Prepare'd batch
// size is still enforced.
TEST(FullyConnected, OneOutputIsTheSameForAnyThreadCount) {
  const int64_t B = 97, in = 300;
  const auto src = RandomVector(B * in, 31), wei = RandomVector(in, 32), bia = RandomVector(1, 33),
             dy = RandomVector(B, 34);
  std::vector<float> first_dst, first_ds, first_dw, first_db;
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    omp_set_num_threads(threads);
    FullyConnected fc(in, 1);
    ASSERT_TRUE(fc.Prepare(B).ok());
    std::vector<float> dst(B), ds(B * in), dw(in), db(1);
    fc.Forward(B, src.data(), wei.data(), bia.data(), dst.data());
    fc.Backward(B, src.data(), wei.data(), dy.data(), ds.data(), dw.data(), db.data());
    if (first_dst.empty()) {
      first_dst = dst, first_ds = ds, first_dw = dw, first_db = db;
      continue;
    }
    EXPECT_EQ(dst, first_dst);
    EXPECT_EQ(ds, first_ds);
    EXPECT_EQ(dw, first_dw);
    EXPECT_EQ(db, first_db);
  }
  omp_set_num_threads(saved);
}

TEST(FullyConnectedDeathTest, OneOutputRefusesAnUnpreparedBatchSize) {
  FullyConnected fc(5, 1);
  ASSERT_TRUE(fc.Prepare(4).ok());
  std::vector<float> src(3 * 5, 1.0f), wei(5, 1.0f), dst(3);
  EXPECT_DEATH(fc.Forward(3, src.data(), wei.data(), nullptr, dst.data()), "last Prepare was B=4");
}

TEST(FullyConnected, SeveralBatchSizesShareOneLayer) {
  for (int64_t out : {4, 1}) {  // oneDNN primitives per B, and the one-output loops
    FullyConnected fc(6, out);
    for (int64_t B : {3, 8, 3, 1}) {
      ASSERT_TRUE(fc.Prepare(B).ok());
      const auto src = RandomVector(B * 6, B), wei = RandomVector(6 * out, 9), bia = RandomVector(out, 10);
      std::vector<float> dst(B * out), ref(B * out);
      fc.Forward(B, src.data(), wei.data(), bia.data(), dst.data());
      FullyConnectedReferenceForward(B, 6, out, src.data(), wei.data(), bia.data(), ref.data());
      EXPECT_LE(MaxScaledErr(dst, ref), 1e-6) << "B=" << B << " out=" << out;
    }
  }
}

TEST(FullyConnected, Errors) {
  FullyConnected zero(0, 3);
  Status s = zero.Prepare(4);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "fully_connected mb4ic0oc3: every dimension must be >= 1");
  FullyConnected unknown(2, 3, static_cast<DataType>(7));
  s = unknown.Prepare(4);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "fully_connected mb4ic2oc3: unknown data type 7");
  // kBF16 is covered by fully_connected_bf16_test.cc.
}

// Finite differences through the oneDNN path (the layer is linear in each
// input, so central differences are exact up to rounding).
void GradCheck(int64_t B, int64_t in, int64_t out, uint32_t seed) {
  const std::string repro = "fully_connected gradcheck mb" + std::to_string(B) + "ic" + std::to_string(in) + "oc" +
                            std::to_string(out) + " seed=" + std::to_string(seed);
  FullyConnected fc(in, out);
  ASSERT_TRUE(fc.Prepare(B).ok());
  auto src = RandomVector(B * in, seed), wei = RandomVector(in * out, seed + 1), bia = RandomVector(out, seed + 2);
  const auto r = RandomVector(B * out, seed + 3);
  std::vector<float> dst(B * out), ds(B * in), dw(in * out), db(out);
  fc.Backward(B, src.data(), wei.data(), r.data(), ds.data(), dw.data(), db.data());
  auto f = [&] {
    fc.Forward(B, src.data(), wei.data(), bia.data(), dst.data());
    return Dot(r, dst.data(), dst.size());
  };
  EXPECT_TRUE(CheckGradient(repro + " d_src", &src, ds, f, 0.25, 1e-3, 1e-3));
  EXPECT_TRUE(CheckGradient(repro + " d_wei", &wei, dw, f, 0.25, 1e-3, 1e-3));
  EXPECT_TRUE(CheckGradient(repro + " d_bia", &bia, db, f, 0.25, 1e-3, 1e-3));
}

TEST(FullyConnected, GradCheck1x1x1) { GradCheck(1, 1, 1, 21); }
TEST(FullyConnected, GradCheck7x13x5) { GradCheck(7, 13, 5, 22); }
TEST(FullyConnected, GradCheck16x40x9) { GradCheck(16, 40, 9, 23); }
TEST(FullyConnected, GradCheck16x40x1) { GradCheck(16, 40, 1, 24); }

}  // namespace
}  // namespace ctrain::model
