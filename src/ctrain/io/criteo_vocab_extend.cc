// Append-only vocabulary extension (io/criteo_vocab_extend.h).
#include "ctrain/io/criteo_vocab_extend.h"

#include <string_view>

namespace ctrain::io {

StatusOr<CriteoVocabulary> ExtendVocabulary(const CriteoVocabulary& base, const CriteoVocabulary& fresh,
                                            std::string_view name, int64_t* added) {
  std::string text = base.FeatureMapText(0);
  int64_t next = base.size();
  const std::string fresh_text = fresh.FeatureMapText(0);  // lines in id order: the order of the new ids
  std::string_view rest = fresh_text;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    const size_t bar = line.find('|'), sp = line.rfind(' ');
    if (line.empty() || line[0] != 'C' || bar == std::string_view::npos || sp == std::string_view::npos || sp < bar)
      continue;  // I<k> lines: the numeric ids are base's
    const std::string_view category = line.substr(bar + 1, sp - bar - 1);
    if (category == "<unk>") continue;
    const int j = std::stoi(std::string(line.substr(1, bar - 1))) - 1;
    if (base.Lookup(j, category) != base.unk_id(j)) continue;  // base's id stays
    text.append(line.substr(0, sp));
    text += ' ';
    text += std::to_string(next++);
    text += '\n';
  }
  if (added != nullptr) *added = next - base.size();
  return CriteoVocabulary::ParseFeatureMap(text, name);
}

int64_t VocabularyEntries(const CriteoVocabulary& v) {
  int64_t n = kCriteoNumeric + kCriteoCategorical;
  for (int j = 0; j < kCriteoCategorical; ++j) n += static_cast<int64_t>(v.num_categories(j));
  return n;
}

}  // namespace ctrain::io
