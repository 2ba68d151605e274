// End-to-end regression tests of train / eval / predict for the field-report
// cases of issue #7 (tests/cases/<case>/, copied from ../shared/cases) and the
// new-user trial findings (trial/01, trial/03, trial/10). Each runs the real
// build/ctrain on tiny inputs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ctrain/train/checkpoint.h"

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using namespace ctrain::testing;

// Runs `sh -c "<cmd>"` in `dir` with stderr folded into stdout.
std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  for (std::string l; std::getline(is, l);) out.push_back(l);
  return out;
}

// A tiny model: every case trains in well under a second.
const std::string kTiny = " --embedding-size 4 --deep-layers 8 --progress none";

class TrainerCasesTest : public ScratchDirTest {
 protected:
  TrainerCasesTest() : ScratchDirTest("ctrain_cases_test") {}
  RunResult Run(const std::string& args) { return RunCtrain(args, dir_.string()); }
  RunResult Sh(const std::string& cmd) { return Shell(cmd, dir_.string()); }
  // True if model_dir holds a checkpoint file.
  bool HasCheckpoint(const std::string& model_dir) const {
    if (!fs::exists(dir_ / model_dir)) return false;
    for (const auto& e : fs::directory_iterator(dir_ / model_dir))
      if (e.path().filename().string().rfind("ckpt-", 0) == 0) return true;
    return false;
  }
};

// ---- B05 / trial/01: empty input in any mode is an error naming the input ----

const std::string kB05Flags = " --format libsvm --field-size 3 --feature-size 10" + kTiny;

TEST_F(TrainerCasesTest, B05EmptyFileStreamModeFailsNamingItAndWritesNoCheckpoint) {
  RunResult r = Run("train --train " + kCases + "/B05/empty.libsvm" + kB05Flags + " --model-dir m");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in " + kCases + "/B05/empty.libsvm"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("nothing to do"), std::string::npos) << r.out;
  EXPECT_FALSE(HasCheckpoint("m"));
}

TEST_F(TrainerCasesTest, B05EmptyFileMemoryModeFailsNamingIt) {
  RunResult r = Run("train --input-mode memory --train " + kCases + "/B05/empty.libsvm" + kB05Flags + " --model-dir m");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("InvalidArgument: no examples in " + kCases + "/B05/empty.libsvm"), std::string::npos) << r.out;
  EXPECT_FALSE(HasCheckpoint("m"));
}

TEST_F(TrainerCasesTest, B05EmptyStdinFailsInBothModes) {
  for (const char* mode : {"stream", "memory"}) {
    RunResult r = Sh("false | " + kCtrain + " train --train - --input-mode " + mode + kB05Flags + " --model-dir m");
    EXPECT_EQ(r.exit_code, 1) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("no examples in stdin (-)"), std::string::npos) << mode << ": " << r.out;
    EXPECT_FALSE(HasCheckpoint("m")) << mode;
  }
}

TEST_F(TrainerCasesTest, B05EmptyStdinWithACacheFails) {
  RunResult r = Sh("printf '' | " + kCtrain + " train --train - --cache memory --epochs 2" + kB05Flags + " --model-dir m");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in stdin (-) (epoch 1 read 0 records)"), std::string::npos) << r.out;
  EXPECT_FALSE(HasCheckpoint("m"));
}

TEST_F(TrainerCasesTest, B05EmptyFifoAndChannelFail) {
  ASSERT_EQ(::mkfifo(P("f.libsvm").c_str(), 0600), 0);
  RunResult r = Sh(": > f.libsvm & " + kCtrain + " train --train f.libsvm" + kB05Flags);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in f.libsvm"), std::string::npos) << r.out;
  fs::create_directories(dir_ / "ch");
  ASSERT_EQ(::mkfifo(P("ch/train_0").c_str(), 0600), 0);
  r = Sh(": > ch/train_0 & " + kCtrain + " train --train pipe:ch/train" + kB05Flags + " --model-dir m");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in pipe:ch/train (FIFO ch/train_0)"), std::string::npos) << r.out;
  EXPECT_FALSE(HasCheckpoint("m"));
}

TEST_F(TrainerCasesTest, B05SeveralInputsNameTheEmptyOnes) {
  Write("a.libsvm", "1 0:1 1:1 2:1\n0 0:1 1:2 2:1\n");
  Write("e1.libsvm", "");
  Write("e2.libsvm", "# only a comment\n");
  for (const char* mode : {"stream", "memory"}) {
    RunResult r = Run(std::string("train --input-mode ") + mode + " --train a.libsvm e1.libsvm" + kB05Flags);
    EXPECT_EQ(r.exit_code, 1) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("e1.libsvm"), std::string::npos) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("1 of 2 inputs are empty"), std::string::npos) << mode << ": " << r.out;
  }
  RunResult r = Run("train --input-mode memory --train a.libsvm e1.libsvm e2.libsvm" + kB05Flags);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in e1.libsvm, e2.libsvm (skipped: blank_lines=0 comment_lines=1 qid_tokens=0 "
                       "trailing_comments=0 unterminated_last_line=0) (2 of 3 inputs are empty)"),
            std::string::npos)
      << r.out;
}

TEST_F(TrainerCasesTest, B05EmptyValidationEvalAndPredictInputsFail) {
  Write("a.libsvm", "1 0:1 1:1 2:1\n0 0:1 1:2 2:1\n");
  Write("e.libsvm", "");
  RunResult r = Run("train --train a.libsvm --valid e.libsvm" + kB05Flags);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--valid: no examples in e.libsvm"), std::string::npos) << r.out;
  ASSERT_EQ(Run("train --train a.libsvm" + kB05Flags + " --model-dir m").exit_code, 0);
  r = Run("eval --model-dir m --input e.libsvm");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--input: no examples in e.libsvm"), std::string::npos) << r.out;
  r = Sh("printf '' | " + kCtrain + " predict --model-dir m --input - -o p.txt");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in stdin (-)"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(P("p.txt")));
}

TEST_F(TrainerCasesTest, StreamModeNamesEachInputThatGaveNoExamples) {
  Write("a.libsvm", "1 0:1 1:1 2:1\n0 0:1 1:2 2:1\n");
  Write("nl.libsvm", "\n");
  ASSERT_EQ(Sh("printf '' | gzip > e.gz").exit_code, 0);
  for (const std::string extra : {"", " --cache memory --epochs 2"}) {
    for (const std::string empty : {"nl.libsvm", "e.gz"}) {
      RunResult r = Run("train --train a.libsvm " + empty + extra + kB05Flags + " --model-dir m");
      EXPECT_EQ(r.exit_code, 1) << empty << extra << ": " << r.out;
      EXPECT_NE(r.out.find("InvalidArgument: no examples in " + empty +
                           " (epoch 1 read no records from it; 1 of 2 inputs are empty)"),
                std::string::npos)
          << empty << extra << ": " << r.out;
      EXPECT_FALSE(HasCheckpoint("m")) << empty << extra;
    }
  }
  RunResult s = Sh("printf '\\n' | " + kCtrain + " train --train - a.libsvm" + kB05Flags);
  EXPECT_EQ(s.exit_code, 1) << s.out;
  EXPECT_NE(s.out.find("no examples in stdin (-) (epoch 1 read no records from it; 1 of 2 inputs are empty)"),
            std::string::npos)
      << s.out;
  // Of three files, shard 2 of 3 holds only the third: the error names that one.
  Write("b.libsvm", "1 0:1 1:1 2:1\n");
  RunResult r = Run("train --train a.libsvm b.libsvm nl.libsvm --num-shards 3 --shard-index 2" + kB05Flags);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in nl.libsvm (the inputs of shard 2 of 3) (epoch 1 read 0 records"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("a.libsvm"), std::string::npos) << r.out;
}

TEST_F(TrainerCasesTest, AnEmptyLaterEpochSaysWhatWasTrainedAndKept) {
  Write("a.libsvm", "1 0:1 1:1 2:1\n0 0:1 1:2 2:1\n");
  fs::create_directories(dir_ / "ch");
  ASSERT_EQ(::mkfifo(P("ch/train_0").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo(P("ch/train_1").c_str(), 0600), 0);
  RunResult r = Sh("(cat a.libsvm > ch/train_0; : > ch/train_1) & " + kCtrain +
                   " train --train pipe:ch/train --epochs 2" + kB05Flags + " --model-dir m");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in pipe:ch/train (FIFO ch/train_1) (epoch 2 read 0 records); training stopped "
                       "there: the checkpoint of step 1 in m stays"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("nothing was trained"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(P("m/ckpt-1.bin")));
  r = Sh("cat a.libsvm | " + kCtrain + " train --train /dev/stdin --epochs 2" + kB05Flags);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in /dev/stdin (epoch 2 read 0 records); training stopped there after step 1 (no "
                       "--model-dir)"),
            std::string::npos)
      << r.out;
}

TEST_F(TrainerCasesTest, AFeatureSizeThatCannotFitIsRefusedBeforeAllocating) {
  // 2^50 rows x 5 floats: no machine has that; refused up front (nothing is allocated), in both modes.
  Write("a.libsvm", "1 0:1 1:1 2:1\n0 0:1 1:2 2:1\n");
  for (const char* mode : {"stream", "memory"}) {
    RunResult r = Run(std::string("train --input-mode ") + mode +
                      " --train a.libsvm --format libsvm --field-size 3 --feature-size 1125899906842624 --max-steps 1" +
                      kTiny);
    EXPECT_EQ(r.exit_code, 1) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("ResourceExhausted: the model needs "), std::string::npos) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("(--feature-size 1125899906842624 x (--embedding-size 4 + 1) x 4 bytes x (1 + 2 adam "
                         "slot(s)), plus "),
              std::string::npos)
        << mode << ": " << r.out;
    EXPECT_NE(r.out.find("is available (MemAvailable "), std::string::npos) << mode << ": " << r.out;
  }
}

TEST_F(TrainerCasesTest, Trial01DropRemainderLeavingNoBatchAndZeroEpochsFail) {
  Write("a.libsvm", "1 0:1 1:1 2:1\n0 0:1 1:2 2:1\n");
  RunResult r = Run("train --train a.libsvm --batch-size 10 --drop-remainder true" + kB05Flags + " --model-dir m");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--drop-remainder dropped all 2 examples of epoch 1 from a.libsvm: --batch-size 10"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(HasCheckpoint("m"));
  r = Run("train --train a.libsvm --epochs 0" + kB05Flags + " --model-dir m");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--epochs must be >= 1, got 0"), std::string::npos) << r.out;
  EXPECT_FALSE(HasCheckpoint("m"));
}

// ---- trial/03: eval/predict refuse data encoded differently from training ----

class Trial03Test : public TrainerCasesTest {
 protected:
  void SetUp() override {
    TrainerCasesTest::SetUp();
    if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
    // 300 LibSVM rows (1-based ids up to 921) and 100 more for eval: a fast model.
    ASSERT_EQ(Sh("head -300 " + kData + "/criteo_deepfm_va10k.libsvm > tr.libsvm && sed -n 301,400p " + kData +
                 "/criteo_deepfm_va10k.libsvm > va.libsvm")
                  .exit_code,
              0);
  }
  const std::string tsv_ = kData + "/criteo_raw_paddlerec_part-0.tsv";
};

TEST_F(Trial03Test, CheckpointRecordsTheDetectedFormatAndEvalRefusesCriteoTsvOnALibsvmModel) {
  RunResult t = Run("train --train tr.libsvm --id-base 1 --feature-size 921 --batch-size 100 --model-dir a" + kTiny);
  ASSERT_EQ(t.exit_code, 0) << t.out;
  EXPECT_EQ(t.out.find("warning"), std::string::npos) << t.out;  // real, scaled Criteo data: no input warning
  // The checkpoint meta names the format read (never auto), the id base and sizes.
  const std::string ckpt = Slurp(dir_ / "a" / "ckpt-3.bin");
  EXPECT_NE(ckpt.find(R"("data":{"compression":"none","feature_map":"","feature_size":921,"field_size":39,)"
                      R"("format":"libsvm","id_base":1})"),
            std::string::npos);
  RunResult r = Run("eval --model-dir a --input " + tsv_);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("FailedPrecondition: --input " + tsv_ +
                       " is criteo-tsv (hashed ids, 921 buckets, seed 0); the model in a was trained on libsvm "
                       "with id base 1"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("auc"), std::string::npos) << r.out;
  r = Run("predict --model-dir a --input " + tsv_ + " -o p.txt");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_FALSE(fs::exists(P("p.txt")));
}

TEST_F(Trial03Test, DataFlagsThatAgreeWithTheCheckpointAreAcceptedOthersRefusedNamingBothSides) {
  ASSERT_EQ(Run("train --train tr.libsvm --id-base 1 --feature-size 921 --batch-size 100 --model-dir a" + kTiny).exit_code,
            0);
  RunResult r =
      Run("predict --model-dir a --input va.libsvm --format libsvm --field-size 39 --feature-size 921 --id-base 1 -o p.txt");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(Lines(Slurp(P("p.txt"))).size(), 100u);
  r = Run("eval --model-dir a --input va.libsvm --id-base 0");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--input va.libsvm is libsvm with id base 0; the model in a was trained on libsvm with id "
                       "base 1: every id would shift by -1"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("increase --feature-size"), std::string::npos) << r.out;  // trial/10
  r = Run("eval --model-dir a --input va.libsvm --feature-size 1000");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--feature-size 1000 contradicts the model in a, which has feature_size 921"), std::string::npos)
      << r.out;
  r = Run("eval --model-dir a --input va.libsvm --format criteo-tsv");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("is criteo-tsv"), std::string::npos) << r.out;
}

TEST_F(Trial03Test, VocabularyTfrecordModelRefusesRawTsvAndHashedModelRefusesAnotherHashing) {
  ASSERT_EQ(Run("convert -i " + tsv_ + " -o tsv.tfrecord --vocab-min-count 2").exit_code, 0);
  ASSERT_EQ(Run("train --train tsv.tfrecord --feature-size 268 --batch-size 50 --model-dir v" + kTiny).exit_code, 0);
  RunResult r = Run("eval --model-dir v --input " + tsv_);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  // The model recorded the map beside its TFRecord (job/train_data.cc FindFeatureMap), so eval reads the TSV
  // through that map: still refused, naming both encodings.
  EXPECT_NE(r.out.find("is criteo-tsv (vocabulary ids from feature map "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; the model in v was trained on tfrecord (ids as stored)"), std::string::npos) << r.out;
  // A model trained on the TSV itself (hashing) evaluates the TSV, from a file or stdin.
  ASSERT_EQ(Run("train --train " + tsv_ + " --feature-size 5000 --batch-size 50 --model-dir h" + kTiny).exit_code, 0);
  EXPECT_NE(Slurp(dir_ / "h" / "ckpt-2.bin").find(R"("criteo":{"encoding":"hash","hash_buckets":5000,"hash_seed":0})"),
            std::string::npos);
  r = Run("eval --model-dir h --input " + tsv_);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("examples 100"), std::string::npos) << r.out;
  r = Sh("cat " + tsv_ + " | " + kCtrain + " eval --model-dir h --input -");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // ... but not LibSVM ids, even from stdin (checked once read).
  r = Sh("cat va.libsvm | " + kCtrain + " eval --model-dir h --input -");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("the model in h was trained on criteo-tsv (hashed ids, 5000 buckets, seed 0)"),
            std::string::npos)
      << r.out;
}

TEST_F(Trial03Test, VocabularyModelRecordsTheMapFingerprintAndRefusesAnEditedMapOrHashing) {
  ASSERT_EQ(Run("convert -i " + tsv_ + " -o v.tfrecord --vocab-min-count 2").exit_code, 0);
  ASSERT_EQ(Run("train --train " + tsv_ + " --feature-map v.tfrecord.feature_map.txt --feature-size 268 "
                "--batch-size 50 --model-dir fm" + kTiny)
                .exit_code,
            0);
  EXPECT_NE(Slurp(dir_ / "fm" / "ckpt-2.bin").find(R"("criteo":{"encoding":"vocabulary","entries":)"),
            std::string::npos);
  EXPECT_NE(Slurp(dir_ / "fm" / "ckpt-2.bin").find(R"(,"feature_map":")"), std::string::npos);
  RunResult r = Run("eval --model-dir fm --input " + tsv_);  // the checkpoint's map, unchanged
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // The same ids under other names: same size, different content.
  std::vector<std::string> lines = Lines(Slurp(P("v.tfrecord.feature_map.txt")));
  ASSERT_GT(lines.size(), 30u);
  const size_t a = lines[20].rfind(' '), b = lines[21].rfind(' ');
  const std::string ida = lines[20].substr(a), idb = lines[21].substr(b);
  lines[20] = lines[20].substr(0, a) + idb;
  lines[21] = lines[21].substr(0, b) + ida;
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  Write("fm2.txt", text);
  r = Run("eval --model-dir fm --input " + tsv_ + " --feature-map fm2.txt");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("the feature map changed since training"), std::string::npos) << r.out;
  // Editing the checkpoint's own map file after training is caught the same way.
  Write("v.tfrecord.feature_map.txt", text);
  r = Run("eval --model-dir fm --input " + tsv_);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("the feature map changed since training"), std::string::npos) << r.out;
}

TEST_F(Trial03Test, ResumingOnAnotherEncodingIsRefused) {
  ASSERT_EQ(Run("train --train " + tsv_ + " --feature-size 5000 --batch-size 50 --model-dir r" + kTiny).exit_code, 0);
  RunResult r = Run("train --train tr.libsvm --feature-size 5000 --batch-size 50 --epochs 2 --model-dir r" + kTiny);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("resume: this run's --train is libsvm with id base 0; the model in r was trained on criteo-tsv "
                       "(hashed ids, 5000 buckets, seed 0)"),
            std::string::npos)
      << r.out;
}

TEST_F(Trial03Test, TrainRefusesAValidEncodedDifferentlyFromTrainNamingBothSides) {
  for (const char* mode : {"stream", "memory"}) {
    RunResult r = Run(std::string("train --input-mode ") + mode + " --train tr.libsvm --valid " + tsv_ +
                      " --id-base 1 --feature-size 921 --model-dir m" + kTiny);
    EXPECT_EQ(r.exit_code, 1) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("FailedPrecondition: --valid " + tsv_ +
                         " is criteo-tsv (hashed ids, 921 buckets, seed 0); this run trains on --train tr.libsvm, "
                         "which is libsvm with id base 1"),
              std::string::npos)
        << mode << ": " << r.out;
    EXPECT_EQ(r.out.find("valid auc"), std::string::npos) << mode << ": " << r.out;
  }
  // Vocabulary ids (tfrecord) validated on the raw TSV (hashed): refused too, also from stdin.
  ASSERT_EQ(Run("convert -i " + tsv_ + " -o v.tfrecord --vocab-min-count 2").exit_code, 0);
  RunResult r = Sh("cat " + tsv_ + " | " + kCtrain + " train --train v.tfrecord --valid - --feature-size 268" + kTiny);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--valid - is criteo-tsv (vocabulary ids from feature map "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("this run trains on --train v.tfrecord, which is tfrecord (ids as stored)"), std::string::npos)
      << r.out;
  // Training from stdin with --format auto: checked once the stream's format is known, before a step.
  r = Sh("cat " + tsv_ + " | " + kCtrain + " train --train - --valid va.libsvm --id-base 1 --feature-size 1000 "
         "--model-dir s" + kTiny);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--valid va.libsvm is libsvm with id base 1; this run trains on --train -, which is criteo-tsv "
                       "(hashed ids, 1000 buckets, seed 0)"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(HasCheckpoint("s"));
  // The same encoding on both sides trains and validates.
  r = Run("train --train tr.libsvm --valid va.libsvm --id-base 1 --feature-size 921 --batch-size 100" + kTiny);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("valid auc"), std::string::npos) << r.out;
}

TEST_F(Trial03Test, AStreamReadWithFormatAutoRecordsTheFormatReadAndEvalRefusesAnotherEncoding) {
  RunResult r = Sh("cat " + tsv_ + " | " + kCtrain + " train --train - --feature-size 268 --batch-size 50 --model-dir s" +
                   kTiny);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string ckpt = Slurp(dir_ / "s" / "ckpt-2.bin");
  EXPECT_NE(ckpt.find(R"("feature_size":268,"field_size":39,"format":"criteo-tsv")"), std::string::npos);
  EXPECT_EQ(ckpt.find(R"("format":"")"), std::string::npos);
  ASSERT_EQ(Run("convert -i " + tsv_ + " -o v.tfrecord --vocab-min-count 2").exit_code, 0);
  r = Run("eval --model-dir s --input v.tfrecord");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--input v.tfrecord is tfrecord (ids as stored); the model in s was trained on criteo-tsv "
                       "(hashed ids, 268 buckets, seed 0)"),
            std::string::npos)
      << r.out;
  // Resuming from stdin on LibSVM ids is refused before a step is trained on them.
  std::string row = "1";
  for (int f = 0; f < 39; ++f) row += " " + std::to_string(f) + ":1";
  Write("ids.libsvm", row + "\n" + row + "\n");
  r = Sh("cat ids.libsvm | " + kCtrain + " train --train - --feature-size 268 --batch-size 50 --epochs 2 "
         "--model-dir s" + kTiny);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("resume: this run's --train is libsvm with id base 0; the model in s was trained on criteo-tsv"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(P("s/ckpt-4.bin")));
  // A stream and a file of different encodings in one run: named both.
  r = Sh("cat " + tsv_ + " | " + kCtrain + " train --train - tr.libsvm --feature-size 1000 --id-base 1" + kTiny);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("training inputs mix encodings: tr.libsvm is libsvm, <stdin> is criteo-tsv"), std::string::npos)
      << r.out;
}

TEST_F(TrainerCasesTest, StdinGivenToBothTrainAndValidIsRefusedUpFront) {
  RunResult r = Sh("printf '1 0:1 1:1 2:1\\n' | " + kCtrain + " train --train - --valid -" + kB05Flags);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("InvalidArgument: --train - and --valid - both read stdin, which can be read once"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("no examples"), std::string::npos) << r.out;
}

TEST_F(TrainerCasesTest, EvalAndPredictExpandGlobsAndDirectoriesAsTrainDoes) {
  fs::create_directories(dir_ / "gd");
  Write("gd/a.libsvm", "1 0:1 1:1 2:1\n0 0:1 1:2 2:1\n");
  Write("gd/b.libsvm", "1 0:3 1:1 2:1\n");
  ASSERT_EQ(Run("train --train gd" + kB05Flags + " --model-dir m").exit_code, 0);
  RunResult r = Run("eval --model-dir m --input 'gd/*.libsvm'");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("input: 3 examples from 2 file(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("examples 3"), std::string::npos) << r.out;
  r = Run("predict --model-dir m --input gd -o p.txt");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(Lines(Slurp(P("p.txt"))).size(), 3u);
  r = Run("eval --model-dir m --input 'gd/*.tfrecord'");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--input: gd/*.tfrecord: glob matched no files"), std::string::npos) << r.out;
}

TEST_F(TrainerCasesTest, OldCheckpointWithoutRecordedFormatStillEvaluatesAndSaysWhatCannotBeChecked) {
  Write("a.libsvm", "1 1:1 2:1 3:1\n0 1:1 2:2 3:1\n1 1:3 2:1 3:1\n");
  ASSERT_EQ(Run("train --train a.libsvm --field-size 3 --feature-size 10 --id-base 1 --model-dir m" + kTiny).exit_code, 0);
  // Rewrite the meta as ctrain wrote it before formats were recorded.
  auto ck = ctrain::train::LoadLatestCheckpoint(P("m"));
  ASSERT_TRUE(ck.ok()) << ck.status().ToString();
  ck->meta["data"] = {{"format", "auto"}, {"id_base", 1}, {"field_size", 3}, {"feature_map", ""}};
  ASSERT_TRUE(ctrain::train::SaveCheckpoint(P("m"), ck->step, ck->tensors, ck->meta).ok());
  RunResult r = Run("eval --model-dir m --input a.libsvm");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("note: the checkpoint in m does not record the training data's format"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("examples 3"), std::string::npos) << r.out;
  r = Run("eval --model-dir m --input a.libsvm --id-base 0");  // the recorded id base is still checked
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("trained on data with id base 1"), std::string::npos) << r.out;
}

// ---- B33: predict output aligns 1:1 with the input records ----

TEST_F(TrainerCasesTest, B33PredictKeepsOneLinePerRecordWithNanForTheDroppedOne) {
  ASSERT_EQ(Run("train --train " + kCases + "/B33/train.libsvm --field-size 1 --feature-size 10 --model-dir m" + kTiny)
                .exit_code,
            0);
  const std::string tfr = kCases + "/B33/corrupt_record2.tfr";
  RunResult r = Run("predict --model-dir m --input " + tfr + " -o p.txt --skip-corrupt-records");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::vector<std::string> lines = Lines(Slurp(P("p.txt")));
  ASSERT_EQ(lines.size(), 6u);  // 6 records in, 6 lines out
  EXPECT_EQ(lines[2], "nan");
  for (int i : {0, 1, 3, 4, 5}) EXPECT_NE(lines[i], "nan") << i;
  EXPECT_NE(r.out.find("record 2 at offset 142 (71 bytes) dropped as corrupt; output line 3 is nan"), std::string::npos)
      << r.out;
  // --output-columns passes the record index and label through.
  r = Run("predict --model-dir m --input " + tfr + " -o q.txt --skip-corrupt-records --output-columns index,label,prediction");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  lines = Lines(Slurp(P("q.txt")));
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[2], "2\tnan\tnan");
  EXPECT_EQ(lines[3].substr(0, 4), "3\t1\t");
  // The same from stdin.
  r = Sh("cat " + tfr + " | " + kCtrain + " predict --model-dir m --input - -o s.txt --skip-corrupt-records --format tfrecord");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(Lines(Slurp(P("s.txt"))), Lines(Slurp(P("p.txt"))));
  // eval and memory-mode train log each dropped record too.
  for (const std::string& cmd : {"eval --model-dir m --input " + tfr,
                                "train --input-mode memory --field-size 1 --feature-size 10" + kTiny + " --train " + tfr}) {
    r = Run(cmd + " --skip-corrupt-records");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("corrupt_record2.tfr: record 2 at offset 142 (71 bytes) dropped as corrupt\n"),
              std::string::npos)
        << r.out;
  }
  r = Run("predict --model-dir m --input " + tfr + " -o x.txt --output-columns prediction,bogus");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("unknown column 'bogus'"), std::string::npos) << r.out;
}

TEST_F(TrainerCasesTest, B33PredictRefusesADroppedRegionOfUnknownRecordCount) {
  ASSERT_EQ(Run("train --train " + kCases + "/B33/train.libsvm --field-size 1 --feature-size 10 --model-dir m" + kTiny)
                .exit_code,
            0);
  // Corrupt the length header of record 1 (offset 71): the reader must scan
  // for the next valid header, so the number of records lost is unknown.
  std::string bytes = Slurp(kCases + "/B33/corrupt_record2.tfr");
  bytes[71 + 8] ^= 0x5a;
  Write("len.tfr", bytes);
  RunResult r = Run("predict --model-dir m --input len.tfr -o p.txt --skip-corrupt-records");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("len.tfr: record 1 at offset 71: a corrupt length header"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(P("p.txt")));
}

// ---- trial/10: hints name the real cause ----

TEST_F(TrainerCasesTest, Trial10IdRangeHintsPointAtIdBaseNotFeatureSize) {
  Write("one.libsvm", "1 1:1 2:1 3:1\n0 1:1 2:1 3:2\n");  // 1-based ids 1..3
  RunResult r = Run("train --train one.libsvm --field-size 3 --feature-size 3" + kTiny);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("one.libsvm:1: field 3 of 3: feature id 3 (as written) is outside [0, 3): one past the top; if "
                       "the file's ids are 1-based (classic LIBSVM), use --id-base 1"),
            std::string::npos)
      << r.out;
  Write("zero.libsvm", "1 0:1 1:1 2:1\n");  // 0-based ids read with --id-base 1
  r = Run("train --train zero.libsvm --field-size 3 --feature-size 3 --id-base 1" + kTiny);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("zero.libsvm:1:3: id 0 is below id_base 1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("--feature-size"), std::string::npos) << r.out;
  // eval never suggests --feature-size (the model's is fixed).
  Write("ok.libsvm", "1 0:1 1:1 2:1\n0 0:2 1:1 2:1\n");
  ASSERT_EQ(Run("train --train ok.libsvm --field-size 3 --feature-size 3 --model-dir m" + kTiny).exit_code, 0);
  Write("big.libsvm", "1 0:1 1:1 7:1\n");
  r = Run("eval --model-dir m --input big.libsvm");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("the model was trained with feature_size 3 and has no embedding for it"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("--feature-size"), std::string::npos) << r.out;
}

TEST_F(TrainerCasesTest, Trial10InputBoundHintNeedsEnoughStepsAndProgressEpochIsRightAtTheEnd) {
  Write("a.libsvm", "1 0:1 1:1 2:1\n0 0:1 1:2 2:1\n1 0:3 1:1 2:1\n");
  RunResult r = Run("train --train a.libsvm --field-size 3 --feature-size 10 --batch-size 1 --embedding-size 4 "
                    "--deep-layers 8 --progress bar");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("epoch 2/1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 3/3 | epoch 1/1"), std::string::npos) << r.out;
}

TEST_F(TrainerCasesTest, Trial10InputBoundHintNeedsFiftyStepsAndTwoSeconds) {
  Write("a.libsvm", "1 0:1 1:1 2:1\n0 0:1 1:2 2:1\n");
  ASSERT_EQ(::mkfifo(P("slow.libsvm").c_str(), 0600), 0);
  // A writer that starts late: the one step waits most of the run for input
  // (input wait ~80%), but one step in under a second says nothing about the pipeline.
  RunResult r = Sh("(sleep 0.4; cat a.libsvm > slow.libsvm) & " + kCtrain +
                   " train --train slow.libsvm --format libsvm --field-size 3 --feature-size 10" + kTiny);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("input wait"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("input-bound"), std::string::npos) << r.out;
}

// ---- B17: a finite value that makes the loss non-finite is named by file:line ----

const std::string kB17Flags = " --field-size 3 --feature-size 101 --batch-size 32" + kTiny;

TEST_F(TrainerCasesTest, B17NonFiniteLossNamesTheInputLineInStreamAndMemoryMode) {
  const std::string file = kCases + "/B17/value_1e30.libsvm";
  for (const char* mode : {"stream", "memory"}) {
    RunResult r = Run("train --train " + file + " --input-mode " + mode + kB17Flags + " --model-dir m");
    EXPECT_EQ(r.exit_code, 1) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("loss is not finite (term: logloss = -nan) on a batch holding extreme input values: " + file +
                         ":71: field 1 value 1e+30"),
              std::string::npos)
        << mode << ": " << r.out;
    EXPECT_EQ(r.out.find("learning-rate"), std::string::npos) << mode << ": " << r.out;
    EXPECT_FALSE(HasCheckpoint("m")) << mode;
  }
  // Memory mode warns about the field before training.
  RunResult r = Run("train --train " + file + " --input-mode memory" + kB17Flags);
  EXPECT_NE(r.out.find("warning: unscaled input values: field 1 has values beyond +-1000 in the first 128 training "
                       "examples (field 1: 0.003 .. 1e+30, largest at " + file + ":71)"),
            std::string::npos)
      << r.out;
  // From stdin the line cannot be re-read: the batch row and value are named.
  r = Sh("cat " + file + " | " + kCtrain + " train --train -" + kB17Flags);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("(label 0, from a stream that cannot be re-read): field 1 value 1e+30"), std::string::npos)
      << r.out;
}

TEST_F(TrainerCasesTest, B17OrdinaryInputsThatDivergeGetTheLearningRateHint) {
  Write("a.libsvm", "1 0:1 1:1 2:1\n0 0:1 1:2 2:1\n");
  RunResult r = Run("train --train a.libsvm --field-size 3 --feature-size 10 --optimizer sgd --learning-rate 1e38 "
                    "--epochs 20 --batch-size 1" + kTiny);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("loss is not finite"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("try a smaller --learning-rate"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("extreme input values"), std::string::npos) << r.out;
}

// ---- B34: unscaled values and saturated validation predictions are named ----

TEST_F(TrainerCasesTest, B34UnscaledCountsAndSaturatedValidationWarnWithFieldRangeAndFix) {
  RunResult r = Run("train --train " + kCases + "/B34/raw_counts_train.libsvm --valid " + kCases +
                    "/B34/raw_counts_valid.libsvm --batch-size 64 --embedding-size 4 --deep-layers 16 --progress none "
                    "--metrics-json mj.json --model-dir m");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: unscaled input values: fields 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ... (13 fields) have "
                       "values beyond +-1000 in the first 600 training examples (field 1: 0 .. 1.21e+06, largest at " +
                           kCases + "/B34/raw_counts_train.libsvm:257;"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("log1p"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warning: step 10: 100.0% of the 200 evaluated predictions are saturated"), std::string::npos)
      << r.out;
  const nlohmann::json j = nlohmann::json::parse(Slurp(P("mj.json")));
  ASSERT_EQ(j["warnings"].size(), 2u);
  // eval/predict say the same about their input.
  r = Run("eval --model-dir m --input " + kCases + "/B34/raw_counts_valid.libsvm");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: unscaled input values: fields 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ... (13 fields) have "
                       "values beyond +-1000 in the first 200 input examples"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("warning: step 10: 100.0% of the 200 evaluated predictions are saturated"), std::string::npos)
      << r.out;
}

TEST_F(TrainerCasesTest, CategoryCodesStoredAsValuesUnderOneIdWarn) {
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += std::to_string(i % 3 == 0) + " 0:1 1:" + std::to_string((i * 7) % 31) + " " + std::to_string(2 + i % 5) + ":1\n";
  Write("codes.libsvm", text);
  RunResult r = Run("train --train codes.libsvm --field-size 3 --feature-size 10" + kTiny);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: field 2: the id never varies while the value takes several integer values in the "
                       "first 200 training examples (field 2: id 1, 31 values 0 .. 30)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("hash each code into the id"), std::string::npos) << r.out;
}

}  // namespace
