// File lists for the input pipeline: globs, directories and plain paths
// expanded into a sorted, deterministic list (tf.data's
// Dataset.list_files(shuffle=False)).
//
// Rules, per input pattern, results concatenated in pattern order:
//   "-"                     stdin, kept as is (a stream)
//   "pipe:<prefix>"         a SageMaker-style channel (pipe_mode.h), kept as is
//   an existing directory   its regular files and FIFOs, sorted by name (not
//                           recursive), except names starting with '_' or '.'
//                           (Hadoop's FileInputFormat rule: Spark/Hadoop's
//                           _SUCCESS and _committed_* markers, .crc checksums,
//                           hidden files); those are counted and logged
//                           ("<dir>: skipped N file(s) ...") or returned in
//                           *skipped. A glob or a named path is never filtered.
//   contains * ? or [       glob(3), sorted; directories are not matched
//   anything else           must exist (regular file, FIFO or character device)
// Errors: NotFound "<pattern>: no such file or directory" / "<pattern>: glob
// matched no files"; InvalidArgument "<path>: listed twice (patterns 'a' and
// 'b')" (a file read twice would break "every record exactly once"), and for
// an empty pattern list.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"

namespace ctrain::data {

// The directory entries ExpandFileList left out (names starting with '_' or '.').
struct FileListSkipped {
  std::vector<std::string> paths;
};

// `skipped` null: the skipped names are logged, one line per directory.
StatusOr<std::vector<std::string>> ExpandFileList(const std::vector<std::string>& patterns,
                                                  FileListSkipped* skipped = nullptr);

// A directory entry the file list skips: its name starts with '_' or '.'.
bool IsHiddenInputName(std::string_view name);

// True for "-" and for paths that are FIFOs or character devices: inputs that
// can be read once only.
bool IsStreamPath(const std::string& path);

// Size in bytes of a regular file, or -1 (a stream or a failed stat).
int64_t RegularFileSize(const std::string& path);

}  // namespace ctrain::data
