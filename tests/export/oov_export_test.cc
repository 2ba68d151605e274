// ctrain export of a model trained with --oov bucket: the ONNX graph reads an id at or above the vocabulary as its
// field's out-of-vocabulary row (Less + Where, one-hot and --multi-hot), as the readers do; onnxruntime predicts
// what `ctrain predict` says to 1e-5 on rows with many unknown ids, and the .npy export's numpy forward pass
// (tests/python/export_check.py, which maps the ids itself) agrees too.
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

// LibSVM rows, F = 4, vocabulary ids [0, 40) (field f: f * 10 + [0, 10)); with probability `unknown` a field's
// id is one beyond it (100 and up). The click follows field 1's id and field 0's value.
std::string Rows(int n, uint32_t seed, double unknown) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::string s;
  for (int r = 0; r < n; ++r) {
    const int k1 = static_cast<int>(rng() % 10);
    const double v0 = 0.1 + 0.9 * u(rng);
    s += u(rng) < 0.1 + 0.06 * k1 + 0.2 * v0 ? "1" : "0";
    for (int f = 0; f < 4; ++f) {
      const int id = u(rng) < unknown ? 100 + f * 10 + static_cast<int>(rng() % 10)
                                      : f * 10 + (f == 1 ? k1 : static_cast<int>(rng() % 10));
      s += " " + std::to_string(id) + ":" + (f == 0 ? std::to_string(v0) : std::string("1"));
    }
    s += "\n";
  }
  return s;
}

class OovExportTest : public ScratchDirTest {
 protected:
  OovExportTest() : ScratchDirTest("ctrain_export_oov") {}
};

TEST_F(OovExportTest, OnnxAndNpyReadUnknownIdsAsTheirFieldsRow) {
  SKIP_WITHOUT_ONNXRUNTIME();
  Write("train.libsvm", Rows(1500, 1, 0.1));
  Write("test.libsvm", Rows(300, 2, 0.4));
  auto r = RunCtrain("train --train " + P("train.libsvm") + " --format libsvm --field-size 4 --feature-size 40 " +
                     "--oov bucket --embedding-size 4 --deep-layers 16,8 --batch-size 50 --epochs 3 " +
                     "--learning-rate 0.005 --dropout 0 --progress none --model-dir " + P("m"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<double> want = PredictSpread(P("m"), P("test.libsvm"), P("pred.txt"), 0.2);
  ASSERT_EQ(want.size(), 300u);
  ExpectExportPredicts(want, P("m"), "--format onnx", "onnx", P("model.onnx"), P("test.libsvm"));
  ExpectExportPredicts(want, P("m"), "--multi-hot", "multi_hot", P("multi_hot.onnx"), P("test.libsvm"));
  ExpectExportPredicts(want, P("m"), "--format npy", "npy", P("npy"), P("test.libsvm"));
}

}  // namespace
}  // namespace ctrain::exporter
