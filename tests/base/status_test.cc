#include "ctrain/base/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace ctrain {
namespace {

TEST(Status, OkIsDefaultAndCheap) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(sizeof(Status), sizeof(void*));
}

TEST(Status, ErrorsCarryCodeAndMessage) {
  Status s = DataLossError("tr.tfrecords: record 17 at offset 1234: corrupted record: data crc mismatch");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.ToString(), "DataLoss: tr.tfrecords: record 17 at offset 1234: corrupted record: data crc mismatch");
  EXPECT_EQ(static_cast<int>(StatusCode::kDataLoss), 15);  // canonical (absl/gRPC) numbering
  EXPECT_EQ(OutOfRangeError("x").code(), StatusCode::kOutOfRange);
  EXPECT_EQ(InvalidArgumentError("x").code(), StatusCode::kInvalidArgument);
}

TEST(Status, CopyWithContextAndUpdateKeepsFirstError) {
  Status a = InvalidArgumentError("bad label '2'");
  Status b = a;  // deep copy
  EXPECT_EQ(b.ToString(), a.ToString());
  Status c = a.WithContext("data.libsvm:17:1");
  EXPECT_EQ(c.message(), "data.libsvm:17:1: bad label '2'");
  EXPECT_EQ(c.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Status::OK().WithContext("ignored").ok());
  Status first;
  first.Update(Status::OK());
  EXPECT_TRUE(first.ok());
  first.Update(NotFoundError("one"));
  first.Update(InternalError("two"));
  EXPECT_EQ(first.ToString(), "NotFound: one");
}

TEST(Status, ErrnoMapsToCanonicalCodes) {
  EXPECT_EQ(ErrnoError("f", "open", ENOENT).code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoError("f", "open", EACCES).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoError("f", "write", ENOSPC).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoError("f", "read", EIO).code(), StatusCode::kUnavailable);
  EXPECT_EQ(ErrnoError("/x/y", "open", ENOENT).message(), "/x/y: open: No such file or directory");
}

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError(std::to_string(x) + " is odd");
  return x / 2;
}

Status Chain(int x, int* out) {
  CTRAIN_ASSIGN_OR_RETURN(int h, Half(x));
  CTRAIN_ASSIGN_OR_RETURN(*out, Half(h));
  CTRAIN_RETURN_IF_ERROR(h > 100 ? OutOfRangeError("too big") : Status::OK());
  return Status::OK();
}

TEST(StatusOr, ValueOrErrorAndMacros) {
  StatusOr<int> v = Half(8);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 4);
  EXPECT_EQ(Half(7).status().message(), "7 is odd");
  int out = 0;
  EXPECT_TRUE(Chain(12, &out).ok());
  EXPECT_EQ(out, 3);
  EXPECT_EQ(Chain(6, &out).ToString(), "InvalidArgument: 3 is odd");
  EXPECT_EQ(Chain(400, &out).code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace ctrain
