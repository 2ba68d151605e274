#include "ctrain/io/text_location.h"

namespace ctrain::io {

Status TextError(const TextLocation& where, size_t column, std::string_view what) {
  std::string msg;
  msg.reserve(where.file.size() + what.size() + 32);
  if (!where.file.empty()) {
    msg.append(where.file);
    msg += ':';
    if (where.line != 0) {
      msg += std::to_string(where.line);
      if (column != 0) msg += ':';
    }
    if (column != 0 || where.line == 0) msg += std::to_string(column);
  } else if (where.line != 0) {
    msg += "line ";
    msg += std::to_string(where.line);
    if (column != 0) {
      msg += ", column ";
      msg += std::to_string(column);
    }
  } else {
    msg += "column ";
    msg += std::to_string(column);
  }
  msg += ": ";
  msg.append(what);
  return InvalidArgumentError(msg);
}

std::string QuoteToken(std::string_view token) {
  static constexpr size_t kMax = 40;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  const size_t n = token.size() < kMax ? token.size() : kMax;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (token.size() > kMax) out += "...";
  out += '\'';
  return out;
}

}  // namespace ctrain::io
