// libFuzzer target: LibSvmReader over arbitrary bytes.
// Byte 0 picks the options (field_size 0..7, variable_length, id_base 0/1);
// the rest is the file. Checks: no crash/UB, every returned row is valid
// (label 0/1, ids >= 0, finite values, n <= field_size), errors are
// InvalidArgument naming the file, and write -> parse gives the same row.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ctrain/io/libsvm.h"

using namespace ctrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  io::LibSvmOptions options;
  options.field_size = data[0] & 7;
  options.variable_length = (data[0] >> 3) & 1;
  options.id_base = (data[0] >> 4) & 1;
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto reader = io::LibSvmReader::Open(io::NewMemoryFile("fuzz.libsvm", text), options,
                                          /*read_buffer_size=*/16);  // exercises buffer growth
  if (!reader.ok()) std::abort();
  int64_t ids[8], ids2[8];
  float values[8], values2[8];
  float label, label2;
  int32_t n, n2;
  io::LibSvmLineInfo info;
  for (;;) {
    auto more = (*reader)->Next(&label, ids, values, &n);
    if (!more.ok()) {
      if (more.status().code() != StatusCode::kInvalidArgument) std::abort();
      if (more.status().message().rfind("fuzz.libsvm:", 0) != 0) std::abort();
      break;
    }
    if (!*more) break;
    if (n < 0 || n > options.field_size) std::abort();
    if (!options.variable_length && n != options.field_size) std::abort();
    if (label != 0.0f && label != 1.0f) std::abort();
    for (int i = 0; i < n; ++i) {
      if (ids[i] < 0 || !std::isfinite(values[i])) std::abort();
    }
    std::string line;
    io::AppendLibSvmLine(label, std::span<const int64_t>(ids, n), std::span<const float>(values, n),
                         options.id_base, &line);
    line.pop_back();  // '\n'
    Status s = io::ParseLibSvmLine(line, options, &label2, ids2, values2, &n2, 8, &info);
    if (!s.ok() || n2 != n || label2 != label || std::memcmp(ids, ids2, sizeof(int64_t) * n) != 0 ||
        std::memcmp(values, values2, sizeof(float) * n) != 0) {
      std::abort();
    }
  }
  return 0;
}
