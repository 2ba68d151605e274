#include "ctrain/base/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <string>

namespace ctrain {
namespace {

void Write(std::string line) {
  if (line.empty() || line.back() != '\n') line += '\n';
  // One write(2) for the whole line (stderr is unbuffered: fprintf may split it).
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string Format(const char* prefix, const char* format, va_list args) {
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out = prefix;
  if (n <= 0) return out;
  const size_t at = out.size();
  out.resize(at + static_cast<size_t>(n) + 1);
  std::vsnprintf(out.data() + at, static_cast<size_t>(n) + 1, format, args);
  out.resize(at + static_cast<size_t>(n));
  return out;
}

}  // namespace

void Logf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  Write(Format("ctrain: ", format, args));
  va_end(args);
}

void Warnf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  Write(Format("ctrain: warning: ", format, args));
  va_end(args);
}

void LogLine(std::string_view line) { Write("ctrain: " + std::string(line)); }

}  // namespace ctrain
