// Checkpoints: named tensors plus a JSON meta record, saved atomically into a
// model directory. The byte layout is specified in docs/checkpoint.md.
//
//   model_dir/
//     checkpoint            JSON index naming the latest file and the kept ones
//     ckpt-<step>.bin       header, meta JSON, tensors, footer (all CRC32C-checked)
//
// Crash safety: a save writes ckpt-<step>.bin.tmp.<pid>, fsyncs it, renames it
// into place, fsyncs the directory, and only then atomically replaces the
// index. A crash at any point leaves the previous index and the file it names
// intact, so LoadLatestCheckpoint() returns the previous checkpoint.
//
// One writer per model_dir (`ctrain train` holds train/model_dir_lock.h):
// SaveCheckpoint deletes leftover ckpt-*.bin.tmp.* files from crashed saves;
// an interrupt (base/signals.h) removes the temporary of a save in progress.
//
// Thread safety: the functions are safe to call concurrently on different
// model directories.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"

namespace ctrain::train {

// Element type codes stored on disk (do not change the values).
enum class DType : uint8_t { kF32 = 1, kI64 = 2 };

// Bytes per element of `t`.
inline constexpr size_t DTypeSize(DType t) { return t == DType::kF32 ? 4 : 8; }

// An owned tensor, as loaded. Exactly one of f32 / i64 holds the
// product(shape) elements (row-major), the one selected by dtype.
struct NamedTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // empty = scalar (1 element)
  std::vector<float> f32;
  std::vector<int64_t> i64;

  int64_t num_elements() const;
};

// A borrowed tensor, for saving without copying large tables. `data` points to
// product(shape) elements of `dtype` and must stay valid during the save.
struct TensorRef {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  // Gathered rows (optional): the tensor's row i (shape[0] rows of the
  // product of the other dims) is row rows[i] of `data`, written straight
  // from there without a copy of the whole tensor. Must stay valid during the
  // save; rows->size() == shape[0].
  const std::vector<int64_t>* rows = nullptr;

  static TensorRef F32(std::string name, std::vector<int64_t> shape, const float* data) {
    return {std::move(name), DType::kF32, std::move(shape), data};
  }
  static TensorRef I64(std::string name, std::vector<int64_t> shape, const int64_t* data) {
    return {std::move(name), DType::kI64, std::move(shape), data};
  }
  // A view of an owned tensor (REQUIRES: its data vector has num_elements()).
  static TensorRef Of(const NamedTensor& t);
};

struct Checkpoint {
  std::string path;          // the file it was read from
  int64_t step = 0;          // from the file header
  nlohmann::json meta;       // as saved (model config, epoch, record position, RNG state, ...)
  std::vector<NamedTensor> tensors;  // in file order

  // The tensor named `name`, or nullptr.
  const NamedTensor* Find(std::string_view name) const;
};

struct CheckpointOptions {
  // How many checkpoints the index keeps (>= 1); older files listed in the
  // index are deleted after a successful save. Default 3.
  int keep_last = 3;
  // The full checkpoint the new one extends ("" = it is full): an
  // incremental keyed-table checkpoint (train/keyed_checkpoint.h). The index
  // records it and keeps that file beyond keep_last while an incremental
  // checkpoint it keeps needs it.
  std::string base;
};

// The bytes of `t` in order (gathered rows included), handed to `fn` in
// chunks of at most 4 MiB when gathered (one chunk otherwise); stops at fn's
// first error. SaveCheckpoint writes with it; the trainer broadcasts and
// hashes keyed tables with it.
Status ForEachTensorChunk(const TensorRef& t, const std::function<Status(std::string_view)>& fn);

// File name of the checkpoint of `step`: "ckpt-<step>.bin".
std::string CheckpointFileName(int64_t step);

// Saves tensors + meta as model_dir/ckpt-<step>.bin (creating model_dir if
// needed), points the index at it and prunes to options.keep_last. Writes in
// large chunks (no per-element formatting); cost is about one pass of CRC32C
// plus the write.
// Errors: InvalidArgument (step < 0, keep_last < 1, empty or duplicate or
// over-long tensor name, rank > 8, negative dimension, null data for a
// non-empty tensor); file errors from the OS (path named).
Status SaveCheckpoint(const std::string& model_dir, int64_t step, std::span<const TensorRef> tensors,
                      const nlohmann::json& meta, const CheckpointOptions& options = {});
// Same, from owned tensors.
Status SaveCheckpoint(const std::string& model_dir, int64_t step, const std::vector<NamedTensor>& tensors,
                      const nlohmann::json& meta, const CheckpointOptions& options = {});

// Reads one checkpoint file, verifying every CRC.
// Errors: NotFound (no such file); DataLoss "<path>: offset <n>: <what>" for a
// bad magic/version, CRC mismatch, truncation, impossible sizes or trailing
// bytes.
StatusOr<Checkpoint> LoadCheckpoint(const std::string& path);

// Path of the file the index names. Errors: NotFound when model_dir has no
// index and no ckpt-*.bin (nothing saved yet); DataLoss when the index is
// unreadable JSON or names a file that does not exist, or is missing while
// ckpt-*.bin files are there (named; never silently falls back: a trainer
// would otherwise restart from scratch over them).
StatusOr<std::string> LatestCheckpointPath(const std::string& model_dir);

// LatestCheckpointPath + LoadCheckpoint; also checks that the file's step is
// the one the index names (DataLoss otherwise).
StatusOr<Checkpoint> LoadLatestCheckpoint(const std::string& model_dir);

}  // namespace ctrain::train
