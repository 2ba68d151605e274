// Batch frames on the worker -> trainer stream (data_service.proto BatchFrame):
// the batch in its wire format (data/batch.h), optionally zstd-compressed
// (RFC 8878, Debian's libzstd, with the frame's content checksum), plus the checks a
// receiver runs on every frame.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/data/batch.h"
#include "ctrain/dataservice/data_service.pb.h"

namespace ctrain::dataservice {

// Largest batch (wire bytes, before compression) a frame may carry: 1 GiB.
inline constexpr int64_t kMaxFrameRawBytes = int64_t{1} << 30;

enum class FrameCompression { kNone, kZstd };
// "none" | "zstd". Errors: InvalidArgument naming the value.
StatusOr<FrameCompression> ParseFrameCompression(const std::string& name);

// Reusable compression state (one per producing thread).
class FrameEncoder {
 public:
  explicit FrameEncoder(FrameCompression compression, int level = 1);
  ~FrameEncoder();
  FrameEncoder(const FrameEncoder&) = delete;
  FrameEncoder& operator=(const FrameEncoder&) = delete;
  // Fills frame: seq, examples, raw_bytes, payload (compressed when the
  // encoder compresses and that makes it smaller; zstd flags which).
  Status Encode(const data::Batch& batch, int64_t seq, proto::BatchFrame* frame);

 private:
  FrameCompression compression_;
  int level_;
  void* cctx_ = nullptr;  // ZSTD_CCtx
  std::string raw_;
};

// Decodes a frame's batch into *batch (its buffers' capacity is reused). `scratch`
// holds the decompressed bytes. Errors: DataLoss naming the frame's seq for a
// payload that does not decompress to raw_bytes or does not deserialize, a
// raw_bytes outside [0, kMaxFrameRawBytes], an examples count that differs
// from the batch's rows.
Status DecodeFrame(const proto::BatchFrame& frame, std::string* scratch, data::Batch* batch);

}  // namespace ctrain::dataservice
