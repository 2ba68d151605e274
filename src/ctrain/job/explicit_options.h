// Which options a user set explicitly, by canonical name (the CLI flag's
// first long name with underscores: "num_shards", "intra_op_parallelism_threads").
// Jobs use it where "given" and "left at its default" mean different things:
// an explicit --towers stays fixed under --autotune, an explicit --field-size
// must agree with the model, a pipeline flag ignored by memory mode is warned
// about. The CLI fills it from the parsed flags; Python from the keyword
// arguments it was given.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace ctrain::job {

class ExplicitOptions {
 public:
  void Add(std::string name) { names_.insert(std::move(name)); }
  bool Has(std::string_view name) const { return names_.find(std::string(name)) != names_.end(); }
  const std::set<std::string>& names() const { return names_; }

 private:
  std::set<std::string> names_;
};

// "num_shards" -> "--num-shards": how a message names the option.
inline std::string FlagName(std::string_view name) {
  std::string f = "--";
  for (char c : name) f += c == '_' ? '-' : c;
  return f;
}

}  // namespace ctrain::job
