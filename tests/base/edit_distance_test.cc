#include "ctrain/base/edit_distance.h"

#include <gtest/gtest.h>

namespace ctrain {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("abc", ""), 3u);
  EXPECT_EQ(EditDistance("learning_rate", "learning_rate"), 0u);
  EXPECT_EQ(EditDistance("lerning_rate", "learning_rate"), 1u);  // one insertion
  EXPECT_EQ(EditDistance("trian", "train"), 2u);                 // a swap is two substitutions
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

}  // namespace
}  // namespace ctrain
