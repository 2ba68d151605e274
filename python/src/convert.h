// Conversions shared by the bindings: Status -> Python exception, Batch ->
// numpy arrays without a copy, Python option dicts -> the CLI's option structs
// (so that a bad value gives the CLI's message, naming the flag).
#pragma once

#include <string>

#include <nanobind/nanobind.h>

#include "ctrain/base/status.h"
#include "ctrain/job/data_options.h"
#include "ctrain/data/batch.h"
#include "ctrain/data/pipeline.h"

namespace ctrain::python {

// The Python exception class for a status code:
//   InvalidArgument, FailedPrecondition, OutOfRange, DataLoss -> ValueError
//   NotFound -> FileNotFoundError, PermissionDenied/Unauthenticated -> PermissionError,
//   AlreadyExists -> FileExistsError, Unavailable/DeadlineExceeded -> OSError,
//   Unimplemented -> NotImplementedError,
//   anything else -> RuntimeError.
PyObject* ExceptionFor(StatusCode code);

// Raises the exception for `s` with the CLI's text ("<Code>: <located message>").
// REQUIRES: !s.ok(); the GIL is held.
[[noreturn]] void Raise(const Status& s);
inline void ThrowIfError(const Status& s) {
  if (!s.ok()) Raise(s);
}

// (labels float32[B], ids int64[B, F], values float32[B, F]) as numpy arrays
// sharing the batch's memory: the batch moves to the heap and a capsule owns
// it; it is freed when the last of the three arrays is. Errors:
// Unimplemented for variable-length (CSR) batches.
nanobind::tuple BatchToArrays(data::Batch&& batch);

// Reader options: keys of job::DataOptions (format, compression, field_size,
// id_base, feature_size, feature_map, skip_corrupt_records,
// max_skipped_records, max_line_bytes, pipe_timeout_ms). Unknown keys raise
// TypeError. The values are checked by DataOptions::ReaderOptions().
void SetDataOptions(const nanobind::dict& d, job::DataOptions* options);

// Pipeline options by their PipelineOptions names (data::SetPipelineOption);
// errors raise ValueError naming the option.
void SetPipelineOptions(const nanobind::dict& d, data::PipelineOptions* options);

// Python value -> option text ("true"/"false" for bools, str(x) otherwise).
std::string OptionText(nanobind::handle value);

}  // namespace ctrain::python
