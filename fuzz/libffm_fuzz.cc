// libFuzzer target: LibFfmReader over arbitrary bytes. Checks: no crash/UB,
// every returned triple is valid (field/feature >= 0, finite value, label 0/1),
// and errors are InvalidArgument naming the file.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ctrain/io/libffm.h"

using namespace ctrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto reader = io::LibFfmReader::Open(io::NewMemoryFile("fuzz.libffm", text));
  if (!reader.ok()) std::abort();
  float label;
  const std::vector<io::FfmTriple>* t = nullptr;
  for (;;) {
    auto more = (*reader)->Next(&label, &t);
    if (!more.ok()) {
      if (more.status().code() != StatusCode::kInvalidArgument) std::abort();
      if (more.status().message().rfind("fuzz.libffm:", 0) != 0) std::abort();
      break;
    }
    if (!*more) break;
    if (label != 0.f && label != 1.f) std::abort();
    for (const auto& x : *t)
      if (x.field < 0 || x.feature < 0 || !std::isfinite(x.value)) std::abort();
  }
  return 0;
}
