// Levenshtein distance (insertions, deletions and substitutions of one byte,
// each costing 1), for "did you mean ...?" suggestions of flag, command and
// option names. O(|a| * |b|) time, O(|b|) memory.
#pragma once

#include <cstddef>
#include <string>

namespace ctrain {

size_t EditDistance(const std::string& a, const std::string& b);

}  // namespace ctrain
