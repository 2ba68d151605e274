// End-to-end regression tests of issue #7's reader cases on the real binary
// (build/ctrain): B15, B27, B35, B37, trial/10's inspect findings, convert of
// an empty input, inspect of directories/globs/checkpoints and per-field stats.
// Inputs: tests/cases/<case>/ (small synthetic files), files written by the
// tests, and ../shared/cases for the Criteo-derived B15 truncated_tail.tsv.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using namespace ctrain::testing;
using nlohmann::json;

RunResult Ctrain(const std::string& args) { return RunCtrain(args); }


class ReadersCli : public ScratchDirTest {
 protected:
  ReadersCli() : ScratchDirTest("ctrain_readers_cli") {}
};

// A Criteo row of `cells` tab-separated cells ("1", then "1"s and hex).
std::string CriteoRow(int cells) {
  std::string s = "1";
  for (int c = 1; c < cells; ++c) s += c <= 13 ? "\t1" : "\t68fd1e64";
  return s;
}

// B15: rows with the wrong number of cells are located errors, in inspect,
// convert and train, TSV and CSV.
TEST_F(ReadersCli, B15ShortCriteoRowsAreLocatedErrors) {
  Write("short39.tsv", CriteoRow(39) + "\n");
  Write("two_cells.tsv", "1\t5\n");
  Write("ok_then_short.csv", "label,I1\n" + [] {
    std::string r = CriteoRow(40);
    for (char& c : r) c = c == '\t' ? ',' : c;
    return r;
  }() + "\n1,2,3\n");
  RunResult r = Ctrain("inspect --json " + P("short39.tsv"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(P("short39.tsv") + ":1: expected 40 cells, got 39 (39 cells is the layout of Criteo's "
                                          "unlabelled test.txt"),
            std::string::npos)
      << r.out;
  r = Ctrain("inspect " + P("two_cells.tsv"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(P("two_cells.tsv") + ":1: expected 40 cells, got 2 "), std::string::npos) << r.out;
  r = Ctrain("convert -i " + P("ok_then_short.csv") + " -o " + P("out.tfr"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(P("ok_then_short.csv") + ":3: expected 40 cells, got 3 "), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(P("out.tfr")));
  r = Ctrain("train --train " + P("two_cells.tsv") + " --progress none --model-dir " + P("m"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(P("two_cells.tsv") + ":1: expected 40 cells, got 2 "), std::string::npos) << r.out;

  // The Criteo-derived torn tail is read from ../shared (never copied here).
  const std::string torn = kSharedCases + "/B15/truncated_tail.tsv";
  if (!fs::exists(torn)) GTEST_SKIP() << "shared case " << torn << " is absent";
  r = Ctrain("inspect --json " + torn);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(torn + ":50: expected 40 cells, got 28 "), std::string::npos) << r.out;
}

// B27: a glued token is a located LibSVM error in convert and train, not libFFM.
TEST_F(ReadersCli, B27GluedPairsAreALocatedLibSvmError) {
  const std::string in = kCases + "/B27/glued.libsvm";
  const std::string want = in + ":1:3: bad value '6.646450757980346680e-0114:8.74606966972...' for id 13: token "
                                "holds two ':'; missing space between two 'id:value' pairs?";
  RunResult r = Ctrain("convert -i " + in + " -o - --output-format libsvm --field-size 3");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("libFFM (field:feature:value) has no fixed"), std::string::npos) << r.out;
  r = Ctrain("train --train " + in + " --field-size 3 --feature-size 100 --progress none --model-dir " + P("m"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
  r = Ctrain("inspect " + in);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
}

// B35: a small zlib TFRecord with a bad Adler-32 names the zlib fault under
// auto and under --format tfrecord.
TEST_F(ReadersCli, B35BadAdlerIsNamedAsZlibFault) {
  const std::string in = kCases + "/B35/bad_adler.tfrecord.zz";
  const std::string want = in + ": corrupt zlib stream near compressed byte offset 92: incorrect data check";
  for (const char* flags : {"", "--format tfrecord", "--compression zlib", "--format tfrecord --compression zlib"}) {
    RunResult r = Ctrain(std::string("inspect ") + flags + " " + in);
    EXPECT_NE(r.exit_code, 0) << flags;
    EXPECT_NE(r.out.find(want), std::string::npos) << flags << ": " << r.out;
    EXPECT_EQ(r.out.find("length crc mismatch"), std::string::npos) << flags << ": " << r.out;
  }
  RunResult r = Ctrain("inspect --compression none " + in);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("compression mismatch: requested none, file looks like zlib"), std::string::npos) << r.out;
}

// B37: convert refuses ids its LibSVM reader cannot represent, names the
// input record, and leaves no output; TFRecord output keeps them.
TEST_F(ReadersCli, B37NegativeIdIsRefusedByTheLibSvmWriter) {
  const std::string in = kCases + "/B37/neg_id.tfr";
  RunResult r = Ctrain("convert -i " + in + " -o " + P("b37.libsvm") + " --output-format libsvm --field-size 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("InvalidArgument: " + in + ": record 1 at offset 71: field 1: id -1 is negative"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(P("b37.libsvm")));
  r = Ctrain("convert -i " + in + " -o " + P("b37.libsvm") + " --output-format libsvm --field-size 1 --output-id-base 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("field 1: id -1 is negative"), std::string::npos) << r.out;
  r = Ctrain("convert -i " + in + " -o " + P("b37.tfr") + " --field-size 1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = Ctrain("inspect --json " + P("b37.tfr"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(json::parse(r.out)["records"], 3);
}

// A torn tail (no final newline) is visible in inspect and convert.
TEST_F(ReadersCli, TornTailIsVisible) {
  Write("torn.libsvm", "1 1:1 2:0.5\n0 1:1 2:0.2");
  RunResult r = Ctrain("inspect --json " + P("torn.libsvm"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_TRUE(j["last_line_unterminated"].get<bool>());
  EXPECT_EQ(j["warnings"].back(),
            "the last line has no final newline: the file may be cut (a torn tail); its last record was read as "
            "written");
  r = Ctrain("convert -i " + P("torn.libsvm") + " -o " + P("t.tfr") + " --field-size 2");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("unterminated_last_line=1"), std::string::npos) << r.out;
  Write("torn2.libsvm", "1 1:1 2:0.5\n0 1:1 2:");
  r = Ctrain("inspect " + P("torn2.libsvm"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(P("torn2.libsvm") + ":2:9: bad value '' for id 2; it is the last line and has no final "
                                           "newline: the file looks cut (a torn tail)"),
            std::string::npos)
      << r.out;
}

// trial/10 and item 6: empty inputs.
TEST_F(ReadersCli, EmptyInputs) {
  Write("empty.libsvm", "");
  RunResult r = Ctrain("inspect " + P("empty.libsvm"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, P("empty.libsvm") + ": format=empty compression=none records=0\n");
  r = Ctrain("inspect --json - < /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["format"], "empty");
  EXPECT_EQ(j["records"], 0);
  r = Ctrain("convert -i " + P("empty.libsvm") + " -o " + P("e.tfr"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(P("empty.libsvm") + ": empty input: no bytes; nothing written to " + P("e.tfr")),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(P("e.tfr")));
  Write("comments.libsvm", "# only a comment\n\n");
  r = Ctrain("convert -i - -o " + P("e.tfr") + " < " + P("comments.libsvm"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("-: empty input: no records (libsvm; skipped: blank_lines=1 comment_lines=1"),
            std::string::npos)
      << r.out;
}

// inspect expands directories and globs as train does, and reads checkpoints.
TEST_F(ReadersCli, InspectDirectoriesGlobsAndCheckpoints) {
  fs::create_directories(P("d"));
  Write("d/a.libsvm", "1 1:1 2:0.5\n0 3:1 2:0.25\n");
  Write("d/b.libsvm", "1 1:1 4:1\n");
  RunResult r = Ctrain("inspect " + P("d"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(P("d/a.libsvm") + ": format=libsvm compression=none records=2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(P("d/b.libsvm") + ": format=libsvm compression=none records=1"), std::string::npos) << r.out;
  r = Ctrain("inspect '" + P("d/*.libsvm") + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(P("d/b.libsvm") + ": format=libsvm"), std::string::npos) << r.out;
  r = Ctrain("inspect '" + P("d/*.nothing") + "'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("glob matched no files"), std::string::npos) << r.out;

  r = Ctrain("train --train " + P("d/a.libsvm") + " --field-size 2 --feature-size 8 --deep-layers 4 --embedding-size 2 "
          "--progress none --model-dir " + P("m"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const std::string& target : {P("m"), P("m") + "/ckpt-1.bin"}) {
    r = Ctrain("inspect --json " + target);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    json c = json::parse(r.out);
    EXPECT_EQ(c["format"], "checkpoint");
    EXPECT_EQ(c["file"], P("m") + "/ckpt-1.bin");
    EXPECT_EQ(c["step"], 1);
    EXPECT_TRUE(c["meta"].is_object());
    bool found = false;
    for (const auto& t : c["tensors"]) {
      if (t["name"] == "embeddings/V") {
        found = true;
        EXPECT_EQ(t["dtype"], "f32");
        EXPECT_EQ(t["shape"], json::array({8, 2}));
      }
    }
    EXPECT_TRUE(found) << r.out;
  }
  r = Ctrain("inspect " + P("m") + "/ckpt-1.bin");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind(P("m") + "/ckpt-1.bin: format=checkpoint step=1 tensors=", 0), 0u) << r.out;
}

// B34 / item 4: inspect reports per-field value ranges and distinct ids, and
// names unscaled values and constant-id fields carrying codes.
TEST_F(ReadersCli, InspectFieldRangesDistinctIdsAndWarnings) {
  std::string s;
  for (int i = 0; i < 50; ++i) {
    // field 1: one-hot ids 10..14, value 1; field 2: raw counts up to 4.7e8 on id 2;
    // field 3: id 3 always, small integer codes 0..6 as values; field 4: scaled floats.
    s += std::to_string(i % 2) + " " + std::to_string(10 + i % 5) + ":1 2:" + std::to_string(i * 9400000) +
         " 3:" + std::to_string(i % 7) + " 4:0." + std::to_string(i % 9 + 1) + "\n";
  }
  Write("b34.libsvm", s);
  RunResult r = Ctrain("inspect --json " + P("b34.libsvm"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  ASSERT_EQ(j["fields"].size(), 4u);
  EXPECT_EQ(j["fields"][0]["distinct_ids"], 5);
  EXPECT_EQ(j["fields"][0]["value_min"], 1.0);
  EXPECT_EQ(j["fields"][0]["value_max"], 1.0);
  EXPECT_EQ(j["fields"][1]["value_max"], 460600000.0);
  EXPECT_EQ(j["fields"][1]["distinct_ids"], 1);
  EXPECT_EQ(j["fields"][2]["distinct_values"], 7);
  EXPECT_TRUE(j["fields"][2]["distinct_ids_exact"].get<bool>());
  EXPECT_NEAR(j["fields"][3]["value_max"].get<double>(), 0.9, 1e-6);
  ASSERT_EQ(j["warnings"].size(), 2u) << r.out;
  EXPECT_EQ(j["warnings"][0].get<std::string>().rfind("field 2: values range 0..4.606e+08: unscaled?", 0), 0u)
      << r.out;
  EXPECT_EQ(j["warnings"][1].get<std::string>().rfind(
                "field 3: the id never varies (always 3) while the value does (7 distinct integers, 0..6)", 0),
            0u)
      << r.out;
  r = Ctrain("inspect " + P("b34.libsvm"));
  EXPECT_NE(r.out.find("  warning: field 2: values range 0..4.606e+08: unscaled?"), std::string::npos) << r.out;
}

// A text stream without newlines ends in a located error at --max-line-bytes
// on every path (inspect file and stdin, convert, train stream and memory),
// never in unbounded growth (it was a bad_alloc on /dev/zero).
TEST_F(ReadersCli, OverlongLinesAreLocatedErrors) {
  const std::string tail = ": line longer than 4096 bytes (no newline within 4096 bytes";
  RunResult r = Ctrain("inspect --format libsvm --max-line-bytes 4096 /dev/zero");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("/dev/zero:1" + tail), std::string::npos) << r.out;
  r = Shell("head -c 3000000 /dev/zero | tr '\\0' a | " + kCtrain + " inspect --max-line-bytes 4096 -");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("<stdin>:1" + tail), std::string::npos) << r.out;
  std::string row = "1";
  for (int c = 1; c < 40; ++c) row += c <= 13 ? "\t1" : "\t68fd1e64";
  Write("long.tsv", row + "\n" + std::string(5000, 'x') + "\n");
  r = Ctrain("convert --format criteo-tsv --max-line-bytes 4096 -i " + P("long.tsv") + " -o " + P("o.tfr"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(P("long.tsv") + ":2" + tail), std::string::npos) << r.out;
  for (const char* mode : {"stream", "memory"}) {
    r = Ctrain(std::string("train --input-mode ") + mode + " --train /dev/zero --format libsvm --max-line-bytes 4096 "
               "--field-size 3 --feature-size 10 --embedding-size 4 --deep-layers 8 --epochs 1 --model-dir " + P("m"));
    EXPECT_EQ(r.exit_code, 1) << mode;
    EXPECT_NE(r.out.find("/dev/zero:1" + tail), std::string::npos) << mode << r.out;
  }
  r = Ctrain("inspect --max-line-bytes 0 /dev/zero");
  EXPECT_NE(r.out.find("--max-line-bytes must be in [1, 2^40], got 0"), std::string::npos) << r.out;
}

// An explicit --format is honoured on every path, also when a control byte
// makes the file look binary; under auto a stray byte in a text file is named
// with its file:line:col by the format's parser, not "cannot detect".
TEST_F(ReadersCli, StrayControlBytesAreLocatedWithAndWithoutFormat) {
  Write("t.libsvm", std::string("1 0:0.5 1:1\x01 2:1\n0 0:1 1:2 2:1\n"));
  const std::string model = " --field-size 3 --feature-size 10 --embedding-size 4 --deep-layers 8 --model-dir " + P("m");
  const std::string want = P("t.libsvm") + ":1:11: bad value '1\\x01' for id 1";
  for (const std::string fmt : {"--format libsvm", ""}) {
    for (const std::string& cmd : std::vector<std::string>{"train --input-mode stream --train", "train --input-mode memory --train",
                                  "inspect", "convert -o " + P("o.tfr") + " -i"}) {
      RunResult r = Ctrain(cmd + " " + P("t.libsvm") + " " + fmt + (cmd[0] == 't' ? model : ""));
      EXPECT_EQ(r.exit_code, 1) << cmd << fmt;
      EXPECT_NE(r.out.find(want), std::string::npos) << cmd << " " << fmt << "\n" << r.out;
    }
  }
  std::string row = "1";
  for (int c = 1; c < 40; ++c) row += c <= 13 ? "\t1" : "\t68fd1e64";
  std::string bad = row;
  bad[bad.find("68fd") + 3] = '\0';
  Write("c.tsv", row + "\n" + bad + "\n");
  for (const std::string fmt : {"--format criteo-tsv", ""}) {
    RunResult r = Ctrain("train --train " + P("c.tsv") + " " + fmt +
                         " --feature-size 1000 --embedding-size 4 --deep-layers 8 --model-dir " + P("m"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.out.find(P("c.tsv") + ":2:32: C1: control byte '\\x00' in category '68f\\x001e64'"), std::string::npos)
        << fmt << r.out;
  }
  // A binary file is still not text.
  Write("bin.dat", std::string("\x01\x02\x03\x04\x05 binary\x00\x00\x00", 16));
  RunResult r = Ctrain("inspect " + P("bin.dat"));
  EXPECT_NE(r.out.find("cannot detect the record format"), std::string::npos) << r.out;
}

// convert/inspect: a numeric flag out of its range is an error naming the flag
// and the range; 0 or a negative value never silently means "default" or "off"
// (--hash-buckets 0 hashed into 117581 buckets, --vocab-min-count 0 hashed).
TEST_F(ReadersCli, ConvertAndInspectRefuseOutOfRangeNumbers) {
  Write("a.libsvm", "1 0:1 1:1\n0 0:2 1:1\n");
  const std::string conv = "convert -i " + P("a.libsvm") + " -o " + P("o.tfr") + " ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--hash-buckets 0", "--hash-buckets must be in [14, 2^40] (13 numeric ids + at least one bucket), got 0"},
      {"--hash-buckets -5", "--hash-buckets must be in [14, 2^40] (13 numeric ids + at least one bucket), got -5"},
      {"--hash-buckets 13", "--hash-buckets must be in [14, 2^40]"},
      {"--hash-buckets 1099511627777", "--hash-buckets must be in [14, 2^40]"},
      {"--vocab-min-count 0", "--vocab-min-count must be >= 1 (categories seen fewer times map to <unk>), got 0"},
      {"--vocab-min-count -1", "--vocab-min-count must be >= 1"},
      {"--output-id-base -1", "--output-id-base must be >= 0, got -1"},
      {"--field-size 0", "--field-size must be in [1, 1048576], got 0"},
      {"--field-size 2000000", "--field-size must be in [1, 1048576], got 2000000"},
      {"--field-size 2 --id-base -1", "--id-base must be >= 0, got -1"},
      {"--field-size 2 --feature-size 0", "--feature-size must be >= 1, got 0"},
      {"--field-size 2 --max-line-bytes -3", "--max-line-bytes must be in [1, 2^40], got -3"},
  };
  for (const auto& [flags, want] : cases) {
    RunResult r = Ctrain(conv + flags);
    EXPECT_EQ(r.exit_code, 1) << flags;
    EXPECT_NE(r.out.find("ctrain: InvalidArgument: " + want), std::string::npos) << flags << "\n" << r.out;
    EXPECT_FALSE(fs::exists(P("o.tfr"))) << flags;
  }
  RunResult r = Ctrain("inspect --id-base -2 " + P("a.libsvm"));
  EXPECT_NE(r.out.find("--id-base must be >= 0, got -2"), std::string::npos) << r.out;
  // In range still works: the smallest hash table.
  std::string row = "1";
  for (int c = 1; c < 40; ++c) row += c <= 13 ? "\t1" : "\t68fd1e64";
  Write("c.tsv", row + "\n");
  r = Ctrain("convert --output-format libsvm --hash-buckets 14 -i " + P("c.tsv") + " -o " + P("c.libsvm"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(Slurp(P("c.libsvm")).find(" 13:1 "), std::string::npos);  // every category in the one bucket (id 13)
}

// Messages that name what was found: a UTF-8 BOM (not "bad label"), a file
// gzipped twice (not "does not inflate"), a Criteo integer that underflows
// (not "not finite"); on inspect, convert and both train input modes.
TEST_F(ReadersCli, BomDoubleCompressionAndUnderflowAreNamed) {
  std::string row = "1";
  for (int c = 1; c < 40; ++c) row += c <= 13 ? "\t1" : "\t68fd1e64";
  std::string under = row;
  under.replace(2, 1, "1e-400");  // I1
  Write("bom.libsvm", "\xEF\xBB\xBF" "1 0:1 1:1\n0 0:2 1:1\n");
  Write("bom.csv", "\xEF\xBB\xBFlabel,I1\n");
  Write("under.tsv", row + "\n" + under + "\n");
  ASSERT_EQ(Shell("printf '1 0:1 1:1\\n0 0:2 1:1\\n' | gzip | gzip > " + P("twice.libsvm.gz")).exit_code, 0);
  const std::string bom = ":1: file starts with a UTF-8 byte-order mark (bytes EF BB BF); remove it";
  const std::string twice =
      ": the gzip-decompressed bytes start like another gzip stream: compressed twice? (decompress it once";
  const std::string model = " --feature-size 1000 --embedding-size 4 --deep-layers 8 --model-dir " + P("m");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"inspect " + P("bom.libsvm"), P("bom.libsvm") + bom},
      {"inspect --format libsvm " + P("bom.libsvm"), P("bom.libsvm") + bom},
      {"inspect " + P("bom.csv"), P("bom.csv") + bom},
      {"train --input-mode stream --field-size 2 --train " + P("bom.libsvm") + model, P("bom.libsvm") + bom},
      {"train --input-mode memory --field-size 2 --train " + P("bom.libsvm") + model, P("bom.libsvm") + bom},
      {"inspect " + P("twice.libsvm.gz"), P("twice.libsvm.gz") + twice},
      {"inspect --format libsvm " + P("twice.libsvm.gz"), P("twice.libsvm.gz") + twice},
      {"convert -i " + P("twice.libsvm.gz") + " --field-size 2 -o " + P("o.tfr"), P("twice.libsvm.gz") + twice},
      {"train --field-size 2 --train " + P("twice.libsvm.gz") + model, P("twice.libsvm.gz") + twice},
      {"inspect " + P("under.tsv"),
       P("under.tsv") + ":2:3: I1: value '1e-400' is out of double range: it underflows (nonzero but smaller in "
                        "magnitude than 4.9e-324, the smallest double)"},
      {"train --input-mode stream --train " + P("under.tsv") + model, P("under.tsv") + ":2:3: I1: value '1e-400' is out of double range: it underflows"},
  };
  for (const auto& [cmd, want] : cases) {
    RunResult r = Ctrain(cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_NE(r.out.find("ctrain: InvalidArgument: " + want), std::string::npos) << cmd << "\n" << r.out;
  }
  // Once-gzipped still reads.
  ASSERT_EQ(Shell("printf '1 0:1 1:1\\n0 0:2 1:1\\n' | gzip > " + P("once.libsvm.gz")).exit_code, 0);
  RunResult r = Ctrain("inspect " + P("once.libsvm.gz"));
  EXPECT_NE(r.out.find("format=libsvm compression=gzip records=2"), std::string::npos) << r.out;
}

// convert -i expands globs and directories like train --train; -o - with a
// vocabulary needs --feature-map-out (it wrote "-.feature_map.txt" in the cwd).
TEST_F(ReadersCli, ConvertInputGlobsAndStdoutVocabulary) {
  fs::create_directories(P("gd"));
  Write("gd/a.libsvm", "1 0:1 1:1\n");
  Write("gd/b.libsvm", "0 0:2 1:1\n");
  Write("gd/.hidden", "junk\n");
  for (const std::string& in : {"'" + P("gd") + "/*.libsvm'", P("gd")}) {
    RunResult r = Ctrain("convert --field-size 2 --output-format libsvm -i " + in + " -o " + P("all.libsvm"));
    ASSERT_EQ(r.exit_code, 0) << in << r.out;
    EXPECT_EQ(Slurp(P("all.libsvm")), "1 0:1 1:1\n0 0:2 1:1\n") << in;
    EXPECT_NE(r.out.find("wrote 2 records"), std::string::npos) << r.out;
  }
  RunResult r = Ctrain("convert -i '" + P("gd") + "/*.nope' -o " + P("x.tfr"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(P("gd") + "/*.nope: glob matched no files"), std::string::npos) << r.out;

  std::string row = "1";
  for (int c = 1; c < 40; ++c) row += c <= 13 ? "\t1" : "\t68fd1e64";
  Write("c.tsv", row + "\n" + row + "\n");
  r = RunCtrain("convert -i " + P("c.tsv") + " -o - --vocab-min-count 2", P(""));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("--vocab-min-count with -o - (stdout) needs --feature-map-out PATH"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(P("-.feature_map.txt")));
  r = Shell(kCtrain + " convert -i " + P("c.tsv") + " -o - --output-format libsvm --vocab-min-count 2 "
            "--feature-map-out " + P("fm.txt") + " 2>/dev/null | wc -l");
  EXPECT_EQ(r.out, "2\n");
  EXPECT_TRUE(fs::exists(P("fm.txt")));
  EXPECT_FALSE(fs::exists(P("-.feature_map.txt")));
}

}  // namespace
