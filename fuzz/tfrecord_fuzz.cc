// libFuzzer target: arbitrary bytes as a TFRecord stream.
//
// Feeds the input as an in-memory file to TFRecordReader (compression auto,
// so gzip/zlib inputs reach the inflater too) with three option sets: strict,
// strict with a tiny buffer (exercises refills and growth), and
// skip_corrupt_records (exercises resync). Reads until the end or the first
// error and checks invariants:
//   - a strict, uncompressed read that ends cleanly re-frames to the input
//     byte for byte (nothing dropped, nothing invented);
//   - counters agree with what Next() returned;
//   - no record exceeds max_record_bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ctrain/io/file.h"
#include "ctrain/io/tfrecord.h"

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

void Run(const uint8_t* data, size_t size, const ctrain::io::TFRecordReaderOptions& o, bool with_size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  std::optional<uint64_t> known;
  if (with_size) known = size;
  auto r = ctrain::io::TFRecordReader::FromFile(ctrain::io::NewMemoryFile("fuzz", bytes), o, known);
  if (!r.ok()) return;
  auto& reader = *r;
  std::string reframed;
  uint64_t n = 0, payload = 0;
  std::string_view rec;
  bool clean = false;
  for (;;) {
    auto more = reader->Next(&rec);
    if (!more.ok()) {
      Check(!more.status().message().empty());
      auto again = reader->Next(&rec);  // sticky
      Check(!again.ok() && again.status().code() == more.status().code());
      break;
    }
    if (!*more) {
      clean = true;
      break;
    }
    Check(rec.size() <= o.max_record_bytes);
    ++n;
    payload += rec.size();
    if (!o.skip_corrupt_records) ctrain::io::AppendTFRecord(&reframed, rec);
  }
  auto k = reader->counters();
  Check(k.records == n && k.bytes == payload);
  if (!o.skip_corrupt_records) Check(k.skipped_records == 0 && k.skipped_bytes == 0);
  if (clean && !o.skip_corrupt_records && reader->compression() == ctrain::io::Compression::kNone) {
    Check(reframed == bytes);
  }
  if (clean && o.skip_corrupt_records && reader->compression() == ctrain::io::Compression::kNone) {
    // Every input byte is either in a returned record's frame or counted as skipped.
    Check(payload + 16 * n + k.skipped_bytes == size);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrain::io::TFRecordReaderOptions strict;
  strict.max_record_bytes = 1 << 20;
  strict.buffer_bytes = 4096;
  Run(data, size, strict, false);
  Run(data, size, strict, true);

  ctrain::io::TFRecordReaderOptions tiny = strict;
  tiny.buffer_bytes = 64;
  Run(data, size, tiny, false);

  ctrain::io::TFRecordReaderOptions skip = strict;
  skip.skip_corrupt_records = true;
  skip.buffer_bytes = 128;
  Run(data, size, skip, false);
  return 0;
}
