// Multi-hot batches: ragged fields (field_splits), wire format and validation.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/data/batch.h"

namespace ctrain::data {
namespace {

Batch TwoRows() {
  Batch b;
  b.field_size = 2;
  // Row 0: field 0 = {5, 6}, field 1 = {}; row 1: field 0 = {7}, field 1 = {8, 9, 5}.
  b.AppendMultiHotRow(1.0f, std::vector<int64_t>{5, 6}, std::vector<float>{0.5f, 0.5f}, std::vector<int32_t>{2, 0});
  b.AppendMultiHotRow(0.0f, std::vector<int64_t>{7, 8, 9, 5}, std::vector<float>{1, 1, 2, 3},
                      std::vector<int32_t>{1, 3});
  return b;
}

TEST(MultiHotBatch, LayoutAndRowViews) {
  const Batch b = TwoRows();
  ASSERT_TRUE(b.multi_hot());
  EXPECT_FALSE(b.variable_length());
  EXPECT_EQ(b.field_splits, (std::vector<int64_t>{0, 2, 2, 3, 6}));
  EXPECT_EQ(b.ids, (std::vector<int64_t>{5, 6, 7, 8, 9, 5}));
  ASSERT_TRUE(b.Validate().ok());
  EXPECT_EQ(std::vector<int64_t>(b.row_ids(1).begin(), b.row_ids(1).end()), (std::vector<int64_t>{7, 8, 9, 5}));
  EXPECT_EQ(b.row_values(0).size(), 2u);
}

TEST(MultiHotBatch, WireRoundTrip) {
  const Batch b = TwoRows();
  const std::string wire = b.Serialize();
  // header 28 + labels 2*4 + ids 6*8 + values 6*4 + splits 5*8
  EXPECT_EQ(wire.size(), 28u + 8 + 48 + 24 + 40);
  uint32_t flags = 0;
  std::memcpy(&flags, wire.data() + 4, 4);
  EXPECT_EQ(flags, 2u);
  auto back = Batch::Deserialize(wire);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, b);
  // Reusing a batch that was multi-hot for a one-hot payload drops the splits.
  Batch fixed;
  fixed.field_size = 2;
  fixed.AppendRow(1, std::vector<int64_t>{1, 2}, std::vector<float>{1, 1});
  Batch reused = *back;
  ASSERT_TRUE(Batch::DeserializeInto(fixed.Serialize(), &reused).ok());
  EXPECT_EQ(reused, fixed);
}

TEST(MultiHotBatch, DeserializeRejectsBadSplitsAndFlags) {
  std::string wire = TwoRows().Serialize();
  std::string cut = wire.substr(0, wire.size() - 8);
  EXPECT_EQ(Batch::Deserialize(cut).status().code(), StatusCode::kDataLoss);
  // Splits not monotone: field_splits[1] = 4 > field_splits[2] = 2.
  std::string bad = wire;
  const int64_t four = 4;
  std::memcpy(bad.data() + wire.size() - 40 + 8, &four, 8);
  auto r = Batch::Deserialize(bad);
  ASSERT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("field_splits not monotone at row 0 field 1"), std::string::npos)
      << r.status().ToString();
  std::string both = wire;
  const uint32_t three = 3;
  std::memcpy(both.data() + 4, &three, 4);
  EXPECT_EQ(Batch::Deserialize(both).status().code(), StatusCode::kDataLoss);
  // A huge F with a small buffer is refused before any allocation.
  std::string huge = wire;
  const int32_t big_f = 1 << 30;
  std::memcpy(huge.data() + 16, &big_f, 4);
  EXPECT_EQ(Batch::Deserialize(huge).status().code(), StatusCode::kDataLoss);
}

TEST(MultiHotBatch, ValidateNamesTheProblem) {
  Batch b = TwoRows();
  b.field_splits.back() = 5;
  Status s = b.Validate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("field_splits must have B*F+1 = 5 entries"), std::string::npos) << s.ToString();
  Batch c = TwoRows();
  c.row_splits = {0, 2, 6};
  EXPECT_NE(c.Validate().message().find("both row_splits and field_splits"), std::string::npos);
}

}  // namespace
}  // namespace ctrain::data
