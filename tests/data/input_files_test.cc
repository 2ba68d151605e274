// Directories as users have them (issue #23): Spark/Hadoop output folders
// hold _SUCCESS markers, .crc checksums and a README; the file list skips
// names starting with '_' or '.' (Hadoop's FileInputFormat rule) and format
// detection refuses a text document instead of guessing a format for it.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "ctrain/data/example_reader.h"
#include "ctrain/data/file_list.h"
#include "testing/temp_dir.h"

namespace ctrain::data {
namespace {

void Write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

TEST(FileList, DirectorySkipsHadoopMarkersAndHiddenFiles) {
  const std::string dir = ctrain::testing::TestTempDir("ctrain_input_files", "spark_out");
  Write(dir + "/part-00001", "1 3:1\n");
  Write(dir + "/part-00000", "0 1:1\n");
  Write(dir + "/_SUCCESS", "");
  Write(dir + "/_committed_123", "{}");
  Write(dir + "/.part-00000.crc", "crc");
  FileListSkipped skipped;
  auto files = ExpandFileList({dir}, &skipped);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(*files, (std::vector<std::string>{dir + "/part-00000", dir + "/part-00001"}));
  EXPECT_EQ(skipped.paths,
            (std::vector<std::string>{dir + "/.part-00000.crc", dir + "/_SUCCESS", dir + "/_committed_123"}));
  // Without a skipped list the names are logged; the files are the same.
  auto logged = ExpandFileList({dir});
  ASSERT_TRUE(logged.ok());
  EXPECT_EQ(*logged, *files);
  // A named path or a glob is never filtered: the user asked for it.
  auto named = ExpandFileList({dir + "/_SUCCESS"});
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->size(), 1u);
  EXPECT_TRUE(IsHiddenInputName("_SUCCESS"));
  EXPECT_TRUE(IsHiddenInputName(".crc"));
  EXPECT_FALSE(IsHiddenInputName("part-0_1"));

  // A directory holding only markers has no data: NotFound naming what it skipped.
  const std::string empty = ctrain::testing::TestTempDir("ctrain_input_files", "only_markers");
  Write(empty + "/_SUCCESS", "");
  auto none = ExpandFileList({empty});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(), empty + ": directory holds no data files (skipped 1 whose names start with '_' "
                                             "or '.': _SUCCESS)");
}

// Prose is never detected as data: the error names the file and the line.
TEST(FormatDetection, TextDocumentsAreRefusedWithFileAndLine) {
  const std::string dir = ctrain::testing::TestTempDir("ctrain_input_files", "sniff");
  struct Case {
    std::string name, text;
    int line;
  };
  const std::vector<Case> prose = {
      {"README.md", "# Criteo day 0\n\nThis folder holds the data: day_0 split into parts.\n", 3},
      {"notes.txt", "See https://example.com/data for details\n", 1},
      {"list.md", "# Steps\n- download: wget the files\n", 2},
      {"numbered.md", "1. Download the data: wget\n", 1},
      {"csv_prose.txt", "Hello, world\n", 1},
      {"tsv_prose.txt", "name\tvalue\n", 1},
      {"words.txt", "just words here\n", 1},
  };
  for (const Case& c : prose) {
    Write(dir + "/" + c.name, c.text);
    auto r = SniffFile(dir + "/" + c.name);
    ASSERT_FALSE(r.ok()) << c.name << " sniffed as " << RecordFormatName(r->format);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    const std::string want = dir + "/" + c.name + ":" + std::to_string(c.line) + ": cannot detect the record format";
    EXPECT_EQ(r.status().message().substr(0, want.size()), want) << r.status().ToString();
    // The reader refuses it the same way (train, convert and inspect open through it).
    auto reader = OpenExampleReader(dir + "/" + c.name, {});
    ASSERT_FALSE(reader.ok());
    EXPECT_EQ(reader.status().message().substr(0, want.size()), want);
  }
  // Data in every text format is still detected, malformed first lines included
  // (their parsers then name the bad token).
  const std::vector<std::pair<std::string, RecordFormat>> data = {
      {"# a comment\n1 1:0.5 7:1\n", RecordFormat::kLibSvm},
      {"-1 qid:3 1:0.5\n", RecordFormat::kLibSvm},
      {"1:0.5 7:1\n", RecordFormat::kLibSvm},                         // unlabelled (predict)
      {"1 13:6.646e-0114:8.7 2:1\n", RecordFormat::kLibSvm},          // B27: glued pairs
      {"1 0:1:0.5 1:3:1\n", RecordFormat::kLibFfm},
      {"1\t5\t\t3\n", RecordFormat::kCriteoTsv},
      {"label\tI1\tI2\n", RecordFormat::kCriteoTsv},
      {"\t5\t\t3\n", RecordFormat::kCriteoTsv},                       // a missing label: the parser says so
      {"label,I1,I2\n1,2,3\n", RecordFormat::kCriteoCsv},
      {"1.0,260.0,,3\n", RecordFormat::kCriteoCsv},
      {"1\n", RecordFormat::kLibSvm},                                 // label only
  };
  int i = 0;
  for (const auto& [text, format] : data) {
    const std::string path = dir + "/d" + std::to_string(i++);
    Write(path, text);
    auto r = SniffFile(path);
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    EXPECT_EQ(r->format, format) << text;
  }
}

}  // namespace
}  // namespace ctrain::data
