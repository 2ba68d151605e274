// Autotune: the candidate layouts (deterministic ones only on request), the
// measurement on a tiny model, the notes on a hogwild or bf16 winner, and
// ParallelOptions::deterministic refusing hogwild.
#include "ctrain/train/autotune.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "ctrain/model/layers/bf16.h"
#include "ctrain/train/threads.h"

namespace ctrain::train {
namespace {

int CountHogwild(const std::vector<ParallelOptions>& v) {
  int n = 0;
  for (const auto& p : v) n += p.hogwild > 0;
  return n;
}

TEST(AutotuneCandidates, AllLayoutsForFourCores) {
  // towers 1 x intra {1,2,4}, towers 2 x {1,2}, towers 4 x {1}; hogwild 2 x {1,2}, hogwild 4 x {1}.
  const std::vector<ParallelOptions> all = AutotuneCandidates(4, /*affinity=*/true);
  ASSERT_EQ(all.size(), 9u);
  EXPECT_EQ(CountHogwild(all), 3);
  for (const auto& p : all) {
    EXPECT_LE(p.replicas() * p.intra_op_threads, 4);
    EXPECT_TRUE(p.affinity);
    EXPECT_TRUE(p.Validate().ok()) << p.Validate().ToString();
  }
}

TEST(AutotuneCandidates, DeterministicLeavesHogwildOut) {
  const std::vector<ParallelOptions> det = AutotuneCandidates(4, false, /*deterministic=*/true);
  ASSERT_EQ(det.size(), 6u);
  EXPECT_EQ(CountHogwild(det), 0);
  for (const auto& p : det) {
    EXPECT_TRUE(p.deterministic);
    EXPECT_TRUE(p.Validate().ok());
  }
  EXPECT_EQ(AutotuneCandidates(1, false, true).size(), 1u);
}

// --autotune keeps explicit thread flags fixed (AutotuneOptions::fixed_*).
TEST(AutotuneCandidates, ExplicitIntraThreadsAreKept) {
  AutotuneOptions o;
  o.fixed_intra_op_threads = 1;
  const auto c = AutotuneCandidates(4, false, false, o);
  ASSERT_EQ(c.size(), 5u);  // towers 1, 2, 4 and hogwild 2, 4, each with 1 thread
  for (const ParallelOptions& p : c) EXPECT_EQ(p.intra_op_threads, 1);
  o.fixed_intra_op_threads = 3;  // not a power of two: still kept
  for (const ParallelOptions& p : AutotuneCandidates(4, false, false, o)) EXPECT_EQ(p.intra_op_threads, 3);
}

TEST(AutotuneCandidates, ExplicitTowersOrHogwildFixTheKindOfLayout) {
  AutotuneOptions o;
  o.fixed_towers = 2;
  auto c = AutotuneCandidates(4, false, false, o);
  ASSERT_EQ(c.size(), 2u);  // towers 2 x intra {1, 2}; no hogwild
  for (const ParallelOptions& p : c) {
    EXPECT_EQ(p.towers, 2);
    EXPECT_EQ(p.hogwild, 0);
  }
  o = {};
  o.fixed_hogwild = 0;
  for (const ParallelOptions& p : AutotuneCandidates(4, false, false, o)) EXPECT_EQ(p.hogwild, 0);
  o.fixed_hogwild = 2;
  c = AutotuneCandidates(4, false, false, o);
  ASSERT_EQ(c.size(), 2u);  // hogwild 2 x intra {1, 2}
  for (const ParallelOptions& p : c) {
    EXPECT_EQ(p.hogwild, 2);
    EXPECT_EQ(p.towers, 1);
  }
  o.fixed_intra_op_threads = 1;
  c = AutotuneCandidates(4, false, false, o);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].hogwild, 2);
  EXPECT_EQ(c[0].intra_op_threads, 1);
}

TEST(ParallelOptions, DeterministicRefusesHogwild) {
  ParallelOptions p;
  p.hogwild = 2;
  EXPECT_TRUE(p.Validate().ok());
  p.deterministic = true;
  const Status s = p.Validate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.ToString().find("hogwild (2) is not deterministic"), std::string::npos) << s.ToString();
  p.hogwild = 0;
  p.towers = 2;
  EXPECT_TRUE(p.Validate().ok());
}

AutotuneRow Row(int32_t intra, int32_t towers, int32_t hogwild, model::DataType dtype, double eps) {
  AutotuneRow r;
  r.parallel.intra_op_threads = intra;
  r.parallel.towers = towers;
  r.parallel.hogwild = hogwild;
  r.gemm_dtype = dtype;
  r.examples_per_sec = eps;
  return r;
}

TEST(AutotuneNotes, HogwildWinnerIsCalledNonDeterministic) {
  AutotuneResult r;
  r.rows = {Row(2, 1, 0, model::DataType::kF32, 1000), Row(1, 1, 2, model::DataType::kF32, 1500)};
  r.best = 1;
  const std::vector<std::string> notes = WinnerNotes(r, false);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("picked hogwild (2 asynchronous replicas): NOT deterministic"), std::string::npos);
  EXPECT_NE(notes[0].find("--deterministic"), std::string::npos);
  EXPECT_EQ(WinnerFlags(r), "--intra-op-threads 1 --hogwild 2 --mixed-precision f32");
  r.flags = WinnerFlags(r);
  const std::string table = FormatAutotuneTable(r);
  EXPECT_NE(table.find("*        1       1        2   f32        1500  (not deterministic)"), std::string::npos)
      << table;
  EXPECT_NE(table.find("the same layout without autotune: --intra-op-threads 1 --hogwild 2"), std::string::npos);
  // A synchronous winner gets no note.
  r.best = 0;
  EXPECT_TRUE(WinnerNotes(r, false).empty());
  EXPECT_EQ(WinnerFlags(r), "--intra-op-threads 2 --towers 1 --mixed-precision f32");
}

TEST(AutotuneNotes, Bf16WinnerGivesItsSpeedUpOverF32) {
  AutotuneResult r;
  r.rows = {Row(2, 1, 0, model::DataType::kF32, 1000), Row(2, 1, 0, model::DataType::kBF16, 1500)};
  r.best = 1;
  const std::vector<std::string> notes = WinnerNotes(r, /*try_bf16=*/true);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("picked bf16 mixed precision (1.50x the best f32 layout)"), std::string::npos) << notes[0];
  EXPECT_EQ(WinnerFlags(r), "--intra-op-threads 2 --towers 1 --mixed-precision bf16");
}

TEST(ApplyAutotune, TakesLayoutAndPrecisionKeepsTheRest) {
  AutotuneResult r;
  r.rows = {Row(1, 2, 0, model::DataType::kBF16, 10)};
  TrainOptions o;
  o.parallel.inter_op_threads = 3;
  o.parallel.affinity = true;
  o.parallel.deterministic = true;
  ApplyAutotune(r, &o);
  EXPECT_EQ(o.parallel.intra_op_threads, 1);
  EXPECT_EQ(o.parallel.towers, 2);
  EXPECT_EQ(o.parallel.hogwild, 0);
  EXPECT_EQ(o.parallel.inter_op_threads, 3);
  EXPECT_TRUE(o.parallel.affinity);
  EXPECT_TRUE(o.parallel.deterministic);
  EXPECT_EQ(o.model.gemm_dtype, model::DataType::kBF16);
}

TrainOptions TinyModel() {
  TrainOptions o;
  o.model.field_size = 39;
  o.model.feature_size = 500;
  o.model.embedding_size = 4;
  o.model.deep_layers = {8};
  o.batch_size = 32;
  o.progress = ProgressMode::kNone;
  return o;
}

// Measures every candidate of this machine on a tiny model: one row per
// candidate (and per precision with try_bf16 where supported), no failures.
TEST(Autotune, MeasuresEveryCandidate) {
  StatusOr<Dataset> data = MakeSynthDataset(3, 0, 256, 500);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  const TrainOptions o = TinyModel();
  AutotuneOptions ao;
  ao.steps = 1;
  StatusOr<AutotuneResult> r = Autotune(o, *data, ao);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const size_t n = AutotuneCandidates(AvailableCpus(), false).size();
  ASSERT_EQ(r->rows.size(), n);
  for (const AutotuneRow& row : r->rows) {
    EXPECT_EQ(row.error, "");
    EXPECT_GT(row.examples_per_sec, 0);
    EXPECT_EQ(row.gemm_dtype, model::DataType::kF32);
  }
  EXPECT_LT(r->best, n);
  EXPECT_EQ(r->flags, WinnerFlags(*r));
}

TEST(Autotune, DeterministicMeasuresNoHogwildAndSaysSo) {
  StatusOr<Dataset> data = MakeSynthDataset(3, 0, 256, 500);
  ASSERT_TRUE(data.ok());
  AutotuneOptions ao;
  ao.steps = 1;
  ao.deterministic = true;
  StatusOr<AutotuneResult> r = Autotune(TinyModel(), *data, ao);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const AutotuneRow& row : r->rows) EXPECT_EQ(row.parallel.hogwild, 0);
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes[0].find("hogwild layouts not measured (--deterministic"), std::string::npos);
  // The same through the base options (the --deterministic flag sets these).
  TrainOptions o = TinyModel();
  o.parallel.deterministic = true;
  r = Autotune(o, *data, AutotuneOptions{1, false, false});
  ASSERT_TRUE(r.ok());
  for (const AutotuneRow& row : r->rows) EXPECT_EQ(row.parallel.hogwild, 0);
}

TEST(Autotune, Bf16IsMeasuredWhereSupportedElseNamed) {
  StatusOr<Dataset> data = MakeSynthDataset(3, 0, 256, 500);
  ASSERT_TRUE(data.ok());
  AutotuneOptions ao;
  ao.steps = 1;
  ao.try_bf16 = true;
  ao.deterministic = true;
  StatusOr<AutotuneResult> r = Autotune(TinyModel(), *data, ao);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const size_t layouts = AutotuneCandidates(AvailableCpus(), false, true).size();
  size_t bf16_rows = 0;
  for (const AutotuneRow& row : r->rows) bf16_rows += row.gemm_dtype == model::DataType::kBF16;
  std::string notes;
  for (const auto& n : r->notes) notes += n + "\n";
  if (model::Bf16GemmSupported().ok()) {
    EXPECT_EQ(r->rows.size(), 2 * layouts);
    EXPECT_EQ(bf16_rows, layouts);
    EXPECT_EQ(notes.find("bf16 mixed precision not measured"), std::string::npos) << notes;
  } else {
    EXPECT_EQ(r->rows.size(), layouts);
    EXPECT_EQ(bf16_rows, 0u);
    EXPECT_NE(notes.find("bf16 mixed precision not measured: bf16 GEMM needs a CPU with AVX512_BF16"),
              std::string::npos)
        << notes;
  }
}

TEST(Autotune, RefusesZeroSteps) {
  StatusOr<Dataset> data = MakeSynthDataset(3, 0, 64, 500);
  ASSERT_TRUE(data.ok());
  StatusOr<AutotuneResult> r = Autotune(TinyModel(), *data, AutotuneOptions{0, false, false});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(AutotuneWaitRecord, RoundTripsThroughTheEnvironmentText) {
  AutotuneWaitRecord r;
  r.decided = true;
  r.policy = "PASSIVE";
  r.other_examples_per_sec = 12345.678;
  r.row.examples_per_sec = 27182.818284590452;
  r.row.parallel.intra_op_threads = 2;
  r.row.parallel.towers = 1;
  r.row.parallel.hogwild = 4;
  r.row.gemm_dtype = model::DataType::kBF16;
  const std::string text = EncodeAutotuneWait(r);
  EXPECT_EQ(text.substr(0, 16), "decided PASSIVE ");
  StatusOr<AutotuneWaitRecord> back = DecodeAutotuneWait(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->decided);
  EXPECT_EQ(back->policy, "PASSIVE");
  EXPECT_EQ(back->row.examples_per_sec, r.row.examples_per_sec);  // %.17g: exact
  EXPECT_EQ(back->other_examples_per_sec, r.other_examples_per_sec);
  EXPECT_EQ(back->row.parallel.intra_op_threads, 2);
  EXPECT_EQ(back->row.parallel.towers, 1);
  EXPECT_EQ(back->row.parallel.hogwild, 4);
  EXPECT_EQ(back->row.gemm_dtype, model::DataType::kBF16);
  r.decided = false;
  r.policy = "ACTIVE";
  back = DecodeAutotuneWait(EncodeAutotuneWait(r));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->decided);
  EXPECT_EQ(back->policy, "ACTIVE");
  EXPECT_EQ(OtherWaitPolicy("ACTIVE"), "PASSIVE");
  EXPECT_EQ(OtherWaitPolicy("PASSIVE"), "ACTIVE");
}

TEST(AutotuneWaitRecord, MalformedTextIsNamedField) {
  const std::pair<const char*, const char*> bad[] = {
      {"", "0 words, want 8"},
      {"trial ACTIVE 1 0 1 1 0", "7 words, want 8"},
      {"maybe ACTIVE 1 0 1 1 0 f32", "stage 'maybe' is not trial or decided"},
      {"trial active 1 0 1 1 0 f32", "policy 'active' is not ACTIVE or PASSIVE"},
      {"trial ACTIVE fast 0 1 1 0 f32", "examples/s 'fast' is not a number >= 0"},
      {"trial ACTIVE -1 0 1 1 0 f32", "examples/s '-1' is not a number >= 0"},
      {"trial ACTIVE nan 0 1 1 0 f32", "examples/s 'nan' is not a number >= 0"},
      {"trial ACTIVE 1 x 1 1 0 f32", "other examples/s 'x' is not a number >= 0"},
      {"trial ACTIVE 1 0 0 1 0 f32", "intra_op '0' is not in [1, 4096]"},
      {"trial ACTIVE 1 0 1 0 0 f32", "towers '0' is not in [1, 4096]"},
      {"trial ACTIVE 1 0 1 1 -2 f32", "hogwild '-2' is not in [0, 4096]"},
      {"trial ACTIVE 1 0 1 1 0 f16", "GEMM type 'f16' is not f32 or bf16"},
      {"trial ACTIVE 1 0 1 1 0x2 f32", "hogwild '0x2' is not in [0, 4096]"},
  };
  for (const auto& [text, why] : bad) {
    StatusOr<AutotuneWaitRecord> r = DecodeAutotuneWait(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(r.status().message().find(std::string("CTRAIN_AUTOTUNE_WAIT='") + text + "': " + why),
              std::string::npos)
        << r.status().ToString();
  }
}

}  // namespace
}  // namespace ctrain::train
