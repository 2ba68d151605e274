// The one log helper of ctrain: a line to stderr, prefixed "ctrain: ", written
// with one call so that lines of concurrent threads (and of the processes of a
// launched job sharing a terminal or a log file) never interleave mid-line.
//
// Logf("resumed from %s at step %lld", dir.c_str(), step) prints
// "ctrain: resumed from DIR at step N\n". A trailing newline in the format is
// not doubled. Warnf adds "warning: " after the prefix.
//
// Thread safety: safe to call from any thread.
#pragma once

#include <string_view>

namespace ctrain {

void Logf(const char* format, ...) __attribute__((format(printf, 1, 2)));
void Warnf(const char* format, ...) __attribute__((format(printf, 1, 2)));
// One already formatted line ("ctrain: " + line).
void LogLine(std::string_view line);

}  // namespace ctrain
