#include "ctrain/data/file_list.h"

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "ctrain/base/log.h"

namespace ctrain::data {
namespace {

bool IsReadableKind(mode_t m) { return S_ISREG(m) || S_ISFIFO(m) || S_ISCHR(m); }

Status ListDirectory(const std::string& dir, std::vector<std::string>* out, std::vector<std::string>* hidden) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return ErrnoError(dir, "opendir", errno);
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.empty() || name == "." || name == "..") continue;
    std::string path = dir + (dir.ends_with('/') ? "" : "/") + name;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !IsReadableKind(st.st_mode)) continue;
    if (IsHiddenInputName(name)) hidden->push_back(std::move(name));
    else names.push_back(std::move(path));
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  std::sort(hidden->begin(), hidden->end());
  out->insert(out->end(), names.begin(), names.end());
  return Status::OK();
}

std::string NameList(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 5; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > 5) s += ", ... (" + std::to_string(names.size() - 5) + " more)";
  return s;
}

}  // namespace

bool IsHiddenInputName(std::string_view name) { return name.starts_with('_') || name.starts_with('.'); }

bool IsStreamPath(const std::string& path) {
  if (path == "-" || path.starts_with("pipe:")) return true;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  return S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode);
}

int64_t RegularFileSize(const std::string& path) {
  struct stat st;
  if (path == "-" || stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return static_cast<int64_t>(st.st_size);
}

StatusOr<std::vector<std::string>> ExpandFileList(const std::vector<std::string>& patterns,
                                                  FileListSkipped* skipped) {
  if (patterns.empty()) return InvalidArgumentError("file list: no input files given");
  std::vector<std::string> out;
  std::map<std::string, std::string> seen;  // path -> pattern that produced it
  for (const std::string& p : patterns) {
    std::vector<std::string> found;
    if (p.empty()) return InvalidArgumentError("file list: empty path");
    struct stat st;
    if (p == "-" || p.starts_with("pipe:")) {
      found.push_back(p);
    } else if (stat(p.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) {
        std::vector<std::string> hidden;
        CTRAIN_RETURN_IF_ERROR(ListDirectory(p, &found, &hidden));
        if (found.empty())
          return NotFoundError(p + ": directory holds no data files" +
                               (hidden.empty() ? std::string()
                                               : " (skipped " + std::to_string(hidden.size()) +
                                                     " whose names start with '_' or '.': " + NameList(hidden) + ")"));
        if (!hidden.empty()) {
          if (skipped != nullptr) {
            for (const std::string& h : hidden) skipped->paths.push_back(p + (p.ends_with('/') ? "" : "/") + h);
          } else {
            Logf("%s: skipped %zu file(s) whose names start with '_' or '.' (Hadoop's FileInputFormat rule: "
                 "markers, checksums, hidden files): %s\n",
                 p.c_str(), hidden.size(), NameList(hidden).c_str());
          }
        }
      } else if (IsReadableKind(st.st_mode)) {
        found.push_back(p);
      } else {
        return InvalidArgumentError(p + ": not a regular file, FIFO or directory");
      }
    } else if (p.find_first_of("*?[") != std::string::npos) {
      glob_t g{};
      int rc = glob(p.c_str(), GLOB_ERR, nullptr, &g);
      if (rc == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) {
          std::string path = g.gl_pathv[i];
          if (stat(path.c_str(), &st) == 0 && IsReadableKind(st.st_mode)) found.push_back(std::move(path));
        }
      }
      globfree(&g);
      if (rc != 0 && rc != GLOB_NOMATCH) return IOError(p + ": glob failed");
      if (found.empty()) return NotFoundError(p + ": glob matched no files");
      std::sort(found.begin(), found.end());
    } else {
      return ErrnoError(p, "stat", errno);
    }
    for (std::string& f : found) {
      auto [it, inserted] = seen.emplace(f, p);
      if (!inserted && f != "-")
        return InvalidArgumentError(f + ": listed twice (patterns '" + it->second + "' and '" + p + "')");
      if (!inserted) return InvalidArgumentError("-: stdin listed twice");
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace ctrain::data
