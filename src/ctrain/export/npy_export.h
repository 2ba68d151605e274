// `ctrain export --format npy`: the parameters of a trained model as NumPy
// .npy files (format version 1.0, little-endian f32, C order) plus an index,
// for tools that are not ONNX runtimes (numpy, PyTorch, TF, a custom server).
//
//   out_dir/
//     index.json                  names, files, shapes, model config, data source
//     embeddings.w.npy            [feature_size]          (first-order weights)
//     embeddings.V.npy            [feature_size, K]       (FM / deep embeddings)
//     fm_bias.npy                 [1]
//     mlp0.weights.npy ...        [in, out]  (y = x @ W + b)
//     bn_0.gamma.npy ... bn_0.moving_variance.npy   [out] (with batch norm)
//     deep_out.weights.npy        [last, 1]
//
// File name = tensor name with '/' replaced by '.'. The optimizer slots are
// not written. index.json (docs/export.md has an example):
//   {"format": "ctrain-npy-export-v1", "checkpoint": ..., "step": ...,
//    "model": <checkpoint meta "model">, "data": <meta "data"> or null,
//    "tensors": [{"name": "embeddings/V", "file": "embeddings.V.npy",
//                 "dtype": "float32", "shape": [N, K]}, ...]}
// Thread safety: plain functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/export/exported_model.h"

namespace ctrain::exporter {

// Element type of a .npy file.
enum class NpyType { kF32, kI64 };

// The .npy 1.0 header (magic, version, header length, dict, padding to 64
// bytes, newline) for a C-order array of `type` and `shape`.
std::string NpyHeader(NpyType type, const std::vector<int64_t>& shape);

// Writes `data` (product(shape) elements of `type`) as a .npy file at `path`
// (atomic: a temporary renamed into place). Errors: the OS's, naming the path.
Status WriteNpy(const std::string& path, NpyType type, const std::vector<int64_t>& shape, const void* data);

// Writes every tensor of `m` and index.json into `out_dir` (created if
// missing; existing files of the same names are replaced, other files are
// left alone). Returns the index JSON written.
// Errors: FailedPrecondition when out_dir exists and is not a directory; the OS's.
StatusOr<nlohmann::json> ExportNpy(const ExportedModel& m, const std::string& out_dir);

}  // namespace ctrain::exporter
