// `ctrain export --format onnx`: the DeepFM forward pass (model/deepfm.h, in
// inference mode) as an ONNX graph for ONNX runtimes (standard opset-13
// operators only; tests/export runs it with onnxruntime). The proto is
// Debian's libonnx-dev (ONNX 1.12): IR version 8, default-domain opset 13.
//
// Graph (docs/export.md draws it):
//   inputs   ids     int64  [batch, F]   model ids in [0, feature_size): the
//                                        ([batch, F, ids_per_field] with
//                                        OnnxExportOptions::multi_hot)
//                                        batch layout of data/batch.h, i.e.
//                                        after id base / hashing / vocabulary
//                                        as the checkpoint's "data" records
//            values  float  [batch, F]
//   output   prediction float [batch]    sigmoid(logit), the click probability
//   logit = fm_bias + y_first + y_fm + y_deep, each term only if the model
//   enables it:
//     y_first = ReduceSum(Gather(embeddings/w, ids) * values, axis 1)
//     e       = Gather(embeddings/V, ids) * Unsqueeze(values, 2)      [batch, F, K]
//     y_fm    = 0.5 * ReduceSum((ReduceSum(e,1))^2 - ReduceSum(e*e,1), axis 1)
//     y_deep  = per hidden layer i: Gemm(mlp{i}) -> Relu -> [batch norm] ;
//               then Gemm(deep_out), squeezed to [batch]
//   Batch norm is the inference transform DeepFM uses,
//   (x - moving_mean) * scale + beta with scale = gamma / sqrt(moving_variance
//   + epsilon) precomputed in f32 (initializer "bn_<i>/scale"). Dropout is the
//   identity at inference and does not appear.
// Initializers keep the checkpoint's names ("embeddings/V", "mlp0/weights",
// ...). Model metadata_props: "ctrain.model" (the model config JSON),
// "ctrain.data" (how training files became ids, docs/checkpoint.md#data),
// "ctrain.checkpoint", "ctrain.step".
//
// Precision: f32 throughout (see export/exported_model.h for bf16 models).
// Ids outside [0, feature_size) are the runtime's error (onnxruntime's Gather
// fails on them); negative ids would wrap around in ONNX Gather, so serving
// must not pass them.
//
// Thread safety: plain functions.
#pragma once

#include <cstdint>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/export/exported_model.h"

namespace ctrain::exporter {

// Where the initializers' bytes go. Protobuf cannot serialize a message over
// 2 GiB, so large tables must live beside the .onnx file (ONNX "external
// data": the tensor records a file name, offset and length, resolved relative
// to the .onnx file's directory).
enum class ExternalData {
  kAuto,    // external when the initializers total more than kExternalDataAutoBytes
  kAlways,  // every initializer of kExternalDataMinBytes or more goes to "<output>.data"
  kNever,   // all inside the .onnx file (InvalidArgument when that exceeds 2 GiB)
};
inline constexpr int64_t kExternalDataAutoBytes = int64_t{1} << 30;  // 1 GiB
inline constexpr int64_t kExternalDataMinBytes = 1024;

// "auto" | "always" | "never". InvalidArgument otherwise.
StatusOr<ExternalData> ParseExternalData(const std::string& text);

struct OnnxExportOptions {
  ExternalData external_data = ExternalData::kAuto;
  // Multi-hot inputs (fields holding several ids: tags, histories): ids and
  // values become [batch, F, ids_per_field] and field f's embedding is
  // sum_j V[ids[b,f,j]] * values[b,f,j] (the first-order term sums
  // w[id] * value over every id), which is how DeepFM pools multi-hot fields
  // (sum pooling; mean pooling is weights 1/n in the values, as ctrain's
  // feature spec writes them). Pad short fields with any valid id and value 0;
  // an all-padding field is a zero embedding. With one id per field this is
  // the one-hot graph.
  bool multi_hot = false;
  // Run onnx::checker::check_model on the written file (structure, opset,
  // node inputs; cheap next to writing the tables).
  bool check = true;
};

// What ExportOnnx wrote.
struct OnnxExportResult {
  std::string model_path;          // the .onnx file
  std::string external_data_path;  // "<model_path>.data", or "" when none was written
  int64_t model_bytes = 0;         // size of the .onnx file
  int64_t external_bytes = 0;      // size of the external data file
  int64_t nodes = 0;               // graph nodes
};

// Builds the graph of `m` and writes it to `path` (atomically; the external
// data file, if any, is written first). Errors: FailedPrecondition naming
// the checkpoint and --multi-hot for a model with multi_hot_input exported
// without options.multi_hot; InvalidArgument (ExternalData
// kNever for a model over 2 GiB); Internal "<path>: onnx checker: ..." when the
// checker rejects the file (a bug here); the OS's, naming the path.
StatusOr<OnnxExportResult> ExportOnnx(const ExportedModel& m, const std::string& path,
                                      const OnnxExportOptions& options = {});

}  // namespace ctrain::exporter
