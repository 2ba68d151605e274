// Append-only vocabulary extension (io/criteo_vocab_extend.h): the old ids never move, new categories get
// ids after the old ones in a deterministic order (shared/cases/trial3/02).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ctrain/io/criteo.h"
#include "ctrain/io/criteo_vocab_extend.h"

namespace ctrain::io {
namespace {

// A vocabulary built (min count `min`) from rows whose C1 and C2 cells are `rows[i]`.
CriteoVocabulary Built(const std::vector<std::pair<std::string, std::string>>& rows, int64_t min) {
  CriteoVocabulary v;
  for (const auto& [c1, c2] : rows) {
    std::string line = "0";
    for (int i = 0; i < kCriteoNumeric; ++i) line += '\t';
    line += '\t' + c1 + '\t' + c2;
    for (int j = 2; j < kCriteoCategorical; ++j) line += '\t';
    CriteoRow row;
    EXPECT_TRUE(ParseCriteoLine(line, '\t', &row).ok()) << line;
    v.Count(row);
  }
  EXPECT_TRUE(v.Build(min).ok());
  return v;
}

TEST(CriteoVocabExtend, OldIdsKeepTheirCategoriesNewOnesFollowInOrder) {
  // Day 0: C1 a(2) b(1); C2 x(1). Day 1: C1 c(3) b(2) d(1) a(1); C2 y(2) x(1).
  const CriteoVocabulary day0 = Built({{"a", "x"}, {"a", ""}, {"b", ""}}, 1);
  const CriteoVocabulary day1 =
      Built({{"c", "y"}, {"c", "y"}, {"c", "x"}, {"b", ""}, {"b", ""}, {"d", ""}, {"a", ""}}, 1);
  int64_t added = -1;
  auto ext = ExtendVocabulary(day0, day1, "ext", &added);
  ASSERT_TRUE(ext.ok()) << ext.status().ToString();
  // Every name of day 0 keeps its id; the text of day 0's map is the extended map's prefix.
  const std::string old_text = day0.FeatureMapText(0), new_text = ext->FeatureMapText(0);
  EXPECT_EQ(new_text.substr(0, old_text.size()), old_text);
  EXPECT_EQ(ext->Lookup(0, "a"), day0.Lookup(0, "a"));
  EXPECT_EQ(ext->Lookup(0, "b"), day0.Lookup(0, "b"));
  EXPECT_EQ(ext->Lookup(1, "x"), day0.Lookup(1, "x"));
  EXPECT_EQ(ext->unk_id(5), day0.unk_id(5));
  // New: C1's c (count 3) then d (1), then C2's y: ids from day0.size() on.
  EXPECT_EQ(added, 3);
  EXPECT_EQ(ext->size(), day0.size() + 3);
  EXPECT_EQ(ext->Lookup(0, "c"), day0.size());
  EXPECT_EQ(ext->Lookup(0, "d"), day0.size() + 1);
  EXPECT_EQ(ext->Lookup(1, "y"), day0.size() + 2);
  EXPECT_EQ(new_text.substr(old_text.size()), "C1|c " + std::to_string(day0.size()) + "\nC1|d " +
                                                   std::to_string(day0.size() + 1) + "\nC2|y " +
                                                   std::to_string(day0.size() + 2) + "\n");
  EXPECT_EQ(VocabularyEntries(*ext), VocabularyEntries(day0) + 3);
  // One entry per line: 13 numeric, 26 <unk>, C1 a b, C2 x "", and the missing cell "" of C3..C26.
  EXPECT_EQ(VocabularyEntries(day0), 13 + 26 + 2 + 2 + 24);
  EXPECT_EQ(VocabularyEntries(day0), static_cast<int64_t>(std::count(old_text.begin(), old_text.end(), '\n')));
  // Deterministic: the same inputs give the same map.
  auto again = ExtendVocabulary(day0, day1, "again", nullptr);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->FeatureMapText(0), new_text);
  // A rebuild from day 0 + day 1 renumbers day 0's categories (what the extension avoids).
  const CriteoVocabulary rebuilt = Built({{"a", "x"}, {"a", ""}, {"b", ""}, {"c", "y"}, {"c", "y"}, {"c", "x"},
                                          {"b", ""}, {"b", ""}, {"d", ""}, {"a", ""}}, 1);
  // C1 gains c and d, so every id after C1's moves: C2's x is renumbered and day 0's map is no prefix.
  EXPECT_NE(rebuilt.Lookup(1, "x"), day0.Lookup(1, "x"));
  EXPECT_NE(rebuilt.FeatureMapText(0).substr(0, old_text.size()), old_text);
}

TEST(CriteoVocabExtend, TheMinCountOfTheNewInputDecidesWhichNewCategoriesGetAnId) {
  const CriteoVocabulary day0 = Built({{"a", ""}}, 1);
  const CriteoVocabulary day1 = Built({{"c", ""}, {"c", ""}, {"d", ""}, {"a", ""}}, 2);  // d seen once: <unk>
  int64_t added = 0;
  auto ext = ExtendVocabulary(day0, day1, "ext", &added);
  ASSERT_TRUE(ext.ok());
  EXPECT_EQ(added, 1);
  EXPECT_EQ(ext->Lookup(0, "c"), day0.size());
  EXPECT_EQ(ext->Lookup(0, "d"), ext->unk_id(0));
  EXPECT_EQ(ext->Lookup(0, "a"), day0.Lookup(0, "a"));  // kept though day 1 saw it fewer than 2 times
  // Nothing new: the same map.
  auto same = ExtendVocabulary(day0, Built({{"a", ""}}, 1), "same", &added);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(added, 0);
  EXPECT_EQ(same->FeatureMapText(0), day0.FeatureMapText(0));
}

}  // namespace
}  // namespace ctrain::io
