#include "ctrain/data/batch.h"

#include <gtest/gtest.h>

#include <cstring>

namespace ctrain::data {
namespace {

Batch MakeFixed() {
  Batch b;
  b.field_size = 3;
  b.AppendRow(1.f, std::vector<int64_t>{1, 2, 3}, std::vector<float>{0.5f, 1.f, 1.f});
  b.AppendRow(0.f, std::vector<int64_t>{7, 2, 9}, std::vector<float>{2.5f, 1.f, -1.f});
  return b;
}

TEST(BatchTest, FixedRowsAreRowMajor) {
  Batch b = MakeFixed();
  ASSERT_TRUE(b.Validate().ok());
  EXPECT_EQ(b.size(), 2);
  EXPECT_EQ(b.ids[3], 7);
  EXPECT_EQ(b.row_ids(1)[2], 9);
  EXPECT_FLOAT_EQ(b.row_values(1)[0], 2.5f);
}

TEST(BatchTest, WireRoundTripFixed) {
  Batch b = MakeFixed();
  std::string wire = b.Serialize();
  EXPECT_EQ(wire.size(), 28u + 2 * 4 + 6 * 12);
  auto back = Batch::Deserialize(wire);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, b);
}

TEST(BatchTest, WireRoundTripVariable) {
  Batch b;
  b.field_size = 2;
  b.labels = {1.f, 0.f, 1.f};
  b.ids = {4, 5, 6};
  b.values = {1.f, 1.f, 0.25f};
  b.row_splits = {0, 2, 2, 3};
  ASSERT_TRUE(b.Validate().ok());
  EXPECT_EQ(b.row_ids(1).size(), 0u);
  auto back = Batch::Deserialize(b.Serialize());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, b);
}

TEST(BatchTest, DeserializeRejectsTruncationAndBadMagic) {
  std::string wire = MakeFixed().Serialize();
  auto t = Batch::Deserialize(std::string_view(wire).substr(0, wire.size() - 1));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(t.status().message().find("byte offset 28"), std::string_view::npos) << t.status().ToString();
  std::string bad = wire;
  bad[0] = 'X';
  EXPECT_EQ(Batch::Deserialize(bad).status().code(), StatusCode::kDataLoss);
  // A header that declares a huge batch must fail before allocating.
  std::string huge = wire;
  int64_t big = int64_t{1} << 60;
  std::memcpy(huge.data() + 8, &big, 8);
  EXPECT_EQ(Batch::Deserialize(huge).status().code(), StatusCode::kDataLoss);
}

TEST(BatchTest, ValidateCatchesShapeErrors) {
  Batch b = MakeFixed();
  b.values.pop_back();
  EXPECT_FALSE(b.Validate().ok());
}

}  // namespace
}  // namespace ctrain::data
