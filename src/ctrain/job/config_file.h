// `--config FILE`: training options from a TOML or JSON file (docs/training.md#config-files).
//
// The file is one flat table (TOML) or object (JSON) of option names (dashes
// or underscores, job/option_schema.h) to values of the option's type; a list
// option takes an array (deep_layers = [400, 400, 400], train = ["a", "b"]) or
// its command-line text ("400,400,400"). Options given another way (the
// command line, Python keyword arguments) win over the file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/job/explicit_options.h"

namespace ctrain::job {

struct TrainJobOptions;

// Reads `path` (.json: JSON; anything else: TOML) and sets its options that are
// not in `given` into `options`, adding them to `given`. Errors (InvalidArgument
// naming the file, and the key or the TOML line and column): not a table of
// scalars and arrays, a nested table, an unknown key (with the closest option
// name), a 'config' key, a value of the wrong type; the file's read error.
Status ApplyTrainConfigFile(const std::string& path, TrainJobOptions* options, ExplicitOptions* given);

// The job's options from typed values {name: value} (ApplyTrainOptions, all of
// them recorded as given), then the --config file they name, if any: what the
// Python package's Trainer(**options) runs. `source` prefixes the errors.
StatusOr<TrainJobOptions> TrainJobOptionsFromValues(const nlohmann::json& values, const std::string& source);

}  // namespace ctrain::job
