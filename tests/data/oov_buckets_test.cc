// --oov bucket in the data layer (data::IdRange, ExampleReaderOptions::oov_buckets): an id at or above id_limit
// in field f reads id_limit + f, counted by the reader (ExampleReader::oov_ids) and by the pipeline
// (PipelineStats::oov_ids); negative ids and ids below the id base stay errors naming the record; without it the
// first such id is the located error that names the way out.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "ctrain/data/example_reader.h"
#include "ctrain/data/pipeline.h"
#include "testing/temp_dir.h"

namespace ctrain::data {
namespace {

TEST(IdRange, BucketsReadEachFieldsOwnRowAndCountThem) {
  const IdRange r{10, 0, false, true};
  int64_t ids[4] = {3, 10, 9, 12345};
  uint64_t oov = 0;
  ASSERT_TRUE(r.Apply(ids, 4, &oov, [] { return std::string("f:1"); }).ok());
  EXPECT_EQ(std::vector<int64_t>(ids, ids + 4), (std::vector<int64_t>{3, 11, 9, 13}));
  EXPECT_EQ(oov, 2u);
  // A negative id is still an error, named by its field (not by an earlier field's mapped id).
  int64_t neg[3] = {50, -1, 2};
  const Status s = r.Apply(neg, 3, &oov, [] { return std::string("f:2"); });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "f:2: field 2 of 3: feature id -1 (as written) is outside [0, 10): ids must not be negative");
  // Below the id base, too.
  const IdRange based{10, 1, false, true};
  int64_t below[2] = {-1, 4};  // written 0 with id base 1
  const Status b = based.Apply(below, 2, &oov, [] { return std::string("f:3"); });
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.message().find("the file's ids start below --id-base 1"), std::string::npos) << b.ToString();
  // Without buckets an id at or above the limit is the located error; where() is called only then.
  const IdRange strict{10, 0, false, false};
  int calls = 0;
  int64_t fine[2] = {0, 9};
  EXPECT_TRUE(strict.Apply(fine, 2, &oov, [&] { return ++calls, std::string(); }).ok());
  EXPECT_EQ(calls, 0);
  int64_t big[2] = {0, 11};
  const Status e = strict.Apply(big, 2, &oov, [&] { return ++calls, std::string("f:4"); });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(e.message(), "f:4: field 2 of 2: feature id 11 (as written) is outside [0, 10): increase --feature-size, "
                         "or pass --oov bucket to read ids beyond it as their field's out-of-vocabulary row");
}

class OovBucketsFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ctrain::testing::TestTempDir("oov_buckets", "file") + "/in.libsvm";
    std::ofstream f(path_);
    // F = 3, vocabulary [0, 10): 4 ids beyond it over 6 rows.
    f << "1 0:1 5:1 9:1\n0 10:1 5:1 9:1\n1 0:1 77:1 9:1\n0 1:1 2:1 3:1\n1 0:1 5:1 99:1\n0 40:1 2:1 3:1\n";
  }
  ExampleReaderOptions Options(bool buckets) const {
    ExampleReaderOptions o;
    o.format = RecordFormat::kLibSvm;
    o.field_size = 3;
    o.feature_size = 10;
    o.id_limit = 10;
    o.oov_buckets = buckets;
    return o;
  }
  std::string path_;
};

TEST_F(OovBucketsFile, TheReaderMapsAndCounts) {
  auto r = OpenExampleReader(path_, Options(true));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<int64_t> all;
  float label, values[3];
  int64_t ids[3];
  while (*(*r)->Next(&label, ids, values)) all.insert(all.end(), ids, ids + 3);
  EXPECT_EQ(all, (std::vector<int64_t>{0, 5, 9, 10, 5, 9, 0, 11, 9, 1, 2, 3, 0, 5, 12, 10, 2, 3}));
  EXPECT_EQ((*r)->oov_ids(), 4u);

  auto strict = OpenExampleReader(path_, Options(false));
  ASSERT_TRUE(strict.ok());
  ASSERT_TRUE(*(*strict)->Next(&label, ids, values));
  const StatusOr<bool> e = (*strict)->Next(&label, ids, values);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find(path_ + ":2: field 1 of 3: feature id 10"), std::string::npos)
      << e.status().ToString();
}

TEST_F(OovBucketsFile, ThePipelineMapsAndCountsEveryPass) {
  PipelineOptions p;
  p.print_warnings = false;
  p.batch_size = 4;
  p.epochs = 2;
  p.num_parallel_calls = 2;
  auto pipe = Pipeline::Create({path_}, Options(true), p);
  ASSERT_TRUE(pipe.ok()) << pipe.status().ToString();
  Batch b;
  int64_t max_id = 0, rows = 0;
  for (;;) {
    StatusOr<bool> more = (*pipe)->Next(&b);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    for (int64_t id : b.ids) max_id = std::max(max_id, id);
    rows += b.size();
  }
  EXPECT_EQ(rows, 12);
  EXPECT_EQ(max_id, 12);  // 99 in field 3 -> row 10 + 2
  EXPECT_EQ((*pipe)->stats().oov_ids, 8u);
  EXPECT_NE((*pipe)->stats().ToJson().find("\"oov_ids\":8"), std::string::npos);
}

}  // namespace
}  // namespace ctrain::data
