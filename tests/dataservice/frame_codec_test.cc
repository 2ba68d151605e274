// Batch frames (dataservice/frame_codec.h): round trips with and without
// zstd, the raw fallback for incompressible batches, and DataLoss naming the
// frame's seq for every kind of damage.
#include "ctrain/dataservice/frame_codec.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace ctrain::dataservice {
namespace {

// A fixed-length batch with repetitive ids (compresses well).
data::Batch FixedBatch(int64_t rows, int32_t fields) {
  data::Batch b;
  b.field_size = fields;
  std::vector<int64_t> ids(fields);
  std::vector<float> values(fields);
  for (int64_t r = 0; r < rows; ++r) {
    for (int32_t f = 0; f < fields; ++f) {
      ids[f] = f * 100 + (r % 7);
      values[f] = f % 3 == 0 ? 1.0f : 0.25f * static_cast<float>(r % 5);
    }
    b.AppendRow(static_cast<float>(r % 2), ids, values);
  }
  return b;
}

// A variable-length batch (row_splits set).
data::Batch VariableBatch() {
  data::Batch b;
  b.field_size = 3;
  b.labels = {1, 0, 1};
  b.row_splits = {0, 2, 3, 6};
  b.ids = {4, 9, 1, 7, 8, 2};
  b.values = {1, 0.5f, 2, 1, 1, -3};
  return b;
}

// Random ids and values: zstd cannot make it smaller.
data::Batch RandomBatch() {
  std::mt19937_64 rng(7);
  data::Batch b;
  b.field_size = 8;
  std::vector<int64_t> ids(8);
  std::vector<float> values(8);
  std::uniform_real_distribution<float> u(-1e6f, 1e6f);
  for (int r = 0; r < 256; ++r) {
    for (int f = 0; f < 8; ++f) ids[f] = static_cast<int64_t>(rng() >> 1), values[f] = u(rng);
    b.AppendRow(u(rng), ids, values);
  }
  return b;
}

void ExpectDataLoss(const proto::BatchFrame& frame, const std::string& what) {
  std::string scratch;
  data::Batch out;
  Status st = DecodeFrame(frame, &scratch, &out);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << what << ": " << st.ToString();
  EXPECT_NE(std::string(st.message()).find("batch frame " + std::to_string(frame.seq())), std::string::npos)
      << what << ": " << st.message();
}

TEST(FrameCodec, ParseCompression) {
  EXPECT_EQ(*ParseFrameCompression("none"), FrameCompression::kNone);
  EXPECT_EQ(*ParseFrameCompression(""), FrameCompression::kNone);
  EXPECT_EQ(*ParseFrameCompression("zstd"), FrameCompression::kZstd);
  Status st = ParseFrameCompression("gzip").status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(st.message()).find("gzip"), std::string::npos);
}

TEST(FrameCodec, RoundTripsFixedAndVariableBatches) {
  for (FrameCompression c : {FrameCompression::kNone, FrameCompression::kZstd}) {
    FrameEncoder enc(c);
    for (const data::Batch& b : {FixedBatch(512, 39), VariableBatch(), FixedBatch(1, 1)}) {
      proto::BatchFrame f;
      ASSERT_TRUE(enc.Encode(b, 42, &f).ok());
      EXPECT_EQ(f.seq(), 42);
      EXPECT_EQ(f.examples(), b.size());
      EXPECT_EQ(f.raw_bytes(), static_cast<int64_t>(b.Serialize().size()));
      if (c == FrameCompression::kNone) {
        EXPECT_FALSE(f.zstd());
        EXPECT_TRUE(f.payload() == b.Serialize());  // the wire format as is
      }
      std::string scratch;
      data::Batch out = FixedBatch(3, 2);  // reused buffers are overwritten
      ASSERT_TRUE(DecodeFrame(f, &scratch, &out).ok());
      EXPECT_TRUE(out == b);
      EXPECT_EQ(out.field_size, b.field_size);
      EXPECT_EQ(out.labels, b.labels);
      EXPECT_EQ(out.ids, b.ids);
      EXPECT_EQ(out.values, b.values);
      EXPECT_EQ(out.row_splits, b.row_splits);
    }
  }
}

// One encoder makes every frame of a stream: each frame holds its own batch
// only (a reused buffer once carried all earlier batches too).
TEST(FrameCodec, ConsecutiveFramesOfOneEncoderAreIndependent) {
  for (FrameCompression c : {FrameCompression::kNone, FrameCompression::kZstd}) {
    FrameEncoder enc(c);
    std::string scratch;
    for (int64_t seq = 0; seq < 4; ++seq) {
      const data::Batch b = FixedBatch(100 + seq, 5);
      proto::BatchFrame f;
      ASSERT_TRUE(enc.Encode(b, seq, &f).ok());
      EXPECT_EQ(f.raw_bytes(), static_cast<int64_t>(b.Serialize().size())) << "seq " << seq;
      data::Batch out;
      ASSERT_TRUE(DecodeFrame(f, &scratch, &out).ok()) << "seq " << seq;
      EXPECT_TRUE(out == b) << "seq " << seq;
    }
  }
}

TEST(FrameCodec, ZstdCompressesRepetitiveBatches) {
  const data::Batch b = FixedBatch(4096, 39);
  FrameEncoder enc(FrameCompression::kZstd);
  proto::BatchFrame f;
  ASSERT_TRUE(enc.Encode(b, 0, &f).ok());
  EXPECT_TRUE(f.zstd());
  EXPECT_LT(static_cast<int64_t>(f.payload().size()) * 4, f.raw_bytes());
}

TEST(FrameCodec, IncompressiblePayloadFallsBackToRaw) {
  const data::Batch b = RandomBatch();
  FrameEncoder enc(FrameCompression::kZstd);
  proto::BatchFrame f;
  ASSERT_TRUE(enc.Encode(b, 3, &f).ok());
  EXPECT_FALSE(f.zstd());
  EXPECT_TRUE(f.payload() == b.Serialize());
  EXPECT_EQ(f.raw_bytes(), static_cast<int64_t>(f.payload().size()));
  std::string scratch;
  data::Batch out;
  ASSERT_TRUE(DecodeFrame(f, &scratch, &out).ok());
  EXPECT_TRUE(out == b);
  // The raw bytes move into the frame (no copy); the encoder's buffer and a
  // recycled frame (the worker reuses both) carry nothing into the next frames.
  const data::Batch fixed = FixedBatch(300, 7);
  for (const data::Batch* next : {&fixed, &b, &fixed}) {
    ASSERT_TRUE(enc.Encode(*next, 4, &f).ok());
    EXPECT_EQ(f.zstd(), next == &fixed);
    ASSERT_TRUE(DecodeFrame(f, &scratch, &out).ok());
    EXPECT_TRUE(out == *next);
  }
}

TEST(FrameCodec, EmptyFrameIsDataLossNotABatch) {
  proto::BatchFrame f;
  f.set_seq(11);
  ExpectDataLoss(f, "empty payload");
}

TEST(FrameCodec, EveryCorruptionIsDataLossNamingTheSeq) {
  const data::Batch b = FixedBatch(300, 13);
  for (FrameCompression c : {FrameCompression::kNone, FrameCompression::kZstd}) {
    FrameEncoder enc(c);
    proto::BatchFrame good;
    ASSERT_TRUE(enc.Encode(b, 17, &good).ok());
    const std::string mode = c == FrameCompression::kZstd ? "zstd" : "none";

    proto::BatchFrame f = good;
    f.mutable_payload()->resize(f.payload().size() - 5);
    ExpectDataLoss(f, mode + " truncated payload");

    f = good;  // truncated, and raw_bytes made to agree
    f.mutable_payload()->resize(f.payload().size() / 2);
    if (!f.zstd()) f.set_raw_bytes(static_cast<int64_t>(f.payload().size()));
    ExpectDataLoss(f, mode + " truncated payload, raw_bytes adjusted");

    for (int64_t lie : {good.raw_bytes() + 1, good.raw_bytes() - 1, int64_t{0}, int64_t{-1},
                        kMaxFrameRawBytes + 1}) {
      f = good;
      f.set_raw_bytes(lie);
      ExpectDataLoss(f, mode + " raw_bytes " + std::to_string(lie));
    }
    for (int64_t lie : {b.size() + 1, b.size() - 1, int64_t{0}}) {
      f = good;
      f.set_examples(lie);
      ExpectDataLoss(f, mode + " examples " + std::to_string(lie));
    }
    f = good;  // the zstd flag lies
    f.set_zstd(!good.zstd());
    ExpectDataLoss(f, mode + " zstd flag flipped");
  }
}

// A flipped bit in a zstd payload never yields a wrong batch: the frame's
// content checksum (or the decoder) refuses it with DataLoss. A few flips
// land in bits the decoder ignores and give the original batch back.
TEST(FrameCodec, EveryFlippedZstdByteIsDataLossOrHarmless) {
  const data::Batch b = FixedBatch(200, 10);
  FrameEncoder enc(FrameCompression::kZstd);
  proto::BatchFrame good;
  ASSERT_TRUE(enc.Encode(b, 5, &good).ok());
  ASSERT_TRUE(good.zstd());
  int refused = 0, harmless = 0;
  for (size_t i = 0; i < good.payload().size(); ++i) {
    for (unsigned char mask : {0x01, 0x80, 0xff}) {
      proto::BatchFrame f = good;
      (*f.mutable_payload())[i] = static_cast<char>((*f.mutable_payload())[i] ^ mask);
      std::string scratch;
      data::Batch out;
      Status st = DecodeFrame(f, &scratch, &out);
      if (st.ok()) {
        EXPECT_TRUE(out == b) << "byte " << i << " ^ " << int{mask} << " decoded to another batch";
        ++harmless;
        continue;
      }
      ++refused;
      EXPECT_EQ(st.code(), StatusCode::kDataLoss) << "byte " << i << ": " << st.ToString();
      EXPECT_NE(std::string(st.message()).find("batch frame 5"), std::string::npos) << st.message();
    }
  }
  EXPECT_GT(refused, 20 * harmless) << refused << " refused, " << harmless << " harmless";
}

}  // namespace
}  // namespace ctrain::dataservice
