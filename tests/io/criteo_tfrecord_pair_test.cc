// The PaddleRec pair in ../shared/data: criteo_paddlerec_wd.tfrecord was written by
// PaddleRec's tfrecord_writer.py from criteo_raw_paddlerec_part-0.tsv. Our TSV reader
// and our TFRecord + tf.train.Example readers must agree on it record by record:
// label, the 13 dense values (empty -> 0.0) and the 26 category strings (empty -> "").
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ctrain/io/criteo.h"
#include "ctrain/io/example.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::io {
namespace {

TEST(CriteoTFRecordPair, PaddleRecTsvMatchesItsTFRecordRecordByRecord) {
  const std::string dir = CTRAIN_SHARED_DATA_DIR;
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "shared data folder " << dir << " is absent";
  auto tsv = CriteoReader::Open(dir + "/criteo_raw_paddlerec_part-0.tsv");
  ASSERT_TRUE(tsv.ok()) << tsv.status().ToString();
  auto tfr = TFRecordReader::Open(dir + "/criteo_paddlerec_wd.tfrecord");
  ASSERT_TRUE(tfr.ok()) << tfr.status().ToString();
  auto parser = ExampleParser::Create({{"label", FeatureKind::kInt64, false, 1, std::nullopt},
                                       {"dense_feature", FeatureKind::kFloat, false, 13, std::nullopt},
                                       {"sparse_feature", FeatureKind::kBytes, false, 26, std::nullopt}});
  ASSERT_TRUE(parser.ok()) << parser.status().ToString();
  CriteoRow row;
  std::string_view rec;
  std::vector<ParsedFeature> f;
  int records = 0, empty_dense = 0, empty_sparse = 0;
  for (;;) {
    auto more_tsv = (*tsv)->Next(&row);
    auto more_tfr = (*tfr)->Next(&rec);
    ASSERT_TRUE(more_tsv.ok()) << more_tsv.status().ToString();
    ASSERT_TRUE(more_tfr.ok()) << more_tfr.status().ToString();
    ASSERT_EQ(*more_tsv, *more_tfr) << "files end at different records (" << records << ")";
    if (!*more_tsv) break;
    ASSERT_TRUE(parser->Parse(rec, &f).ok()) << "record " << records;
    EXPECT_EQ(static_cast<float>(f[0].int64s[0]), row.label) << "record " << records;
    for (int i = 0; i < kCriteoNumeric; ++i) {
      EXPECT_EQ(f[1].floats[i], static_cast<float>(row.numeric[i])) << "record " << records << " I" << i + 1;
      empty_dense += !row.has_numeric(i);
    }
    for (int j = 0; j < kCriteoCategorical; ++j) {
      EXPECT_EQ(f[2].bytes[j], row.categorical[j]) << "record " << records << " C" << j + 1;
      empty_sparse += !row.has_categorical(j);
    }
    ++records;
  }
  EXPECT_EQ(records, 100);
  EXPECT_EQ(empty_dense, 257);   // SOURCES.md: 257 empty integer cells
  EXPECT_EQ(empty_sparse, 300);  // and 300 empty categorical cells
}

}  // namespace
}  // namespace ctrain::io
