// ctrain export of a dlrm model (export/onnx_dlrm.cc): trained through the
// command line, its ONNX graph run by onnxruntime (tests/python/export_check.py)
// must predict what `ctrain predict` does, to 1e-5, with and without dense
// fields and batch norm, and the --multi-hot graph must give the same on the
// rows spread over three entries per field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_harness.h"

namespace ctrain {
namespace {

using testing::RunCtrain;
using testing::ScratchDirTest;
using testing::Shell;
using testing::Slurp;

constexpr double kTolerance = 1e-5;  // max |prediction difference|
const std::string kChecker = std::string(CTRAIN_SOURCE_DIR) + "/tests/python/export_check.py";

bool OnnxRuntimeImportable() {
  static const bool ok = Shell("python3 -c 'import onnxruntime, numpy'").exit_code == 0;
  return ok;
}

std::vector<double> ReadPredictions(const std::string& path) {
  std::vector<double> v;
  std::istringstream in(Slurp(path));
  std::string line;
  while (std::getline(in, line)) v.push_back(std::strtod(line.c_str(), nullptr));
  return v;
}

void ExpectClose(const std::vector<double>& want, const std::vector<double>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  ASSERT_FALSE(want.empty()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << what << " row " << i;
    const double d = std::fabs(want[i] - got[i]);
    if (d > worst) worst = d, at = i;
  }
  EXPECT_LT(worst, kTolerance) << what << ": row " << at << " predict " << want[at] << " vs " << got[at];
}

// LibSVM rows, 0-based ids: fields 0-1 dense (ids 0, 1; values in (0, 1]), fields 2-4 categorical
// (value 1). The click probability rises with field 0's value and depends on field 2's id, with noise, so
// a trained model's predictions spread without saturating.
void WriteRows(const std::string& path, int rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::ofstream f(path);
  for (int r = 0; r < rows; ++r) {
    const double v0 = 0.01 + (rng() % 100) / 100.0, v1 = 0.01 + (rng() % 100) / 100.0;
    const int c2 = static_cast<int>(rng() % 6);
    const double p = 0.15 + 0.5 * v0 * (c2 % 2 ? 1.0 : 0.3) + 0.1 * (c2 / 2);
    const int click = (rng() % 1000) < p * 1000 ? 1 : 0;
    f << click << " 0:" << v0 << " 1:" << v1 << " " << (2 + c2) << ":1";
    for (int j = 3; j < 5; ++j) f << " " << (10 + j * 10 + rng() % 10) << ":1";
    f << "\n";
  }
}

struct DlrmCase {
  const char* name;
  std::string flags;
};
void PrintTo(const DlrmCase& c, std::ostream* os) { *os << c.name; }

class DlrmExportTest : public ScratchDirTest, public ::testing::WithParamInterface<DlrmCase> {
 protected:
  DlrmExportTest() : ScratchDirTest("ctrain_dlrm_export") {}
};

TEST_P(DlrmExportTest, OnnxMatchesPredict) {
  if (!OnnxRuntimeImportable())
    GTEST_SKIP() << "python3 cannot import onnxruntime and numpy (pip install onnxruntime numpy, as "
                    "scripts/install-deps.sh does): the exported files are not checked";
  WriteRows(P("train.libsvm"), 3000, 1);
  WriteRows(P("test.libsvm"), 400, 2);
  auto r = RunCtrain("train --train " + P("train.libsvm") + " --model-dir " + P("m") +
                     " --format libsvm --field-size 5 --feature-size 64 --model dlrm --embedding-size 4 "
                     "--top-mlp 8,4 --dropout 0.2 --learning-rate 0.02 --batch-size 100 --epochs 3 "
                     "--intra-op-threads 1 --progress none " +
                     GetParam().flags);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunCtrain("predict --model-dir " + P("m") + " --input " + P("test.libsvm") + " -o " + P("pred.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<double> want = ReadPredictions(P("pred.txt"));
  ASSERT_EQ(want.size(), 400u);
  const auto [lo, hi] = std::minmax_element(want.begin(), want.end());
  ASSERT_GT(*hi - *lo, 0.05) << "predictions should spread, or the comparison says little";
  ASSERT_GT(*lo, 0.001);
  ASSERT_LT(*hi, 0.999);

  r = RunCtrain("export --model-dir " + P("m") + " --format onnx -o " + P("model.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("model dlrm"), std::string::npos) << r.out;
  auto c = Shell("python3 '" + kChecker + "' onnx '" + P("model.onnx") + "' '" + P("test.libsvm") + "' '" +
                 P("onnx.txt") + "'");
  ASSERT_EQ(c.exit_code, 0) << c.out;
  ExpectClose(want, ReadPredictions(P("onnx.txt")), "onnx");

  r = RunCtrain("export --model-dir " + P("m") + " --multi-hot -o " + P("multi_hot.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  c = Shell("python3 '" + kChecker + "' multi_hot '" + P("multi_hot.onnx") + "' '" + P("test.libsvm") + "' '" +
            P("spread.txt") + "'");
  ASSERT_EQ(c.exit_code, 0) << c.out;
  ExpectClose(want, ReadPredictions(P("spread.txt")), "multi-hot onnx, rows spread over 3 entries");
}

INSTANTIATE_TEST_SUITE_P(
    Dlrm, DlrmExportTest,
    ::testing::Values(DlrmCase{"dense", "--num-dense-fields 2 --bottom-mlp 8"},
                      DlrmCase{"dense_batch_norm", "--num-dense-fields 2 --bottom-mlp 8,6 --batch-norm true"},
                      DlrmCase{"dense_no_bottom_hidden", "--num-dense-fields 1 --bottom-mlp ''"},
                      DlrmCase{"no_dense_fields", "--num-dense-fields 0"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ctrain
