// The parameters of a trained DeepFM, read from a model directory's latest
// checkpoint for export to other runtimes (export/onnx_export.h,
// export/npy_export.h). Only what inference needs is kept: the embedding
// tables, the dense parameters and the batch-norm moving statistics; the
// optimizer slots and the training position are dropped.
//
// Precision: every tensor is f32. A model trained with --mixed-precision bf16
// keeps f32 master weights (docs/model.md "Mixed precision"); its checkpoint
// holds those and does not record the GEMM precision, so `ctrain predict` and
// the export both run the model in f32.
//
// Thread safety: plain values and functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/model/deepfm.h"

namespace ctrain::exporter {

// One f32 tensor, row-major.
struct ExportTensor {
  std::string name;             // checkpoint name: "embeddings/V", "mlp0/weights", "bn_0/moving_mean", ...
  std::vector<int64_t> shape;   // e.g. [feature_size, K]
  std::vector<float> value;     // product(shape) elements

  int64_t num_elements() const;
};

struct ExportedModel {
  std::string checkpoint_path;  // the file read (model_dir/ckpt-<step>.bin)
  int64_t step = 0;             // its global step
  model::DeepFMConfig config;   // from the checkpoint meta "model"
  // How the training files became ids (checkpoint meta "data", docs/checkpoint.md#data),
  // or null when the checkpoint did not record it. Serving must build ids the same way.
  nlohmann::json data_source;
  // The model reads multi-hot rows: data_source holds a feature spec with a
  // var_len field or a libsvm/libffm field map (data/feature_spec.h multi_hot).
  // ExportOnnx then needs OnnxExportOptions::multi_hot.
  bool multi_hot_input = false;
  // In this order: "embeddings/w" [feature_size] (only with use_first_order),
  // "embeddings/V" [feature_size, K] (only with use_fm or use_deep), then the
  // dense parameters in DeepFM::dense_params() order, then DeepFM::state()
  // (BN moving mean/variance). Shapes as in model/deepfm.h.
  std::vector<ExportTensor> tensors;
  // A keyed embedding table (--embedding-table keyed, train/key_index.h): the
  // live keys, ascending. The exported tables then have table_rows() =
  // D + 1 + keys.size() rows (D = config.num_dense_fields): rows [0, D) the
  // numeric fields' (ids 0..D-1), row D zero (a key without a row reads it),
  // row D + 1 + i keys[i]'s. Positional models: keyed false, keys empty.
  bool keyed = false;
  std::vector<int64_t> keys;
  // Rows of "embeddings/w" and "embeddings/V": feature_size, or the keyed layout above.
  int64_t table_rows() const;

  // The tensor named `name`, or nullptr.
  const ExportTensor* Find(std::string_view name) const;
  // F and K as ints (config.field_size, config.embedding_size).
  int32_t field_size() const { return config.field_size; }
  int32_t embedding_size() const { return config.embedding_size; }
};

// Reads the latest checkpoint of `model_dir` (train/checkpoint.h, every CRC
// verified) and keeps the inference tensors listed above.
// Errors: NotFound "<model_dir>: no checkpoint"; the checkpoint reader's
// DataLoss; InvalidArgument from the recorded model config (names the key);
// Unimplemented "<file>: model option '<key>' = <value> is not supported ..."
// for a model option this exporter does not know set to a non-default value;
// DataLoss "<file>: tensor '<name>' ..." when a tensor the model config
// implies is missing, is not f32, or has a different shape.
StatusOr<ExportedModel> LoadModelForExport(const std::string& model_dir);

// Keyed models: the row of each key of `ids` [n, F] in the exported tables
// (fields >= num_dense_fields; the numeric fields' ids are rows already), as
// the ONNX graph's lookup computes it.
std::vector<int64_t> KeyedRows(const ExportedModel& m, const std::vector<int64_t>& ids);

// A line for logs and the ONNX doc string: "model deepfm step 40: feature_size 117581,
// field_size 39, K 32, terms first_order fm deep, deep_layers 400,400,400, batch_norm off"
// (deep_layers and batch_norm only with the deep term).
std::string DescribeModel(const ExportedModel& m);

}  // namespace ctrain::exporter
