// End-to-end tests of the ctrain binary (build/ctrain): inspect, convert, synth.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using namespace ctrain::testing;

class CliTest : public ScratchDirTest {
 protected:
  CliTest() : ScratchDirTest("ctrain_cli_test") {}
};


TEST_F(CliTest, InspectJsonCountsEveryRecordFileInSharedData) {
  if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  // Exact counts from ../shared/data/SOURCES.md.
  const std::map<std::string, std::pair<std::string, uint64_t>> expected = {
      {"agaricus_test.libsvm", {"libsvm", 1611}},
      {"agaricus_train.libsvm", {"libsvm", 6513}},
      {"criteo_deepctr_sample.csv", {"criteo-csv", 200}},
      {"criteo_deepctr_te.gzip.tfrecords", {"tfrecord", 20}},
      {"criteo_deepctr_te.tfrecords", {"tfrecord", 40}},
      {"criteo_deepctr_tr.gzip.tfrecords", {"tfrecord", 160}},
      {"criteo_deepctr_tr.tfrecords", {"tfrecord", 160}},
      {"criteo_deepctr_va.gzip.tfrecords", {"tfrecord", 20}},
      {"criteo_deepfm_va10k.libsvm", {"libsvm", 10040}},
      {"criteo_paddlerec_wd.tfrecord", {"tfrecord", 100}},
      {"criteo_raw_paddlerec_part-0.tsv", {"criteo-tsv", 100}},
      {"criteo_xlearn_small_test.libffm", {"libffm", 200}},
      {"criteo_xlearn_small_train.libffm", {"libffm", 200}},
      {"tfx_penguin_train-00000-of-00001.tfrecord.gz", {"tfrecord", 234}},
      {"tfx_taxi_eval-00000-of-00012.tfrecord.gz", {"tfrecord", 424}},
  };
  std::string args = "inspect --json";
  for (const auto& [name, _] : expected) args += " " + kData + "/" + name;
  RunResult r = RunCtrain(args);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream lines(r.out);
  std::string line;
  size_t seen = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    std::string name = fs::path(j["file"].get<std::string>()).filename().string();
    ASSERT_TRUE(expected.count(name)) << name;
    EXPECT_EQ(j["format"], expected.at(name).first) << name;
    EXPECT_EQ(j["records"].get<uint64_t>(), expected.at(name).second) << name;
    bool gz = name.find("gzip") != std::string::npos || name.ends_with(".gz");
    EXPECT_EQ(j["compression"], gz ? "gzip" : "none") << name;
    ++seen;
  }
  EXPECT_EQ(seen, expected.size());
}

TEST_F(CliTest, InspectReportsSchemaDetails) {
  if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  RunResult r = RunCtrain("inspect --json " + kData + "/criteo_deepfm_va10k.libsvm " + kData +
                    "/tfx_taxi_eval-00000-of-00012.tfrecord.gz");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream lines(r.out);
  std::string l1, l2;
  std::getline(lines, l1);
  std::getline(lines, l2);
  auto a = nlohmann::json::parse(l1), b = nlohmann::json::parse(l2);
  EXPECT_EQ(a["fields_per_line"]["min"], 39);
  EXPECT_EQ(a["fields_per_line"]["max"], 39);
  EXPECT_EQ(a["id_range"]["min"], 1);
  EXPECT_EQ(a["id_range"]["max"], 921);
  EXPECT_EQ(a["labels"]["0"], 7711);
  EXPECT_EQ(a["labels"]["1"], 2329);
  bool found_company = false;
  for (const auto& f : b["features"])
    if (f["name"] == "company") {
      found_company = true;
      EXPECT_EQ(f["empty"], 131);
      EXPECT_EQ(f["present"], 424);
    }
  EXPECT_TRUE(found_company);
}

TEST_F(CliTest, InspectFailsOnCorruptAndTruncatedTFRecord) {
  ASSERT_EQ(RunCtrain("synth --rows 50 --output " + P("s.tfrecord")).exit_code, 0);
  std::string bytes = Slurp(P("s.tfrecord"));
  ASSERT_GT(bytes.size(), 1000u);
  std::string corrupt = bytes;
  corrupt[bytes.size() / 2] ^= 0x40;
  std::ofstream(P("corrupt.tfrecord"), std::ios::binary) << corrupt;
  RunResult c = RunCtrain("inspect " + P("corrupt.tfrecord"));
  EXPECT_NE(c.exit_code, 0);
  EXPECT_NE(c.out.find("DataLoss"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("corrupt.tfrecord"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("record "), std::string::npos) << c.out;
  std::ofstream(P("trunc.tfrecord"), std::ios::binary) << bytes.substr(0, bytes.size() - 3);
  RunResult t = RunCtrain("inspect --json " + P("trunc.tfrecord"));
  EXPECT_NE(t.exit_code, 0);
  EXPECT_NE(t.out.find("OutOfRange"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("truncated"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("\"error\""), std::string::npos) << t.out;
}

TEST_F(CliTest, CompressionMismatchIsNamedError) {
  if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  RunResult r = RunCtrain("inspect --compression none " + kData + "/criteo_deepctr_tr.gzip.tfrecords");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("compression mismatch"), std::string::npos) << r.out;
}

TEST_F(CliTest, InspectLibFfm) {
  if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  RunResult r = RunCtrain("inspect --json " + kData + "/criteo_xlearn_small_train.libffm");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["labels"]["0"], 152);
  EXPECT_EQ(j["labels"]["1"], 48);
  // Counted independently with awk (SOURCES.md gives 16-36 loosely for both files).
  EXPECT_EQ(j["triples_per_line"]["min"], 17);
  EXPECT_EQ(j["triples_per_line"]["max"], 31);
  EXPECT_EQ(j["max_field"], 17);
  // Training data needs the fixed layout: libFFM is refused with the file named.
  RunResult c = RunCtrain("convert -i " + kData + "/criteo_xlearn_small_train.libffm -o " + P("x.tfr"));
  EXPECT_NE(c.exit_code, 0);
  EXPECT_NE(c.out.find("criteo_xlearn_small_train.libffm: libFFM"), std::string::npos) << c.out;
}

TEST_F(CliTest, LibFfmIsNotLibSvm) {
  if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  RunResult r = RunCtrain("inspect --format libsvm " + kData + "/criteo_xlearn_small_train.libffm");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("criteo_xlearn_small_train.libffm:1:"), std::string::npos) << r.out;
}

TEST_F(CliTest, InspectReadsFifoAndStdinWithFormatDetection) {
  // Regression: detection used to reopen the input, losing the first bytes of a FIFO.
  ASSERT_EQ(RunCtrain("synth --rows 3000 --format libsvm --output " + P("s.libsvm")).exit_code, 0);
  ASSERT_EQ(RunCtrain("synth --rows 2000 --format tfrecord --compression gzip --output " + P("s.tfr")).exit_code, 0);
  ASSERT_EQ(::mkfifo(P("fifo").c_str(), 0600), 0);
  for (const auto& [file, records] : {std::pair{P("s.libsvm"), 3000}, std::pair{P("s.tfr"), 2000}}) {
    RunResult r = RunCtrain("inspect --json " + P("fifo") + " & cat " + file + " > " + P("fifo") + "; wait");
    std::string json_line = r.out.substr(0, r.out.find('\n'));
    auto j = nlohmann::json::parse(json_line);
    EXPECT_EQ(j["records"], records) << r.out;
    RunResult s = RunCtrain("inspect --json - < " + file);
    EXPECT_EQ(nlohmann::json::parse(s.out)["records"], records) << s.out;
  }
  // A SageMaker channel: pipe:<dir>/<channel> reads the FIFO <channel>_0, created after the reader starts.
  RunResult c = RunCtrain("inspect --json pipe:" + P("train") + " & sleep 0.3; mkfifo " + P("train_0") + "; cat " +
                          P("s.tfr") + " > " + P("train_0") + "; wait");
  EXPECT_EQ(nlohmann::json::parse(c.out.substr(0, c.out.find('\n')))["records"], 2000) << c.out;
  ASSERT_EQ(RunCtrain("convert -o " + P("c.libsvm") + " --output-format libsvm -i pipe:" + P("train") + " & cat " +
                      P("s.tfr") + " > " + P("train_0") + "; wait").exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(RunCtrain("inspect --json " + P("c.libsvm")).out)["records"], 2000);
}

TEST_F(CliTest, SynthIsDeterministic) {
  ASSERT_EQ(RunCtrain("synth --rows 300 --format libsvm --output " + P("a.libsvm")).exit_code, 0);
  ASSERT_EQ(RunCtrain("synth --rows 300 --format libsvm --output " + P("b.libsvm")).exit_code, 0);
  ASSERT_EQ(RunCtrain("synth --rows 300 --format libsvm --seed 7 --output " + P("c.libsvm")).exit_code, 0);
  EXPECT_EQ(Slurp(P("a.libsvm")), Slurp(P("b.libsvm")));
  EXPECT_NE(Slurp(P("a.libsvm")), Slurp(P("c.libsvm")));
  RunResult r = RunCtrain("inspect --json " + P("a.libsvm"));
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["records"], 300);
  EXPECT_EQ(j["fields_per_line"]["min"], 39);
}

TEST_F(CliTest, ConvertRoundTripsAreExact) {
  // libsvm -> tfrecord(gzip) -> libsvm is byte-exact for files ctrain writes,
  // and tfrecord -> libsvm -> tfrecord is byte-exact.
  ASSERT_EQ(RunCtrain("synth --rows 500 --format libsvm --output " + P("s.libsvm")).exit_code, 0);
  ASSERT_EQ(RunCtrain("convert -i " + P("s.libsvm") + " -o " + P("s.tfr") + " --output-format tfrecord --compression gzip")
                .exit_code, 0);
  ASSERT_EQ(RunCtrain("convert -i " + P("s.tfr") + " -o " + P("s2.libsvm") + " --output-format libsvm").exit_code, 0);
  EXPECT_EQ(Slurp(P("s.libsvm")), Slurp(P("s2.libsvm")));
  ASSERT_EQ(RunCtrain("convert -i " + P("s2.libsvm") + " -o " + P("s3.tfr") + " --output-format tfrecord").exit_code, 0);
  ASSERT_EQ(RunCtrain("convert -i " + P("s3.tfr") + " -o " + P("s4.libsvm") + " --output-format libsvm").exit_code, 0);
  ASSERT_EQ(RunCtrain("convert -i " + P("s4.libsvm") + " -o " + P("s5.tfr") + " --output-format tfrecord").exit_code, 0);
  EXPECT_EQ(Slurp(P("s3.tfr")), Slurp(P("s5.tfr")));
  EXPECT_EQ(Slurp(P("s.libsvm")), Slurp(P("s4.libsvm")));
}

TEST_F(CliTest, ConvertRealLibSvmKeepsEveryValue) {
  if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  const std::string src = kData + "/criteo_deepfm_va10k.libsvm";
  ASSERT_EQ(RunCtrain("convert -i " + src + " --id-base 1 -o " + P("a.tfr")).exit_code, 0);
  ASSERT_EQ(RunCtrain("convert -i " + P("a.tfr") + " -o " + P("b.libsvm") + " --output-format libsvm --output-id-base 1")
                .exit_code, 0);
  // Values are rewritten in shortest round-trip form (0.000063 -> 6.3e-05), so compare parsed numbers.
  std::ifstream x(src), y(P("b.libsvm"));
  std::string lx, ly;
  size_t lines = 0;
  while (std::getline(x, lx)) {
    ASSERT_TRUE(std::getline(y, ly));
    std::istringstream sx(lx), sy(ly);
    std::string tx, ty;
    while (sx >> tx) {
      ASSERT_TRUE(sy >> ty) << "line " << lines + 1;
      auto cx = tx.find(':'), cy = ty.find(':');
      if (cx == std::string::npos) {
        EXPECT_EQ(std::stof(tx), std::stof(ty));
        continue;
      }
      EXPECT_EQ(tx.substr(0, cx), ty.substr(0, cy)) << "line " << lines + 1;
      EXPECT_EQ(std::stof(tx.substr(cx + 1)), std::stof(ty.substr(cy + 1))) << "line " << lines + 1;
    }
    ++lines;
  }
  EXPECT_EQ(lines, 10040u);
  EXPECT_FALSE(std::getline(y, ly));
}

TEST_F(CliTest, ConvertCriteoTsvMatchesPaddleRecTFRecord) {
  if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  // Both files hold the same 100 rows; hashing the TSV gives 100 seed-schema records with labels 71/29.
  ASSERT_EQ(RunCtrain("convert -i " + kData + "/criteo_raw_paddlerec_part-0.tsv -o " + P("c.libsvm") +
                " --output-format libsvm --hash-buckets 1000")
                .exit_code, 0);
  RunResult r = RunCtrain("inspect --json " + P("c.libsvm"));
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["records"], 100);
  EXPECT_EQ(j["labels"]["0"], 71);
  EXPECT_EQ(j["labels"]["1"], 29);
  EXPECT_LT(j["id_range"]["max"].get<int64_t>(), 1000);
}

TEST_F(CliTest, BadUsageAndMissingFiles) {
  EXPECT_EQ(RunCtrain("inspect " + P("nope.tfrecord")).exit_code, 1);
  EXPECT_NE(RunCtrain("inspect " + P("nope.tfrecord")).out.find("NotFound"), std::string::npos);
  EXPECT_EQ(RunCtrain("frobnicate").exit_code, 2);
  EXPECT_EQ(RunCtrain("convert -i x").exit_code, 2);  // --output is required
  EXPECT_EQ(RunCtrain("synth --rows 5 --id-base -3 -o " + P("neg.libsvm") + " --format libsvm").exit_code, 1);
  EXPECT_NE(RunCtrain("synth --rows 5 --format csv -o " + P("x.csv")).out.find("libsvm or tfrecord"), std::string::npos);
  EXPECT_EQ(RunCtrain("inspect --help").exit_code, 0);
}

}  // namespace
