// ctrain export of an xdeepfm model (src/ctrain/export/onnx_xdeepfm.cc): a small model trained
// through the command line, exported as ONNX, predicts in onnxruntime what `ctrain predict` says,
// to 1e-5, with and without its DNN (batch norm on), one-hot and as the --multi-hot graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
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
namespace fs = std::filesystem;

// LibSVM rows, 1-based ids, F = 4 fields with real values: the click probability (0.1..0.9)
// follows field 0's id and field 1's value, so the trained model's predictions spread without
// saturating (a prediction near 0 or 1 would hide a logit difference).
std::string Rows(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::string s;
  for (int r = 0; r < n; ++r) {
    const int id0 = 1 + static_cast<int>(rng() % 6);
    const double v1 = 0.05 + 0.95 * u(rng);
    const double p = 0.1 + 0.4 * (id0 % 2) + 0.4 * v1;
    s += std::string(u(rng) < p ? "1" : "0") + " " + std::to_string(id0) + ":1 " + std::to_string(10 + rng() % 10) +
         ":" + std::to_string(v1);
    for (int f = 2; f < 4; ++f) s += " " + std::to_string(20 + f * 10 + rng() % 10) + ":" + std::to_string(0.5 + u(rng));
    s += "\n";
  }
  return s;
}

struct XCase {
  const char* name;
  const char* flags;
};
void PrintTo(const XCase& c, std::ostream* os) { *os << c.name; }

class XDeepFmExportTest : public ScratchDirTest, public ::testing::WithParamInterface<XCase> {
 protected:
  XDeepFmExportTest() : ScratchDirTest("ctrain_export_xdeepfm") {}
};

TEST_P(XDeepFmExportTest, OnnxPredictsAsCtrainPredict) {
  SKIP_WITHOUT_ONNXRUNTIME();
  Write("train.libsvm", Rows(1500, 1));
  Write("test.libsvm", Rows(300, 2));
  auto r = RunCtrain("train --model xdeepfm --train " + P("train.libsvm") + " --format libsvm --id-base 1 " +
                     "--field-size 4 --feature-size 64 --embedding-size 4 --batch-size 50 --epochs 3 " +
                     "--learning-rate 0.005 --progress none --model-dir " + P("m") + " " + GetParam().flags);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<double> want = PredictSpread(P("m"), P("test.libsvm"), P("pred.txt"), 0.3);
  ASSERT_EQ(want.size(), 300u);
  const auto unsaturated = std::count_if(want.begin(), want.end(), [](double p) { return p > 0.05 && p < 0.95; });
  ASSERT_GT(unsaturated, 200) << "most predictions should stay off 0 and 1";
  ExpectExportPredicts(want, P("m"), "--format onnx", "onnx", P("model.onnx"), P("test.libsvm"));
  // The --multi-hot graph on the one-hot rows spread over three entries per field (the checker's
  // padded mode would also need DeepFM's numpy forward pass).
  ExpectExportPredicts(want, P("m"), "--multi-hot", "multi_hot", P("multi_hot.onnx"), P("test.libsvm"));
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, XDeepFmExportTest,
    ::testing::Values(XCase{"cin_and_dnn_batch_norm", "--cin-layer-units 4,3 --deep-layers 16,8 --batch-norm true "
                                                      "--dropout 0.1"},
                      XCase{"cin_only", "--cin-layer-units 5 --deep-layers ''"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ctrain::exporter
