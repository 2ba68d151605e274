// ctrain export (src/ctrain/export/): the ONNX graph run by onnxruntime and the
// .npy files read by numpy (tests/python/export_check.py) must predict what
// ctrain predicts, to 1e-5, for every term combination of DeepFM and on a
// model trained on real data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_harness.h"
#include "export/export_check.h"
#include "ctrain/export/exported_model.h"
#include "ctrain/export/npy_export.h"
#include "ctrain/export/onnx_export.h"
#include "ctrain/model/deepfm.h"
#include "ctrain/train/checkpoint.h"
#include "ctrain/train/train_config.h"

namespace ctrain::exporter {
namespace {

using ctrain::testing::kCtrain;
using ctrain::testing::kData;
using ctrain::testing::RunCtrain;
using ctrain::testing::ScratchDirTest;
using ctrain::testing::Shell;
using ctrain::testing::Slurp;
using testing::ExpectClose;
using testing::ReadPredictions;
using testing::RunChecker;
using testing::RunPaddedChecker;
namespace fs = std::filesystem;

// ---- .npy headers ---------------------------------------------------------

TEST(NpyHeaderTest, DictAndPaddingAsNumpyWritesThem) {
  struct Case {
    NpyType type;
    std::vector<int64_t> shape;
    std::string dict;
  };
  const std::vector<Case> cases = {
      {NpyType::kF32, {}, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }"},
      {NpyType::kF32, {5}, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }"},
      {NpyType::kF32, {117581, 32}, "{'descr': '<f4', 'fortran_order': False, 'shape': (117581, 32), }"},
      {NpyType::kI64, {2, 3, 4}, "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3, 4), }"},
  };
  for (const Case& c : cases) {
    const std::string h = NpyHeader(c.type, c.shape);
    EXPECT_EQ(h.size() % 64, 0u) << c.dict;
    EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    const size_t len = static_cast<uint8_t>(h[8]) | (static_cast<size_t>(static_cast<uint8_t>(h[9])) << 8);
    EXPECT_EQ(len + 10, h.size());
    EXPECT_EQ(h.substr(10, c.dict.size()), c.dict);
    EXPECT_EQ(h.back(), '\n');
    EXPECT_EQ(h.find_first_not_of(' ', 10 + c.dict.size()), h.size() - 1) << "spaces pad up to the newline";
  }
}

// ---- every term combination, from a checkpoint written here ----------------

struct ModelCase {
  const char* name;
  std::vector<int32_t> deep_layers;
  bool batch_norm, first_order, fm, deep;
};
void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.name; }

class ExportModelTest : public ScratchDirTest, public ::testing::WithParamInterface<ModelCase> {
 protected:
  ExportModelTest() : ScratchDirTest("ctrain_export") {}
};

// A model with every parameter random (biases, BN statistics included, so no
// term is an identity), saved as the trainer saves it; ids written 1-based.
TEST_P(ExportModelTest, OnnxAndNpyPredictAsDeepFM) {
  SKIP_WITHOUT_ONNXRUNTIME();
  const ModelCase& mc = GetParam();
  model::DeepFMConfig c;
  c.feature_size = 50;
  c.field_size = 3;
  c.embedding_size = 4;
  c.deep_layers = mc.deep_layers;
  c.batch_norm = mc.batch_norm;
  c.use_first_order = mc.first_order;
  c.use_fm = mc.fm;
  c.use_deep = mc.deep;
  c.dropout = 0.25f;  // inference ignores it
  model::DeepFM m(c);
  ASSERT_TRUE(m.status().ok()) << m.status().ToString();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (model::DenseParam& p : m.dense_params()) {
    const bool gamma = p.name.ends_with("/gamma");
    for (float& x : p.value) x = gamma ? 1.0f + u(rng) : (p.name.ends_with("/weights") ? 2 * u(rng) : u(rng));
  }
  for (model::DenseParam& s : m.state())
    for (float& x : s.value) x = s.name.ends_with("moving_variance") ? 0.5f + u(rng) + 0.5f : u(rng);
  const int64_t N = c.feature_size, K = c.embedding_size;
  std::vector<float> w(N), V(N * K), slot(N * K, 0.25f);
  model::InitEmbeddings(5, N, static_cast<int32_t>(K), w.data(), V.data());
  for (float& x : V) x *= 4;  // larger embeddings: FM and MLP terms of order 1

  std::vector<train::TensorRef> refs = {train::TensorRef::F32("embeddings/w", {N}, w.data()),
                                        train::TensorRef::F32("embeddings/V", {N, K}, V.data()),
                                        train::TensorRef::F32("embeddings/V/m", {N, K}, slot.data())};
  for (const model::DenseParam& p : m.dense_params()) refs.push_back(train::TensorRef::F32(p.name, p.shape, p.value.data()));
  for (const model::DenseParam& p : m.state()) refs.push_back(train::TensorRef::F32(p.name, p.shape, p.value.data()));
  const nlohmann::json meta{{"model", train::ModelConfigToJson(c)},
                            {"data", {{"format", "libsvm"}, {"id_base", 1}, {"field_size", 3}, {"feature_size", N}}}};
  ASSERT_TRUE(train::SaveCheckpoint(P("model"), 7, refs, meta).ok());

  // 200 rows, 1-based ids, values in [0, 2); the same rows as a batch for DeepFM::Predict.
  data::Batch batch;
  batch.field_size = c.field_size;
  std::string libsvm;
  std::uniform_int_distribution<int64_t> id(0, N - 1);
  std::uniform_real_distribution<float> val(0.0f, 2.0f);
  for (int r = 0; r < 200; ++r) {
    std::vector<int64_t> ids(c.field_size);
    std::vector<float> vals(c.field_size);
    libsvm += r % 2 ? "1" : "0";
    for (int f = 0; f < c.field_size; ++f) {
      ids[f] = id(rng);
      vals[f] = f == 0 ? 1.0f : val(rng);
      char buf[64];
      std::snprintf(buf, sizeof buf, " %lld:%.9g", static_cast<long long>(ids[f] + 1), vals[f]);
      libsvm += buf;
    }
    libsvm += "\n";
    batch.AppendRow(r % 2, ids, vals);
  }
  Write("in.libsvm", libsvm);
  std::vector<int64_t> uniq;
  std::vector<int32_t> index;
  model::UniqueIds(batch, &uniq, &index);
  std::vector<float> wr(uniq.size()), vr(uniq.size() * K), probs(batch.size());
  for (size_t i = 0; i < uniq.size(); ++i) {
    wr[i] = w[uniq[i]];
    for (int64_t k = 0; k < K; ++k) vr[i * K + k] = V[uniq[i] * K + k];
  }
  ASSERT_TRUE(m.Predict(batch, uniq, index, wr.data(), vr.data(), probs.data()).ok());
  const std::vector<double> want(probs.begin(), probs.end());
  double lo = 1, hi = 0;
  for (double p : want) lo = std::min(lo, p), hi = std::max(hi, p);
  ASSERT_GT(hi - lo, 0.05) << "predictions should spread, or the comparison says little";

  StatusOr<ExportedModel> em = LoadModelForExport(P("model"));
  ASSERT_TRUE(em.ok()) << em.status().ToString();
  EXPECT_EQ(em->step, 7);
  EXPECT_EQ(em->Find("embeddings/V/m"), nullptr) << "optimizer slots are not exported";
  EXPECT_EQ(em->Find("embeddings/w") != nullptr, mc.first_order);
  EXPECT_EQ(em->Find("embeddings/V") != nullptr, mc.fm || mc.deep);
  StatusOr<OnnxExportResult> onnx = ExportOnnx(*em, P("model.onnx"));
  ASSERT_TRUE(onnx.ok()) << onnx.status().ToString();
  EXPECT_TRUE(onnx->external_data_path.empty());
  ExpectClose(want, RunChecker("onnx", P("model.onnx"), P("in.libsvm"), P("onnx.txt")), "onnx");
  StatusOr<nlohmann::json> index_json = ExportNpy(*em, P("npy"));
  ASSERT_TRUE(index_json.ok()) << index_json.status().ToString();
  EXPECT_EQ((*index_json)["tensors"].size(), em->tensors.size());
  ExpectClose(want, RunChecker("npy", P("npy"), P("in.libsvm"), P("npy.txt")), "npy");
  OnnxExportOptions multi_hot;
  multi_hot.multi_hot = true;
  ASSERT_TRUE(ExportOnnx(*em, P("multi_hot.onnx"), multi_hot).ok());
  ExpectClose(want, RunPaddedChecker(P("multi_hot.onnx"), P("npy"), P("in.libsvm"), P("padded.txt")), "multi-hot onnx");
}

INSTANTIATE_TEST_SUITE_P(
    Terms, ExportModelTest,
    ::testing::Values(ModelCase{"deepfm", {16, 8}, false, true, true, true},
                      ModelCase{"deepfm_batch_norm", {16, 8}, true, true, true, true},
                      ModelCase{"fm", {}, false, true, true, false},
                      ModelCase{"lr", {}, false, true, false, false},
                      ModelCase{"deep_only_batch_norm", {8}, true, false, false, true},
                      ModelCase{"deep_without_hidden_layers", {}, false, true, true, true}),
    [](const auto& info) { return std::string(info.param.name); });

// ---- dcn and dcn_v2 (model/dcn.h): trained through the command line ---------

struct DcnCase {
  const char* name;
  const char* flags;
};
void PrintTo(const DcnCase& c, std::ostream* os) { *os << c.name; }

class DcnExportTest : public ScratchDirTest, public ::testing::WithParamInterface<DcnCase> {
 protected:
  DcnExportTest() : ScratchDirTest("ctrain_export_dcn") {}
};

// A learnable problem (the label follows field 1's id and field 0's value), so the trained
// model's predictions spread; every variant of the cross network and both structures.
TEST_P(DcnExportTest, OnnxPredictsAsCtrainPredict) {
  SKIP_WITHOUT_ONNXRUNTIME();
  std::mt19937 rng(3);
  std::string rows;
  for (int r = 0; r < 1500; ++r) {
    const int click = static_cast<int>(rng() % 2);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%d 0:%.3f %d:1", click, (click ? 0.6 : 0.2) + 0.4 * (rng() % 100) / 100.0,
                  2 + click + 2 * static_cast<int>(rng() % 3));
    rows += buf;
    for (int f = 2; f < 5; ++f) rows += " " + std::to_string(10 + f * 10 + static_cast<int>(rng() % 10)) + ":1";
    rows += "\n";
  }
  Write("rows.libsvm", rows);
  auto r = RunCtrain("train --train " + P("rows.libsvm") + " --field-size 5 --feature-size 64 --embedding-size 4 " +
                     "--model-dir " + P("m") + " --epochs 2 --batch-size 50 --learning-rate 0.01 --progress none " +
                     GetParam().flags);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunCtrain("predict --model-dir " + P("m") + " --input " + P("rows.libsvm") + " -o " + P("pred.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<double> want = ReadPredictions(P("pred.txt"));
  ASSERT_EQ(want.size(), 1500u);
  double lo = 1, hi = 0;
  for (double p : want) lo = std::min(lo, p), hi = std::max(hi, p);
  ASSERT_GT(hi - lo, 0.3) << "predictions should spread, or the comparison says little";
  r = RunCtrain("export --model-dir " + P("m") + " --format onnx -o " + P("model.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ExpectClose(want, RunChecker("onnx", P("model.onnx"), P("rows.libsvm"), P("onnx.txt")), "onnx");
  r = RunCtrain("export --model-dir " + P("m") + " --format onnx --external-data always -o " + P("ext.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ExpectClose(want, RunChecker("onnx", P("ext.onnx"), P("rows.libsvm"), P("ext.txt")), "onnx, external data");
}

INSTANTIATE_TEST_SUITE_P(
    Dcn, DcnExportTest,
    ::testing::Values(DcnCase{"dcn_parallel_batch_norm", "--model dcn --deep-layers 16,8 --batch-norm true"},
                      DcnCase{"dcn_cross_only", "--model dcn --deep-layers '' --cross-layers 2"},
                      DcnCase{"dcn_v2_full_rank", "--model dcn_v2 --deep-layers 16,8"},
                      DcnCase{"dcn_v2_low_rank_stacked_batch_norm",
                              "--model dcn_v2 --low-rank 3 --deep-layers 16 --model-structure stacked "
                              "--batch-norm true"},
                      DcnCase{"dcn_v2_mixture_parallel", "--model dcn_v2 --low-rank 3 --num-experts 3 --deep-layers 8"},
                      DcnCase{"dcn_v2_mixture_stacked",
                              "--model dcn_v2 --low-rank 2 --num-experts 2 --deep-layers 8 --model-structure stacked"},
                      DcnCase{"dcn_v2_mixture_cross_only", "--model dcn_v2 --low-rank 2 --num-experts 4 "
                                                           "--deep-layers ''"}),
    [](const auto& info) { return std::string(info.param.name); });

// ---- errors --------------------------------------------------------------

class ExportErrorTest : public ScratchDirTest {
 protected:
  ExportErrorTest() : ScratchDirTest("ctrain_export_err") {}
  // A checkpoint of a tiny FM model holding `tensors`.
  void Save(const std::vector<train::TensorRef>& tensors) {
    model::DeepFMConfig c;
    c.feature_size = 4;
    c.field_size = 2;
    c.embedding_size = 2;
    c.use_deep = false;
    ASSERT_TRUE(train::SaveCheckpoint(P("model"), 3, tensors, {{"model", train::ModelConfigToJson(c)}}).ok());
  }
};

TEST_F(ExportErrorTest, NoCheckpoint) {
  fs::create_directories(P("empty"));
  StatusOr<ExportedModel> m = LoadModelForExport(P("empty"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find(P("empty") + ": no checkpoint"), std::string::npos) << m.status().ToString();
}

TEST_F(ExportErrorTest, MultiHotSpecModelNeedsTheMultiHotGraph) {
  // A model trained through a feature spec with a var_len field reads multi-hot rows:
  // the one-hot [batch, F] graph is refused (it once was written silently).
  model::DeepFMConfig c;
  c.feature_size = 4;
  c.field_size = 2;
  c.embedding_size = 2;
  c.use_deep = false;
  const std::vector<float> w(4, 0.5f), V(8, 0.25f), bias(1, 0.0f);
  const std::vector<train::TensorRef> refs = {train::TensorRef::F32("embeddings/w", {4}, w.data()),
                                              train::TensorRef::F32("embeddings/V", {4, 2}, V.data()),
                                              train::TensorRef::F32("fm_bias", {1}, bias.data())};
  for (bool var_len : {true, false}) {
    nlohmann::json spec = nlohmann::json::parse(R"({"fields": [
        {"key": "tags", "type": "categorical", "map": "hash", "buckets": 2},
        {"key": "city", "type": "categorical", "map": "hash", "buckets": 2}]})");
    if (var_len) spec["fields"][0]["var_len"] = true;
    const std::string dir = P(var_len ? "multi" : "one");
    ASSERT_TRUE(train::SaveCheckpoint(dir, 3, refs,
                                      {{"model", train::ModelConfigToJson(c)}, {"data", {{"feature_spec", spec}}}})
                    .ok());
    StatusOr<ExportedModel> m = LoadModelForExport(dir);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->multi_hot_input, var_len);
    StatusOr<OnnxExportResult> r = ExportOnnx(*m, dir + ".onnx");
    if (!var_len) {
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      continue;
    }
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(r.status().message().find(dir + "/ckpt-3.bin: the model was trained through a feature spec with "
                                        "multi-hot fields"), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find("--multi-hot"), std::string::npos);
    EXPECT_FALSE(fs::exists(dir + ".onnx"));
    OnnxExportOptions o;
    o.multi_hot = true;
    EXPECT_TRUE(ExportOnnx(*m, dir + ".onnx", o).ok());
  }
}

TEST_F(ExportErrorTest, MissingAndMisshapenTensorsAreNamed) {
  const std::vector<float> w(4, 0.5f), V(8, 0.5f), bias(1, 0.0f), wrong(6, 0.0f);
  Save({train::TensorRef::F32("embeddings/w", {4}, w.data()), train::TensorRef::F32("fm_bias", {1}, bias.data())});
  StatusOr<ExportedModel> m = LoadModelForExport(P("model"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find("tensor 'embeddings/V' is missing"), std::string::npos) << m.status().ToString();
  EXPECT_NE(m.status().message().find("ckpt-3.bin"), std::string::npos) << m.status().ToString();

  Save({train::TensorRef::F32("embeddings/w", {4}, w.data()), train::TensorRef::F32("embeddings/V", {3, 2}, wrong.data()),
        train::TensorRef::F32("fm_bias", {1}, bias.data())});
  m = LoadModelForExport(P("model"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("tensor 'embeddings/V' has shape [3, 2], the model config implies [4, 2]"),
            std::string::npos)
      << m.status().ToString();

  Save({train::TensorRef::F32("embeddings/w", {4}, w.data()), train::TensorRef::F32("embeddings/V", {4, 2}, V.data()),
        train::TensorRef::F32("fm_bias", {1}, bias.data())});
  m = LoadModelForExport(P("model"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->tensors.size(), 3u);
  Write("file", "x");
  StatusOr<nlohmann::json> npy = ExportNpy(*m, P("file"));
  ASSERT_FALSE(npy.ok());
  EXPECT_EQ(npy.status().code(), StatusCode::kFailedPrecondition);
  OnnxExportOptions never;
  never.external_data = ExternalData::kNever;
  EXPECT_TRUE(ExportOnnx(*m, P("m.onnx"), never).ok());
  EXPECT_FALSE(ParseExternalData("sometimes").ok());
}

TEST_F(ExportErrorTest, UnknownModelOptionIsRefusedNotIgnored) {
  model::DeepFMConfig c;
  c.feature_size = 4;
  c.field_size = 2;
  c.embedding_size = 2;
  c.use_deep = false;
  nlohmann::json model = train::ModelConfigToJson(c);
  model["pooling"] = "attention";  // an option of some later model: the graph would not compute it
  const std::vector<float> w(4, 0.5f), V(8, 0.5f), bias(1, 0.0f);
  ASSERT_TRUE(train::SaveCheckpoint(P("model"), 3,
                                    std::vector<train::TensorRef>{train::TensorRef::F32("embeddings/w", {4}, w.data()),
                                                                  train::TensorRef::F32("embeddings/V", {4, 2}, V.data()),
                                                                  train::TensorRef::F32("fm_bias", {1}, bias.data())},
                                    {{"model", model}})
                  .ok());
  StatusOr<ExportedModel> m = LoadModelForExport(P("model"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(m.status().message().find("model option 'pooling' = \"attention\" is not supported by ctrain export"),
            std::string::npos)
      << m.status().ToString();
}

TEST_F(ExportErrorTest, CommandLineRefusesBadFlagsAndOverwritingTheModel) {
  const std::vector<float> w(4, 0.5f), V(8, 0.5f), bias(1, 0.0f);
  Save({train::TensorRef::F32("embeddings/w", {4}, w.data()), train::TensorRef::F32("embeddings/V", {4, 2}, V.data()),
        train::TensorRef::F32("fm_bias", {1}, bias.data())});
  auto r = RunCtrain("export --model-dir " + P("model") + " --format tflite -o " + P("m"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--format must be onnx or npy, got 'tflite'"), std::string::npos) << r.out;
  r = RunCtrain("export --model-dir " + P("model") + " --external-data sometimes -o " + P("m.onnx"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--external-data"), std::string::npos) << r.out;
  r = RunCtrain("export --model-dir " + P("model") + " --format npy --multi-hot -o " + P("npy"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--multi-hot applies to --format onnx only"), std::string::npos) << r.out;
  r = RunCtrain("export --model-dir " + P("model") + " -o -");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--output: '-' (stdout) is not supported"), std::string::npos) << r.out;
  r = RunCtrain("export --model-dir " + P("model") + " -o " + P("model/ckpt-3.bin"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--output"), std::string::npos) << r.out;
  EXPECT_TRUE(train::LoadCheckpoint(P("model/ckpt-3.bin")).ok()) << "the checkpoint is intact";
  r = RunCtrain("export --model-dir " + P("nothing") + " -o " + P("m.onnx"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no checkpoint"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(P("m.onnx")));
  r = RunCtrain("export --model-dir " + P("model") + " -o " + P("m.onnx"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("K 2, terms first_order fm\n"), std::string::npos) << r.out;
}

// ---- a model trained on real data, through the command line -----------------

class ExportCriteoTest : public ScratchDirTest {
 protected:
  ExportCriteoTest() : ScratchDirTest("ctrain_export_criteo") {}
};

TEST_F(ExportCriteoTest, OnnxAndNpyMatchPredictAfterOneEpoch) {
  const std::string data = kData + "/criteo_deepfm_va10k.libsvm";
  if (!fs::exists(data)) GTEST_SKIP() << data << " is absent (the shared data folder beside the checkout)";
  SKIP_WITHOUT_ONNXRUNTIME();
  auto r = RunCtrain("train --train " + data + " --model-dir " + P("m") +
                     " --epochs 1 --deep-layers 64,32 --batch-norm true --progress none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunCtrain("predict --model-dir " + P("m") + " --input " + data + " -o " + P("pred.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<double> want = ReadPredictions(P("pred.txt"));
  ASSERT_EQ(want.size(), 10040u);

  r = RunCtrain("export --model-dir " + P("m") + " --format onnx -o " + P("model.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("batch_norm on"), std::string::npos) << r.out;
  ExpectClose(want, RunChecker("onnx", P("model.onnx"), data, P("onnx.txt")), "onnx");

  r = RunCtrain("export --model-dir " + P("m") + " --format onnx --external-data always -o " + P("ext.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_TRUE(fs::exists(P("ext.onnx.data"))) << r.out;
  EXPECT_LT(fs::file_size(P("ext.onnx")), 64u << 10) << "the tables live in ext.onnx.data";
  EXPECT_GT(fs::file_size(P("ext.onnx.data")), 117581u * 32 * 4);
  ExpectClose(want, RunChecker("onnx", P("ext.onnx"), data, P("ext.txt")), "onnx, external data");

  r = RunCtrain("export --model-dir " + P("m") + " --format npy -o " + P("npy"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json index = nlohmann::json::parse(Slurp(P("npy/index.json")));
  EXPECT_EQ(index["tensors"].size(), 17u);  // w, V, fm_bias, 2 x (mlp W, b, bn gamma, beta, mean, var), out W, b
  EXPECT_EQ(index["data"]["format"], "libsvm");
  ExpectClose(want, RunChecker("npy", P("npy"), data, P("npy.txt")), "npy");

  r = RunCtrain("export --model-dir " + P("m") + " --multi-hot -o " + P("multi_hot.onnx"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ExpectClose(want, RunPaddedChecker(P("multi_hot.onnx"), P("npy"), data, P("padded.txt")), "multi-hot onnx");
}

}  // namespace
}  // namespace ctrain::exporter
