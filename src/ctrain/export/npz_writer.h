// NumPy .npz archives (numpy.savez's format: a zip of .npy 1.0 files, stored
// uncompressed), written with libzip (Debian's libzip-dev); the .npy headers
// are npy_export.h's. `ctrain convert --feature-spec ... --output-format npz`
// writes a spec's columns (data/spec_columns.h) this way; np.load reads them.
//
// Thread safety: plain functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/spec_columns.h"
#include "ctrain/export/npy_export.h"

namespace ctrain::exporter {

// One array of an archive: np.load(path)[name] (the entry is "<name>.npy").
// `data` holds product(shape) elements of `type` and must stay valid until
// WriteNpz returns.
struct NpzArray {
  std::string name;
  NpyType type = NpyType::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

// Writes the arrays as an .npz at `path` through io::OpenWritableFile (atomic
// for a regular file; "-" = stdout). The archive is assembled in memory first
// (memory: about the arrays' size again). Errors: InvalidArgument for an empty
// or repeated name; libzip's (Internal, naming the entry); the file's.
Status WriteNpz(const std::string& path, const std::vector<NpzArray>& arrays);

// The arrays of SpecColumns, by name (docs/feature-spec.md#arrays):
//   "label"                                  float32 [B]
//   "<name>"                                 kDense float32 / kIds int64, [B] or [B, width]
//   "<name>.ids", "<name>.offsets"[, "<name>.weights"]   kBag (EmbeddingBag layout)
// Errors: InvalidArgument when two arrays get the same name (an entry named
// "label", or "x.ids" next to a multi-hot "x"). The result points into `c`.
StatusOr<std::vector<NpzArray>> SpecColumnArrays(const data::SpecColumns& c);

}  // namespace ctrain::exporter
