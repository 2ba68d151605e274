// File lists for the input pipeline: globs, directories and plain paths
// expanded into a sorted, deterministic list (tf.data's
// Dataset.list_files(shuffle=False)).
//
// Rules, per input pattern, results concatenated in pattern order:
//   "-"                     stdin, kept as is (a stream)
//   "pipe:<prefix>"         a SageMaker-style channel (pipe_mode.h), kept as is
//   an existing directory   its regular files and FIFOs whose names do not start
//                           with '.', sorted by name (not recursive)
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
#include <vector>

#include "ctrain/base/status.h"

namespace ctrain::data {

StatusOr<std::vector<std::string>> ExpandFileList(const std::vector<std::string>& patterns);

// True for "-" and for paths that are FIFOs or character devices: inputs that
// can be read once only.
bool IsStreamPath(const std::string& path);

// Size in bytes of a regular file, or -1 (a stream or a failed stat).
int64_t RegularFileSize(const std::string& path);

}  // namespace ctrain::data
