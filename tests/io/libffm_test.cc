#include "ctrain/io/libffm.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace ctrain::io {
namespace {

StatusOr<std::vector<std::pair<float, std::vector<FfmTriple>>>> ReadAll(const std::string& text) {
  CTRAIN_ASSIGN_OR_RETURN(auto r, LibFfmReader::Open(NewMemoryFile("t.libffm", text)));
  std::vector<std::pair<float, std::vector<FfmTriple>>> rows;
  float label;
  const std::vector<FfmTriple>* t;
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, r->Next(&label, &t));
    if (!more) break;
    rows.emplace_back(label, *t);
  }
  return rows;
}

TEST(LibFfm, ParsesTriplesInFileOrderWithRepeats) {
  auto rows = ReadAll("1 17:3:0.5 16:2:1 17:9:2.5e-1\r\n\n# comment\n-1\t0:0:1\n");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].first, 1.f);
  ASSERT_EQ((*rows)[0].second.size(), 3u);
  EXPECT_EQ((*rows)[0].second[0].field, 17);
  EXPECT_EQ((*rows)[0].second[2].feature, 9);
  EXPECT_FLOAT_EQ((*rows)[0].second[2].value, 0.25f);
  EXPECT_EQ((*rows)[1].first, 0.f);
}

TEST(LibFfm, ErrorsNameFileLineAndColumn) {
  EXPECT_EQ(ReadAll("1 1:2\n").status().message(), "t.libffm:1:3: expected 'field:feature:value', found '1:2'");
  EXPECT_EQ(ReadAll("0 1:2:3\n2 1:2:3\n").status().message(), "t.libffm:2:1: bad label '2': expected 0, 1 or -1");
  EXPECT_EQ(ReadAll("1 a:2:3\n").status().message(),
            "t.libffm:1:3: bad field 'a': expected a non-negative integer");
  EXPECT_EQ(ReadAll("1 1:-2:3\n").status().message(),
            "t.libffm:1:5: bad feature '-2': expected a non-negative integer");
  EXPECT_EQ(ReadAll("1 1:2:nan\n").status().message(), "t.libffm:1:7: bad value 'nan': expected a finite number");
}

TEST(LibFfm, RealXLearnFiles) {
  const std::string dir = CTRAIN_SHARED_DATA_DIR;
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "shared data folder " << dir << " is absent";
  for (const auto& [name, zeros, ones] : {std::tuple{"criteo_xlearn_small_train.libffm", 152, 48},
                                          std::tuple{"criteo_xlearn_small_test.libffm", 154, 46}}) {
    auto text = ReadFileToString(dir + "/" + name);
    ASSERT_TRUE(text.ok());
    auto rows = ReadAll(*text);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    int counts[2] = {0, 0};
    for (const auto& [label, t] : *rows) {
      ++counts[label > 0.5f];
      for (const auto& x : t) {
        EXPECT_LE(x.field, 17);
        EXPECT_LE(x.feature, 9990);
      }
    }
    EXPECT_EQ(counts[0], zeros) << name;
    EXPECT_EQ(counts[1], ones) << name;
  }
}

}  // namespace
}  // namespace ctrain::io
