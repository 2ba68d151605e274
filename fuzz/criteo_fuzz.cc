// libFuzzer target: CriteoReader over arbitrary bytes, then hashing,
// vocabulary counting, and a feature-map text round trip.
// Byte 0 picks the format (auto / TSV / CSV); the rest is the file.
// Checks: no crash/UB, errors are InvalidArgument naming the file, hashed ids
// in [0, feature_size), no control byte in a category, vocabulary ids in
// [0, size), and
// ParseFeatureMap(FeatureMapText()) reproduces the same map.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ctrain/io/criteo.h"

using namespace ctrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  io::CriteoReaderOptions options;
  options.format = static_cast<io::CriteoFormat>(data[0] % 3);
  options.read_buffer_size = 16;  // exercises buffer growth
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto reader = io::CriteoReader::Open(io::NewMemoryFile("fuzz.tsv", text), options);
  if (!reader.ok()) std::abort();
  io::CriteoHashOptions hash;
  hash.feature_size = 14 + (data[0] >> 2);
  io::CriteoVocabulary vocab;
  io::CriteoRow row;
  int64_t ids[39];
  float values[39];
  for (;;) {
    auto more = (*reader)->Next(&row);
    if (!more.ok()) {
      if (more.status().code() != StatusCode::kInvalidArgument) std::abort();
      if (more.status().message().rfind("fuzz.tsv:", 0) != 0) std::abort();
      break;
    }
    if (!*more) break;
    if (row.label != 0.0f && row.label != 1.0f) std::abort();
    // No control byte ever becomes part of a category (issue #7 item 6).
    for (int j = 0; j < io::kCriteoCategorical; ++j) {
      for (char c : row.categorical[j]) {
        const unsigned char u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) std::abort();
      }
    }
    io::HashCriteoRow(row, hash, ids, values);
    for (int f = 0; f < 39; ++f) {
      if (ids[f] < 0 || ids[f] >= hash.feature_size || std::isnan(values[f])) std::abort();
    }
    vocab.Count(row);
  }
  if (!vocab.Build(1 + (data[0] & 1)).ok()) std::abort();
  const std::string map = vocab.FeatureMapText(1);
  auto loaded = io::CriteoVocabulary::ParseFeatureMap(map, "map", 1);
  if (!loaded.ok() || loaded->size() != vocab.size() || loaded->FeatureMapText(0) != vocab.FeatureMapText(0)) {
    std::abort();
  }
  return 0;
}
