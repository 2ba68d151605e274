// --autotune keeps explicit thread flags fixed (AutotuneOptions::fixed_*):
// only the other settings are measured.
#include <gtest/gtest.h>

#include <set>

#include "ctrain/train/autotune.h"

namespace ctrain::train {
namespace {

TEST(AutotuneCandidatesTest, NothingFixedCoversTowersAndHogwild) {
  const auto c = AutotuneCandidates(4, false);
  // towers 1 (intra 1,2,4), 2 (1,2), 4 (1); hogwild 2 (1,2), 4 (1)
  EXPECT_EQ(c.size(), 9u);
}

TEST(AutotuneCandidatesTest, ExplicitIntraThreadsAreKept) {
  AutotuneOptions o;
  o.fixed_intra_op_threads = 1;
  const auto c = AutotuneCandidates(4, false, false, o);
  ASSERT_EQ(c.size(), 5u);  // towers 1, 2, 4 and hogwild 2, 4, each with 1 thread
  for (const ParallelOptions& p : c) EXPECT_EQ(p.intra_op_threads, 1);
  o.fixed_intra_op_threads = 3;  // not a power of two: still kept
  for (const ParallelOptions& p : AutotuneCandidates(4, false, false, o)) EXPECT_EQ(p.intra_op_threads, 3);
}

TEST(AutotuneCandidatesTest, ExplicitTowersOrHogwildFixTheKindOfLayout) {
  AutotuneOptions o;
  o.fixed_towers = 2;
  auto c = AutotuneCandidates(4, false, false, o);
  ASSERT_EQ(c.size(), 2u);  // towers 2 x intra {1, 2}; no hogwild
  for (const ParallelOptions& p : c) {
    EXPECT_EQ(p.towers, 2);
    EXPECT_EQ(p.hogwild, 0);
  }
  o = {};
  o.fixed_hogwild = 0;
  for (const ParallelOptions& p : AutotuneCandidates(4, false, false, o)) EXPECT_EQ(p.hogwild, 0);
  o.fixed_hogwild = 2;
  c = AutotuneCandidates(4, false, false, o);
  ASSERT_EQ(c.size(), 2u);  // hogwild 2 x intra {1, 2}
  for (const ParallelOptions& p : c) {
    EXPECT_EQ(p.hogwild, 2);
    EXPECT_EQ(p.towers, 1);
  }
  o.fixed_intra_op_threads = 1;
  c = AutotuneCandidates(4, false, false, o);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].hogwild, 2);
  EXPECT_EQ(c[0].intra_op_threads, 1);
}

}  // namespace
}  // namespace ctrain::train
