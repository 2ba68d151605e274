#include "ctrain/base/path.h"

#include <filesystem>
#include <system_error>

namespace ctrain {

std::string AbsolutePath(std::string_view path) {
  if (path.empty()) return std::string();
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(std::filesystem::path(path), ec);
  if (ec) return std::string(path);
  return abs.lexically_normal().string();
}

std::string CanonicalPath(std::string_view path) {
  if (path.empty()) return std::string();
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(std::filesystem::path(path), ec);
  if (ec) return std::string(path);
  const std::filesystem::path canon = std::filesystem::weakly_canonical(abs, ec);
  std::string s = ec ? abs.lexically_normal().string() : canon.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace ctrain
