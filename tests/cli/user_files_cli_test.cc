// End-to-end tests of issue #23's "files as users have them" on the real
// binary (build/ctrain): Criteo rows whose trailing empty cells were stripped
// (--criteo-pad-missing-trailing), directories with Hadoop/Spark markers and
// Markdown files, feature-spec label rules, and the advice for LibSVM and
// libFFM files. Every input is synthetic and written by the test.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "dataservice/cluster.h"
#include "ctrain/io/example.h"
#include "ctrain/io/tfrecord.h"

namespace {

using namespace ctrain::testing;
namespace fs = std::filesystem;
using nlohmann::json;

class UserFilesCli : public ScratchDirTest {
 protected:
  UserFilesCli() : ScratchDirTest("ctrain_user_files_cli") {}
};

// A 40-cell Criteo TSV row: label, 13 integers, 26 categories; row r varies the values.
std::vector<std::string> CriteoCells(int r) {
  std::vector<std::string> c{r % 3 == 0 ? "1" : "0"};
  for (int i = 0; i < 13; ++i) c.push_back(std::to_string((r * 7 + i) % 11));
  for (int j = 0; j < 26; ++j) c.push_back(j >= 23 ? "" : "c" + std::to_string((r + j) % 5));
  return c;
}
std::string Join(const std::vector<std::string>& c, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += (i ? "\t" : "") + c[i];
  return s;
}

// Rows whose trailing empty cells were stripped (37-39 cells, as in some
// public copies of Kaggle's train.txt): refused naming the option by default;
// with --criteo-pad-missing-trailing every command reads them as the rows with
// the empty cells written out, and counts them.
TEST_F(UserFilesCli, CriteoPadMissingTrailingInEveryCommand) {
  std::string stripped, full;
  int expect_padded = 0;
  for (int r = 0; r < 60; ++r) {
    const std::vector<std::string> c = CriteoCells(r);
    const size_t keep = r % 4 == 0 ? 40 : 40 - static_cast<size_t>(r % 4);  // 40, 39, 38, 37 cells
    expect_padded += keep < 40;
    stripped += Join(c, keep) + "\n";
    full += Join(c, 40) + "\n";
  }
  Write("stripped.tsv", stripped);
  Write("full.tsv", full);

  RunResult r = RunCtrain("inspect " + P("stripped.tsv"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(P("stripped.tsv") + ":2: expected 40 cells, got 39 ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--criteo-pad-missing-trailing"), std::string::npos) << r.out;
  r = RunCtrain("train --train " + P("stripped.tsv") + " --progress none --feature-size 1000");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--criteo-pad-missing-trailing"), std::string::npos) << r.out;

  r = RunCtrain("inspect --json --criteo-pad-missing-trailing " + P("stripped.tsv"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json j = json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j["records"], 60);
  EXPECT_EQ(j["padded_rows"], expect_padded);
  EXPECT_EQ(j["padded_cells"], 15 * (1 + 2 + 3));
  r = RunCtrain("inspect --json " + P("full.tsv"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(json::parse(r.out.substr(r.out.find('{')))["missing_categorical_cells"], j["missing_categorical_cells"]);

  // convert: the same bytes as the full rows, the count on stderr.
  r = RunCtrain("convert --criteo-pad-missing-trailing -i " + P("stripped.tsv") + " -o " + P("s.libsvm") +
                " --output-format libsvm --hash-buckets 1000");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("padded_rows=" + std::to_string(expect_padded)), std::string::npos) << r.out;
  ASSERT_EQ(RunCtrain("convert -i " + P("full.tsv") + " -o " + P("f.libsvm") +
                      " --output-format libsvm --hash-buckets 1000").exit_code, 0);
  EXPECT_EQ(Slurp(P("s.libsvm")), Slurp(P("f.libsvm")));
  EXPECT_FALSE(Slurp(P("s.libsvm")).empty());

  // train in memory and stream: the figures of the full file; stream reports the count.
  for (const std::string mode : {"memory", "stream"}) {
    const std::string common = " --progress none --feature-size 1000 --embedding-size 4 --deep-layers 8 "
                               "--batch-size 16 --shuffle false --input-mode " + mode + " --metrics-json ";
    r = RunCtrain("train --criteo-pad-missing-trailing --train " + P("stripped.tsv") + common + P("ms.json"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    ASSERT_EQ(RunCtrain("train --train " + P("full.tsv") + common + P("mf.json")).exit_code, 0);
    const json ms = json::parse(Slurp(P("ms.json"))), mf = json::parse(Slurp(P("mf.json")));
    EXPECT_EQ(ms["train_loss"], mf["train_loss"]) << mode;
    EXPECT_EQ(ms["steps"], mf["steps"]) << mode;
    if (std::string(mode) == "stream") EXPECT_EQ(ms["pipeline"]["criteo_padded_rows"], expect_padded) << ms.dump();
    else EXPECT_NE(r.out.find("padded_rows=" + std::to_string(expect_padded)), std::string::npos) << r.out;
  }
}

// An option of one format on another is refused, naming the file and the format, in every command and
// reading mode (memory readers, the stream pipeline, byte-range splits, convert), never silently ignored.
TEST_F(UserFilesCli, FormatOptionsOnAnotherFormatAreRefusedByName) {
  std::string libsvm;
  for (int r = 0; r < 40; ++r) libsvm += std::to_string(r % 2) + " 1:1 " + std::to_string(2 + r % 5) + ":1\n";
  Write("a.libsvm", libsvm);
  const std::string want = P("a.libsvm") + ": --criteo-pad-missing-trailing reads Criteo TSV/CSV rows whose trailing "
                           "empty cells were stripped, but this input is libsvm";
  const std::string train = "train --criteo-pad-missing-trailing --train " + P("a.libsvm") +
                            " --field-size 2 --feature-size 10 --progress none --batch-size 8 --input-mode ";
  for (const std::string& cmd : {train + "memory", train + "stream", train + "stream --num-shards 2 --shard-index 1",
                                 "convert --criteo-pad-missing-trailing -i " + P("a.libsvm") + " -o " + P("o.libsvm"),
                                 "inspect --criteo-pad-missing-trailing " + P("a.libsvm")}) {
    SCOPED_TRACE(cmd);
    RunResult r = RunCtrain(cmd);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
  }
  // The same file with its own format's options trains.
  EXPECT_EQ(RunCtrain("train --train " + P("a.libsvm") + " --field-size 2 --feature-size 10 --progress none "
                      "--batch-size 8 --input-mode stream").exit_code, 0);
}

// The same through the data service: the dataset definition carries the flag to the workers, which pad and
// count; the trainer's metrics add up their splits' counts. Without the flag the workers refuse the short
// row, naming file, line and the flag.
TEST_F(UserFilesCli, CriteoPadMissingTrailingThroughTheDataService) {
  std::string stripped, full;
  int expect_padded = 0;
  for (int r = 0; r < 90; ++r) {
    const std::vector<std::string> c = CriteoCells(r);
    const size_t keep = r % 4 == 0 ? 40 : 40 - static_cast<size_t>(r % 4);
    expect_padded += keep < 40;
    stripped += Join(c, keep) + "\n";
    full += Join(c, 40) + "\n";
  }
  Write("stripped.tsv", stripped);
  Write("full.tsv", full);
  fs::create_directories(P("ds"));
  DataServiceCluster c(P("ds"));
  ASSERT_NE(c.StartDispatcher(), "");
  ASSERT_NE(c.StartWorker(), "");
  ASSERT_TRUE(c.WaitForLiveWorkers(1)) << c.Logs();
  const std::string read = "data-service read --data-service " + c.address() + " --format criteo-tsv "
                           "--feature-size 1000 --batch-size 16 --num-splits 3 --json ";
  RunResult r = RunCtrainBounded(read + "--train " + P("stripped.tsv") + " --discard");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("stripped.tsv:2: expected 40 cells, got 39"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--criteo-pad-missing-trailing"), std::string::npos) << r.out;
  r = RunCtrainBounded(read + "--criteo-pad-missing-trailing --train " + P("stripped.tsv") + " -o " + P("s.libsvm"));
  ASSERT_EQ(r.exit_code, 0) << r.out << c.Logs();
  ASSERT_NE(r.out.rfind("\n{"), std::string::npos) << r.out;
  const json j = json::parse(r.out.substr(r.out.rfind("\n{") + 1));
  EXPECT_EQ(j["data_service"]["criteo_padded_rows"], expect_padded) << j.dump();
  ASSERT_EQ(RunCtrainBounded(read + "--train " + P("full.tsv") + " -o " + P("f.libsvm")).exit_code, 0);
  EXPECT_EQ(Slurp(P("s.libsvm")), Slurp(P("f.libsvm")));  // one split at a time in order: the same lines
  EXPECT_FALSE(Slurp(P("s.libsvm")).empty());
  // Training: the figures of the full file, and the count in the pipeline's and the data service's metrics.
  const std::string train = "train --data-service " + c.address() + " --format criteo-tsv --feature-size 1000 "
                            "--embedding-size 4 --deep-layers 8 --batch-size 16 --shuffle false --progress none "
                            "--intra-op-parallelism-threads 1 --data-service-wait-seconds 30 --metrics-json ";
  r = RunCtrainBounded(train + P("ms.json") + " --criteo-pad-missing-trailing --train " + P("stripped.tsv") +
                       " --training-job-name s");
  ASSERT_EQ(r.exit_code, 0) << r.out << c.Logs();
  r = RunCtrainBounded(train + P("mf.json") + " --train " + P("full.tsv") + " --training-job-name f");
  ASSERT_EQ(r.exit_code, 0) << r.out << c.Logs();
  const json ms = json::parse(Slurp(P("ms.json"))), mf = json::parse(Slurp(P("mf.json")));
  EXPECT_EQ(ms["train_loss"], mf["train_loss"]);
  EXPECT_EQ(ms["steps"], mf["steps"]);
  EXPECT_EQ(ms["pipeline"]["criteo_padded_rows"], expect_padded) << ms.dump();
  EXPECT_EQ(ms["data_service"]["criteo_padded_rows"], expect_padded) << ms.dump();
  EXPECT_EQ(mf["pipeline"]["criteo_padded_rows"], 0) << mf.dump();
  // Only splits the trainer took whole count: one step of 16 rows completes none of the 3 splits of 30 rows,
  // though their workers may have read (and counted) them all already.
  r = RunCtrainBounded(train + P("mx.json") + " --criteo-pad-missing-trailing --train " + P("stripped.tsv") +
                       " --training-job-name x --num-splits 3 --data-service-max-open-splits 3 --max-steps 1");
  ASSERT_EQ(r.exit_code, 0) << r.out << c.Logs();
  const json mx = json::parse(Slurp(P("mx.json")));
  EXPECT_EQ(mx["data_service"]["splits_completed"], 0) << mx.dump();
  EXPECT_EQ(mx["data_service"]["criteo_padded_rows"], 0) << mx.dump();
  EXPECT_EQ(mx["data_service"]["worker_input_bytes"], 0) << mx.dump();
}

// A Spark/Hadoop output directory: _SUCCESS, .crc files and a README next to
// the parts. The markers are skipped (and logged); the README is refused
// naming its file and line, never read as LibSVM.
TEST_F(UserFilesCli, SparkOutputDirectoryWithMarkersAndReadme) {
  fs::create_directories(P("out"));
  std::string part0, part1;
  for (int r = 0; r < 40; ++r) (r % 2 ? part1 : part0) += std::to_string(r % 3 == 0) + " 1:1 " +
                                                         std::to_string(2 + r % 5) + ":0.5 9:1\n";
  Write("out/part-00000", part0);
  Write("out/part-00001", part1);
  Write("out/_SUCCESS", "");
  Write("out/.part-00000.crc", "crc bytes");
  const std::string flags = " --field-size 3 --id-base 1 --feature-size 10 --progress none --embedding-size 4 "
                            "--deep-layers 8 --batch-size 8 --epochs 1 ";
  RunResult r = RunCtrain("train --train " + P("out") + flags + "--metrics-json " + P("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(P("out") + ": skipped 2 file(s) whose names start with '_' or '.'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(".part-00000.crc, _SUCCESS"), std::string::npos) << r.out;
  EXPECT_EQ(json::parse(Slurp(P("m.json")))["examples"], 40);
  r = RunCtrain("inspect --json " + P("out"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("_SUCCESS\","), std::string::npos) << r.out;  // no JSON object for a marker

  Write("out/README.md", "# Clicks, day 0\n\nWritten by the nightly job: parts are LibSVM.\n");
  r = RunCtrain("train --train " + P("out") + flags);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(P("out/README.md") + ":3: cannot detect the record format: 'Written by the nightly job: "
                                            "parts are LibSVM.' is not a LibSVM, libFFM or Criteo TSV/CSV row"),
            std::string::npos)
      << r.out;
  r = RunCtrain("convert -i " + P("out") + " -o " + P("o.tfr"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(P("out/README.md") + ":3: cannot detect the record format"), std::string::npos) << r.out;
  // --format libsvm: the parser names the README's line instead.
  r = RunCtrain("inspect --format libsvm " + P("out/README.md"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(P("out/README.md") + ":3:1: bad label 'Written'"), std::string::npos) << r.out;
}

// LibSVM lines with a constant number of pairs other than 39 get the
// --field-size advice; a libFFM file gets the feature-spec commands that train it.
TEST_F(UserFilesCli, PairCountAndLibFfmAdviceSayHow) {
  std::string svm, ffm;
  for (int r = 0; r < 20; ++r) {
    svm += std::to_string(r % 2) + " 1:1 4:0.5 7:1 9:2\n";
    ffm += std::to_string(r % 2) + " 0:1:1 1:4:0.5 1:5:1 2:7:2\n";
  }
  Write("four.libsvm", svm);
  Write("t.libffm", ffm);
  RunResult r = RunCtrain("train --train " + P("four.libsvm") + " --id-base 1 --feature-size 10 --progress none");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("expected 39 'id:value' pairs, found 4 (if every line has 4 pairs, pass --field-size 4; "
                       "lines with a varying number of pairs: give a --feature-spec with a field map"),
            std::string::npos)
      << r.out;
  r = RunCtrain("train --train " + P("four.libsvm") + " --id-base 1 --feature-size 10 --progress none --field-size 3");
  EXPECT_NE(r.out.find("more than 3 'id:value' pairs (field_size 3): the line has 4 pairs (if every line has 4 "
                       "pairs, pass --field-size 4"),
            std::string::npos)
      << r.out;
  r = RunCtrain("train --train " + P("four.libsvm") + " --id-base 1 --feature-size 10 --progress none --field-size 4 "
                "--embedding-size 4 --deep-layers 8");
  EXPECT_EQ(r.exit_code, 0) << r.out;  // the advice works

  r = RunCtrain("train --train " + P("t.libffm") + " --progress none");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(P("t.libffm") + ": libFFM (field:feature:value) is read through a feature spec, each libFFM "
                                       "field a multi-hot field: `ctrain inspect " + P("t.libffm") +
                       " --suggest-spec spec.json`, then pass --feature-spec spec.json"),
            std::string::npos)
      << r.out;
  // ... and that advice trains it.
  r = RunCtrain("inspect --suggest-spec " + P("spec.json") + " " + P("t.libffm"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunCtrain("train --train " + P("t.libffm") + " --feature-spec " + P("spec.json") +
                " --progress none --embedding-size 4 --deep-layers 8 --model-dir " + P("m"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = RunCtrain("eval --input " + P("t.libffm") + " --model-dir " + P("m"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// TFX taxi: the label is derived from `tips` (tips > 0) by a label rule;
// --suggest-spec warns that `tips` is not 0/1 and suggests the rule.
TEST_F(UserFilesCli, LabelRuleTrainsOnTips) {
  std::string bytes, rec;
  for (int r = 0; r < 64; ++r) {
    const float tips = r % 3 == 0 ? 0.0f : 0.5f * static_cast<float>(r % 7);
    rec.clear();
    const std::vector<std::pair<std::string, ctrain::io::ParsedFeature>> f = {
        {"tips", ctrain::io::ParsedFeature::Floats({tips})},
        {"fare", ctrain::io::ParsedFeature::Floats({3.0f + static_cast<float>(r % 9)})},
        {"company", ctrain::io::ParsedFeature::Bytes({r % 2 ? "a" : "b"})}};
    ctrain::io::EncodeExample(f, &rec);
    ctrain::io::AppendTFRecord(&bytes, rec);
  }
  Write("taxi.tfrecord", bytes);
  RunResult r = RunCtrain("inspect --suggest-spec " + P("spec.json") + " --label-key tips " + P("taxi.tfrecord"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ctrain: warning: spec: label 'tips' is not 0/1 (values 0 .. 3,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"label_rule\": {\"threshold\": 0} (1 when tips > 0)"), std::string::npos) << r.out;
  const std::string common = " --progress none --embedding-size 4 --deep-layers 8 --batch-size 16 ";
  r = RunCtrain("train --train " + P("taxi.tfrecord") + " --feature-spec " + P("spec.json") + common);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("feature 'tips': label 0.5"), std::string::npos) << r.out;
  json spec = json::parse(Slurp(P("spec.json")));
  spec["label_rule"] = {{"threshold", 0}};
  Write("rule.json", spec.dump());
  r = RunCtrain("train --train " + P("taxi.tfrecord") + " --feature-spec " + P("rule.json") + common +
                "--model-dir " + P("m") + " --metrics-json " + P("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // 64 rows, tips > 0 on the rows r % 3 != 0 and r % 7 != 0: CTR as the rule says.
  int positives = 0;
  for (int i = 0; i < 64; ++i) positives += i % 3 != 0 && i % 7 != 0;
  char ctr[32];
  std::snprintf(ctr, sizeof ctr, "CTR %.4f", positives / 64.0);
  EXPECT_NE(r.out.find(ctr), std::string::npos) << r.out;
  // The checkpoint keeps the rule: eval reads the labels the same way.
  r = RunCtrain("eval --input " + P("taxi.tfrecord") + " --model-dir " + P("m"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(ctr), std::string::npos) << r.out;
}

// convert --output-format npz needs a spec and writes a zip of .npy files.
TEST_F(UserFilesCli, ConvertNpzNeedsASpec) {
  Write("t.libffm", "1 0:1:1 1:4:0.5\n0 1:5:1\n");
  RunResult r = RunCtrain("convert -i " + P("t.libffm") + " -o " + P("t.npz") + " --output-format npz");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--output-format npz writes one array per feature-spec entry: give --feature-spec"),
            std::string::npos)
      << r.out;
  ASSERT_EQ(RunCtrain("inspect --suggest-spec " + P("s.json") + " " + P("t.libffm")).exit_code, 0);
  r = RunCtrain("convert -i " + P("t.libffm") + " -o " + P("t.npz") + " --output-format npz --feature-spec " +
                P("s.json") + " --compression gzip");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--compression gzip does not apply"), std::string::npos) << r.out;
  r = RunCtrain("convert -i " + P("t.libffm") + " -o " + P("t.npz") + " --output-format npz --feature-spec " +
                P("s.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("wrote 2 records (7 arrays"), std::string::npos) << r.out;  // label + 2 x (ids, offsets, weights)
  const std::string z = Slurp(P("t.npz"));
  EXPECT_EQ(z.substr(0, 4), std::string("PK\x03\x04", 4));
  EXPECT_NE(z.find("field1.offsets.npy"), std::string::npos);
}

}  // namespace
