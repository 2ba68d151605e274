#include "ctrain/train/sample_weights.h"

#include <cmath>

#include "ctrain/io/file.h"
#include "ctrain/io/text_number.h"

namespace ctrain::train {

StatusOr<std::vector<float>> ReadSampleWeights(const std::string& path) {
  CTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString(path));
  std::vector<float> out;
  size_t pos = 0;
  int64_t line = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string_view v(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++line;
    while (!v.empty() && (v.back() == '\r' || v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    float w = 0;
    if (v.empty() || io::ParseFloat(v.data(), v.data() + v.size(), &w) != io::NumParse::kOk || !std::isfinite(w) ||
        w < 0)
      return InvalidArgumentError(path + ":" + std::to_string(line) + ": weight '" + std::string(v) +
                                  "' is not a finite number >= 0");
    out.push_back(w);
  }
  return out;
}

StatusOr<std::vector<float>> ReadSampleWeightsFor(const std::string& path, int64_t examples, const std::string& data) {
  CTRAIN_ASSIGN_OR_RETURN(std::vector<float> w, ReadSampleWeights(path));
  if (static_cast<int64_t>(w.size()) != examples)
    return InvalidArgumentError(path + ": " + std::to_string(w.size()) + " weights (lines) for " +
                                std::to_string(examples) + " examples of " + data +
                                "; one weight per example, in order");
  return w;
}

}  // namespace ctrain::train
