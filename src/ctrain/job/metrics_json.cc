#include "ctrain/job/metrics_json.h"

#include "ctrain/io/file.h"

namespace ctrain::job {

Status WriteMetricsJson(const std::string& path, const nlohmann::json& j) {
  return io::WriteStringToFileAtomic(path, j.dump(2) + "\n");
}

}  // namespace ctrain::job
