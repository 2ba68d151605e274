// The --metrics-json files of train, eval and predict: a JSON object written
// atomically, two-space indented, non-finite numbers as null.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"

namespace ctrain::job {

// Writes `j` to `path` atomically (io::WriteStringToFileAtomic). Errors: the
// file's, naming the path.
Status WriteMetricsJson(const std::string& path, const nlohmann::json& j);

// v as a JSON number, or null when v is nan or infinite (JSON has neither).
inline nlohmann::json JsonNumber(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace ctrain::job
