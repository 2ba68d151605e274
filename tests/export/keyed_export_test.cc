// ctrain export of a keyed-table model (--embedding-table keyed, docs/checkpoint.md#keyed-tables): the ONNX
// graph maps keys to rows with ONNX-ML's LabelEncoder (unknown keys -> the zero row), the numeric field's id
// passes through; onnxruntime predicts what `ctrain predict` says to 1e-5, on rows that mix trained and
// unknown keys, one-hot and as the --multi-hot graph; the .npy export writes the keys beside the rows and a
// numpy forward pass on it agrees too.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "cli/cli_harness.h"
#include "export/export_check.h"

namespace ctrain::exporter {
namespace {

using ctrain::testing::RunCtrain;
using ctrain::testing::ScratchDirTest;
using testing::ExpectExportPredicts;
using testing::PredictSpread;

// LibSVM rows, F = 4: field 0 numeric (id 0, a real value), fields 1..3 keys far beyond any table size (61-bit
// values); `unknown` of them drawn from keys training never saw. The click probability follows field 1's key and
// field 0's value.
std::string Rows(int n, uint32_t seed, double unknown) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto key = [&](int field, int k) { return (int64_t{1} << 60) + field * 1000003LL * 7919 + k * 104729LL; };
  std::string s;
  for (int r = 0; r < n; ++r) {
    const double v0 = 0.05 + 0.95 * u(rng);
    const int k1 = static_cast<int>(rng() % 8);
    const double p = 0.1 + 0.4 * (k1 % 2) + 0.4 * v0;
    s += std::string(u(rng) < p ? "1" : "0") + " 0:" + std::to_string(v0);
    for (int f = 1; f < 4; ++f) {
      const int k = u(rng) < unknown ? 100 + static_cast<int>(rng() % 50) : (f == 1 ? k1 : static_cast<int>(rng() % 12));
      s += " " + std::to_string(key(f, k)) + ":1";
    }
    s += "\n";
  }
  return s;
}

class KeyedExportTest : public ScratchDirTest {
 protected:
  KeyedExportTest() : ScratchDirTest("ctrain_export_keyed") {}
};

TEST_F(KeyedExportTest, OnnxAndNpyPredictAsCtrainPredict) {
  SKIP_WITHOUT_ONNXRUNTIME();
  Write("train.libsvm", Rows(1500, 1, 0.0));
  Write("test.libsvm", Rows(300, 2, 0.2));
  auto r = RunCtrain("train --train " + P("train.libsvm") + " --format libsvm --field-size 4 --num-dense-fields 1 " +
                     "--embedding-table keyed --embedding-size 4 --deep-layers 16,8 --batch-size 50 --epochs 3 " +
                     "--learning-rate 0.005 --dropout 0 --progress none --model-dir " + P("m"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<double> want = PredictSpread(P("m"), P("test.libsvm"), P("pred.txt"), 0.3);
  ASSERT_EQ(want.size(), 300u);
  const std::string out = ExpectExportPredicts(want, P("m"), "--format onnx", "onnx", P("model.onnx"), P("test.libsvm"));
  EXPECT_NE(out.find("keyed table of"), std::string::npos) << out;
  ExpectExportPredicts(want, P("m"), "--multi-hot", "multi_hot", P("multi_hot.onnx"), P("test.libsvm"));
  ExpectExportPredicts(want, P("m"), "--format npy", "npy", P("npy"), P("test.libsvm"));
  EXPECT_TRUE(std::filesystem::exists(P("npy/embeddings.keys.npy")));
}

}  // namespace
}  // namespace ctrain::exporter
