// TextLocation: where a text-format error happened, and the one formatter for
// such errors, shared by the LibSVM and Criteo parsers.
//
// Messages look like a compiler's, so editors can jump to them:
//   "data.libsvm:17:5: expected 'id:value', found 'abc'"
// i.e. "<file>:<line>:<column>: <what>", column 1-based and counted in bytes.
// Without a file name: "line 17, column 5: <what>"; without a line number
// (line == 0): "column 5: <what>".
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ctrain/base/status.h"

namespace ctrain::io {

struct TextLocation {
  std::string_view file;  // name used in messages; may be empty
  uint64_t line = 0;      // 1-based; 0 = unknown
};

// InvalidArgument error "<where>:<column>: <what>" (see the header comment).
// column 0 means "the whole line": "<file>:<line>: <what>" / "line 17: <what>".
Status TextError(const TextLocation& where, size_t column, std::string_view what);

// A token quoted for an error message: at most 40 bytes (then "..."), bytes
// outside printable ASCII written as \xNN, wrapped in single quotes.
std::string QuoteToken(std::string_view token);

}  // namespace ctrain::io
