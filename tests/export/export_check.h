// Helpers of the export tests: run tests/python/export_check.py on an exported model and compare
// its predictions with ctrain's (1e-5), skipping when python3 cannot import onnxruntime.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli_harness.h"

namespace ctrain::exporter::testing {

inline constexpr double kTolerance = 1e-5;  // max |prediction difference|
inline const std::string kChecker = std::string(CTRAIN_SOURCE_DIR) + "/tests/python/export_check.py";

inline bool OnnxRuntimeImportable() {
  static const bool ok = ctrain::testing::Shell("python3 -c 'import onnxruntime, numpy'").exit_code == 0;
  return ok;
}
#define SKIP_WITHOUT_ONNXRUNTIME()                                                                         \
  if (!::ctrain::exporter::testing::OnnxRuntimeImportable())                                              \
  GTEST_SKIP() << "python3 cannot import onnxruntime and numpy (pip install onnxruntime numpy, as "        \
                  "scripts/install-deps.sh does): the exported files are not checked"

inline std::vector<double> ReadPredictions(const std::string& path) {
  std::vector<double> v;
  std::istringstream in(ctrain::testing::Slurp(path));
  std::string line;
  while (std::getline(in, line)) v.push_back(std::strtod(line.c_str(), nullptr));
  return v;
}

inline void ExpectClose(const std::vector<double>& want, const std::vector<double>& got, const std::string& what) {
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

// Runs export_check.py (mode onnx|npy) and returns its predictions.
inline std::vector<double> RunChecker(const std::string& mode, const std::string& model, const std::string& input,
                                      const std::string& out) {
  const auto r = ctrain::testing::Shell("python3 '" + kChecker + "' " + mode + " '" + model + "' '" + input + "' '" +
                                        out + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return ReadPredictions(out);
}

// `ctrain predict` of `input` by the model in `model_dir` into `out`: its predictions, which must spread by more
// than `min_spread` (a flat model would make the export comparisons say little).
inline std::vector<double> PredictSpread(const std::string& model_dir, const std::string& input,
                                         const std::string& out, double min_spread) {
  const auto r = ctrain::testing::RunCtrain("predict --model-dir " + model_dir + " --input " + input + " -o " + out);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::vector<double> want = ReadPredictions(out);
  if (want.empty()) return want;
  const auto [lo, hi] = std::minmax_element(want.begin(), want.end());
  EXPECT_GT(*hi - *lo, min_spread) << "the trained model's predictions should spread, or the comparison says little";
  return want;
}

// `ctrain export --model-dir model_dir <args> -o path`, then export_check.py `mode` on `path` over `input`: its
// predictions equal `want` to 1e-5. Returns the export's output (for the caller's own checks).
inline std::string ExpectExportPredicts(const std::vector<double>& want, const std::string& model_dir,
                                        const std::string& args, const std::string& mode, const std::string& path,
                                        const std::string& input) {
  const auto r = ctrain::testing::RunCtrain("export --model-dir " + model_dir + " " + args + " -o " + path);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  ExpectClose(want, RunChecker(mode, path, input, path + ".predictions.txt"), mode + " (" + args + ")");
  return r.out;
}

// Mode padded: a --multi-hot graph on the input's one-hot rows spread over three
// entries per field (returned), and on random multi-hot rows against the numpy
// forward pass over `npy_dir` (checked by the script: exit 0 only within 1e-5).
inline std::vector<double> RunPaddedChecker(const std::string& model, const std::string& npy_dir,
                                            const std::string& input, const std::string& out) {
  const auto r = ctrain::testing::Shell("python3 '" + kChecker + "' padded '" + model + "' '" + npy_dir + "' '" +
                                        input + "' '" + out + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("multi-hot rows: max |onnxruntime - numpy|"), std::string::npos) << r.out;
  return ReadPredictions(out);
}

}  // namespace ctrain::exporter::testing
