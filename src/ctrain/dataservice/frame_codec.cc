#include "ctrain/dataservice/frame_codec.h"

#include <zstd.h>

namespace ctrain::dataservice {

StatusOr<FrameCompression> ParseFrameCompression(const std::string& name) {
  if (name == "none" || name.empty()) return FrameCompression::kNone;
  if (name == "zstd") return FrameCompression::kZstd;
  return InvalidArgumentError("compression must be none or zstd, got \"" + name + "\"");
}

FrameEncoder::FrameEncoder(FrameCompression compression, int level) : compression_(compression), level_(level) {
  if (compression_ == FrameCompression::kZstd) {
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level_);
    // A content checksum (XXH64) in every frame: a damaged payload fails to
    // decompress instead of decoding to other bytes of the same length.
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    cctx_ = c;
  }
}

FrameEncoder::~FrameEncoder() {
  if (cctx_ != nullptr) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(cctx_));
}

Status FrameEncoder::Encode(const data::Batch& batch, int64_t seq, proto::BatchFrame* frame) {
  frame->Clear();
  frame->set_seq(seq);
  frame->set_examples(batch.size());
  if (compression_ == FrameCompression::kNone) {
    std::string* payload = frame->mutable_payload();
    batch.SerializeTo(payload);
    frame->set_raw_bytes(static_cast<int64_t>(payload->size()));
    return Status::OK();
  }
  raw_.clear();  // SerializeTo appends
  batch.SerializeTo(&raw_);
  frame->set_raw_bytes(static_cast<int64_t>(raw_.size()));
  std::string* payload = frame->mutable_payload();
  payload->resize(ZSTD_compressBound(raw_.size()));
  const size_t n = ZSTD_compress2(static_cast<ZSTD_CCtx*>(cctx_), payload->data(), payload->size(), raw_.data(),
                                  raw_.size());
  if (ZSTD_isError(n)) return InternalError(std::string("zstd: ") + ZSTD_getErrorName(n));
  if (n < raw_.size()) {
    payload->resize(n);
    frame->set_zstd(true);
  } else {
    payload->swap(raw_);  // incompressible: send it as is (raw_ keeps the other buffer for the next batch)
  }
  return Status::OK();
}

Status DecodeFrame(const proto::BatchFrame& frame, std::string* scratch, data::Batch* batch) {
  const std::string where = "batch frame " + std::to_string(frame.seq());
  if (frame.raw_bytes() < 0 || frame.raw_bytes() > kMaxFrameRawBytes)
    return DataLossError(where + ": raw_bytes " + std::to_string(frame.raw_bytes()) + " is outside [0, 2^30]");
  std::string_view bytes = frame.payload();
  if (frame.zstd()) {
    const unsigned long long content = ZSTD_getFrameContentSize(bytes.data(), bytes.size());
    if (content == ZSTD_CONTENTSIZE_ERROR || content != static_cast<unsigned long long>(frame.raw_bytes()))
      return DataLossError(where + ": the zstd payload does not hold raw_bytes " + std::to_string(frame.raw_bytes()));
    scratch->resize(static_cast<size_t>(frame.raw_bytes()));
    const size_t n = ZSTD_decompress(scratch->data(), scratch->size(), bytes.data(), bytes.size());
    if (ZSTD_isError(n) || n != scratch->size())
      return DataLossError(where + ": zstd: " + (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short output"));
    bytes = *scratch;
  } else if (static_cast<int64_t>(bytes.size()) != frame.raw_bytes()) {
    return DataLossError(where + ": payload holds " + std::to_string(bytes.size()) + " bytes, raw_bytes says " +
                         std::to_string(frame.raw_bytes()));
  }
  CTRAIN_RETURN_IF_ERROR(data::Batch::DeserializeInto(bytes, batch).WithContext(where));
  if (batch->size() != frame.examples())
    return DataLossError(where + ": " + std::to_string(batch->size()) + " examples, the frame says " +
                         std::to_string(frame.examples()));
  return Status::OK();
}

}  // namespace ctrain::dataservice
