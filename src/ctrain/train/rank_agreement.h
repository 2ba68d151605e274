// Before step 1 of a synchronous data-parallel run (mpirun), every rank must
// train the same model the same way: the same configuration (model shape,
// feature size, optimizer and learning-rate settings, data encoding) and
// parameters of the same shapes. Otherwise the first collective runs on
// mismatched buffers: rank 0's 5000-row table broadcast into a 10000-row one,
// another learning rate applied in silence, or MPI_ERR_TRUNCATE at step 1
// naming nothing (shared/cases/B42).
//
// CheckSameOnEveryRank gathers every rank's `values` (a JSON object {key:
// value}; one AllgatherStrings of its text, a few KB) and compares it key by
// key. Every rank gets the same answer, so every rank fails together. Errors:
// FailedPrecondition "<what> differ between the ranks ...: <key>: <value>
// (ranks 0, 1, 2), <value> (rank 3); <key>: ..." naming every key that
// differs, each distinct value with the ranks that gave it (a key a rank lacks
// shows as absent); the exchange's error when the gather fails.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/train/gradient_exchange.h"

namespace ctrain::train {

Status CheckSameOnEveryRank(GradientExchange& exchange, const nlohmann::ordered_json& values, const std::string& what);

}  // namespace ctrain::train
