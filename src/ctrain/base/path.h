// The one path helper of ctrain: the absolute forms that are recorded
// (checkpoint meta, data-service dataset definitions, PS manifests) so that
// another process or working directory finds the same file.
//
// Thread safety: free functions (they read the working directory).
#pragma once

#include <string>
#include <string_view>

namespace ctrain {

// `path` made absolute against the working directory and lexically normal
// ("a/./b/../c" -> "/cwd/a/c"), without touching the file system's links.
// "" stays "" (an unset option); if the working directory cannot be read, the
// path is returned unchanged.
std::string AbsolutePath(std::string_view path);

// `path` with every existing part resolved (symlinks, "..": POSIX realpath
// for the part that exists, std::filesystem::weakly_canonical), absolute, no
// trailing '/'. "" stays ""; on an error the path is returned unchanged.
std::string CanonicalPath(std::string_view path);

}  // namespace ctrain
