#include "ctrain/export/onnx_export.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <initializer_list>
#include <system_error>
#include <utility>
#include <vector>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include "ctrain/export/onnx_graph.h"
#include "ctrain/export/onnx_heads.h"
#include "ctrain/io/file.h"
#include "ctrain/train/train_config.h"

namespace ctrain::exporter {

namespace {

constexpr int64_t kIrVersion = 8;   // ONNX 1.12's IR_VERSION
constexpr int64_t kOpsetVersion = 13;
constexpr int64_t kProtobufLimitBytes = (int64_t{1} << 31) - 1;

Status WriteExternalData(const std::string& path, const std::vector<GraphBuilder::ExternalPiece>& pieces) {
  io::WriteOptions wo;
  wo.atomic = true;
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> f, io::OpenWritableFile(path, wo));
  constexpr int64_t kChunk = int64_t{4} << 20;
  int64_t at = 0;
  const std::string pad(kExternalAlign, '\0');
  for (const auto& p : pieces) {
    if (p.offset > at) CTRAIN_RETURN_IF_ERROR(f->Append(std::string_view(pad.data(), p.offset - at)));
    const char* src = reinterpret_cast<const char*>(p.data);
    for (int64_t off = 0; off < p.bytes; off += kChunk)
      CTRAIN_RETURN_IF_ERROR(f->Append(std::string_view(src + off, std::min(kChunk, p.bytes - off))));
    at = p.offset + p.bytes;
  }
  return f->Close();
}

// The kinds with a head writer, in ModelKinds() order.
const std::vector<std::pair<std::string, OnnxHead>>& OnnxHeads() {
  static const auto* heads = new std::vector<std::pair<std::string, OnnxHead>>{
      {"deepfm", {"fm_bias", WriteDeepFmHead}},
      {"lr", {"fm_bias", WriteDeepFmHead}},
      {"fm", {"fm_bias", WriteDeepFmHead}},
      {"wide_deep", {"fm_bias", WriteDeepFmHead}},
      {"dcn", {"output/biases", WriteDcnHead}},
      {"dcn_v2", {"output/biases", WriteDcnHead}},
      {"dlrm", {"bias", WriteDlrmHead}},
      {"xdeepfm", {"bias", WriteXDeepFmHead}},
  };
  return *heads;
}

std::string OnnxHeadKinds() {
  std::string s;
  for (const auto& [kind, head] : OnnxHeads()) s += (s.empty() ? "" : ", ") + kind;
  return s;
}

}  // namespace

const OnnxHead* FindOnnxHead(std::string_view kind) {
  for (const auto& [k, head] : OnnxHeads())
    if (k == kind) return &head;
  return nullptr;
}

std::string WriteOnnxMlp(GraphBuilder& b, const ExportedModel& m, const std::string& input, size_t hidden_layers,
                         bool batch_norm, float batch_norm_epsilon, const std::string& hidden_scope,
                         const std::string& bn_scope, const std::string& out_scope) {
  std::string x = input;
  const size_t L = hidden_layers;
  for (size_t i = 0; i <= L; ++i) {
    if (i == L && out_scope.empty()) break;
    const std::string scope = i < L ? hidden_scope + std::to_string(i) : out_scope;
    const ExportTensor* wt = m.Find(scope + "/weights");
    b.Float(wt->name, wt->shape, wt->value.data());
    b.Float(scope + "/biases", Need(m, scope + "/biases"));
    b.Node("Gemm", {x, scope + "/weights", scope + "/biases"}, scope + "/linear");
    x = scope + "/linear";
    if (i == L) break;
    b.Node("Relu", {x}, scope + "/relu");
    x = scope + "/relu";
    if (batch_norm) {
      const std::string bn = bn_scope + std::to_string(i);
      const std::vector<float>& gamma = Need(m, bn + "/gamma");
      const std::vector<float>& var = Need(m, bn + "/moving_variance");
      std::vector<float> scale(gamma.size());
      // As BatchNormForwardInference computes it (model/layers/batch_norm.cc).
      for (size_t j = 0; j < scale.size(); ++j) scale[j] = gamma[j] / std::sqrt(var[j] + batch_norm_epsilon);
      b.Node("Sub", {x, b.Float(bn + "/moving_mean", Need(m, bn + "/moving_mean"))}, bn + "/centered");
      b.Node("Mul", {bn + "/centered", b.Float(bn + "/scale", scale)}, bn + "/scaled");
      b.Node("Add", {bn + "/scaled", b.Float(bn + "/beta", Need(m, bn + "/beta"))}, bn + "/output");
      x = bn + "/output";
    }
  }
  return x;
}

StatusOr<ExternalData> ParseExternalData(const std::string& text) {
  if (text == "auto") return ExternalData::kAuto;
  if (text == "always") return ExternalData::kAlways;
  if (text == "never") return ExternalData::kNever;
  return InvalidArgumentError("external data must be auto, always or never, got '" + text + "'");
}

StatusOr<OnnxExportResult> ExportOnnx(const ExportedModel& m, const std::string& path,
                                      const OnnxExportOptions& options) {
  // The shared part below (inputs, first-order term, embeddings), then the kind's head (onnx_heads.h).
  const OnnxHead* head = FindOnnxHead(m.config.kind);
  if (head == nullptr)
    return UnimplementedError(m.checkpoint_path + ": ONNX export of model kind '" + m.config.kind +
                              "' is not available (ctrain export writes graphs for " + OnnxHeadKinds() + ")");
  if (m.multi_hot_input && !options.multi_hot)
    return FailedPreconditionError(m.checkpoint_path +
                                   ": the model was trained through a feature spec with multi-hot fields (meta "
                                   "data.feature_spec); export it with --multi-hot (ids and values [batch, F, "
                                   "ids_per_field]): the one-hot [batch, F] graph cannot take its rows");
  const model::DeepFMConfig& c = m.config;
  const int64_t F = c.field_size, K = c.embedding_size;
  int64_t param_bytes = 0;
  for (const ExportTensor& t : m.tensors) param_bytes += t.num_elements() * static_cast<int64_t>(sizeof(float));
  bool external = options.external_data == ExternalData::kAlways;
  if (options.external_data == ExternalData::kAuto) external = param_bytes > kExternalDataAutoBytes;
  if (!external && param_bytes > kProtobufLimitBytes - (int64_t{64} << 20))
    return InvalidArgumentError(path + ": the model's parameters take " + std::to_string(param_bytes) +
                                " bytes, more than one protobuf message can hold (2 GiB): use external data");

  OnnxExportResult result;
  result.model_path = path;
  const std::string data_path = path + ".data";
  const std::string data_name = std::filesystem::path(data_path).filename().string();

  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("ctrain");
  model.set_domain("ai.ctrain");
  model.set_model_version(m.step);
  const std::string shape = options.multi_hot ? "[batch, F, ids_per_field]" : "[batch, F]";
  model.set_doc_string("ctrain " + DescribeModel(m) + ". Inputs: ids int64" + shape +
                       (m.keyed ? " (keys, built as metadata ctrain.data describes: a keyed table maps each to its row, "
                                  "an unknown key to a zero row; the first num_dense_fields fields carry ids 0..N-1)"
                       : c.oov_buckets ? " (ids in [0, feature_size - F), built as metadata ctrain.data describes; "
                                         "an id at or above feature_size - F reads its field's out-of-vocabulary "
                                         "row)"
                                       : " (model ids in [0, feature_size), built as metadata ctrain.data describes)") +
                       ", values float32" +
                       shape +
                       (options.multi_hot ? " (a field's embedding is the values-weighted sum of its ids' rows; "
                                            "pad with any valid id and value 0)"
                                          : "") +
                       ". Output: prediction float32[batch] = sigmoid(logit), the click probability.");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpsetVersion);
  auto meta = [&model](const std::string& k, const std::string& v) {
    onnx::StringStringEntryProto* e = model.add_metadata_props();
    e->set_key(k);
    e->set_value(v);
  };
  meta("ctrain.model", train::ModelConfigToJson(c).dump());
  meta("ctrain.data", m.data_source.dump());
  meta("ctrain.checkpoint", m.checkpoint_path);
  meta("ctrain.step", std::to_string(m.step));

  onnx::GraphProto* g = model.mutable_graph();
  g->set_name(c.kind);
  GraphBuilder b(g, external, data_name);
  const std::vector<int64_t> in_dims = options.multi_hot ? std::vector<int64_t>{-1, F, -2} : std::vector<int64_t>{-1, F};
  b.Input("ids", onnx::TensorProto::INT64, in_dims);
  b.Input("values", onnx::TensorProto::FLOAT, in_dims);
  std::vector<std::string> terms;  // summed into the logit, after the bias
  const std::string axis1 = b.Int64s("axes_1", {1});
  // The rows the tables are gathered at: the ids themselves, or for a keyed table each key's row through
  // ONNX-ML's LabelEncoder (the keys' sorted array, unknown keys -> the zero row D); the numeric fields' ids
  // [0, D) are rows already and are sliced around it.
  std::string rows = "ids";
  if (m.keyed) {
    const int64_t D = c.num_dense_fields;
    std::vector<int64_t> values(m.keys.size());
    for (size_t i = 0; i < values.size(); ++i) values[i] = D + 1 + static_cast<int64_t>(i);
    std::string keyed_ids = "ids";
    if (D > 0) {
      b.Node("Slice", {"ids", b.Int64s("keyed/zero", {0}), b.Int64s("keyed/d", {D}), axis1}, "keyed/numeric_ids");
      b.Node("Slice", {"ids", b.Int64s("keyed/d_start", {D}), b.Int64s("keyed/f", {F}), axis1}, "keyed/key_ids");
      keyed_ids = "keyed/key_ids";
    }
    onnx::NodeProto* enc = b.Node("LabelEncoder", {keyed_ids}, D > 0 ? "keyed/key_rows" : "keyed/rows");
    enc->set_domain("ai.onnx.ml");
    GraphBuilder::IntsAttr(enc, "keys_int64s", m.keys);
    GraphBuilder::IntsAttr(enc, "values_int64s", values);
    GraphBuilder::IntAttr(enc, "default_int64", D);
    if (D > 0)
      GraphBuilder::IntAttr(b.Node("Concat", {"keyed/numeric_ids", "keyed/key_rows"}, "keyed/rows"), "axis", 1);
    rows = "keyed/rows";
    onnx::OperatorSetIdProto* ml = model.add_opset_import();
    ml->set_domain("ai.onnx.ml");
    ml->set_version(2);
  } else if (c.oov_buckets) {
    // --oov bucket: an id at or above the vocabulary V reads field f's out-of-vocabulary row V + f, as the
    // readers map it (data::IdRange).
    const int64_t V = c.vocabulary_size();
    std::vector<int64_t> oov_rows(F);
    for (int32_t f = 0; f < F; ++f) oov_rows[f] = V + f;
    std::string oov = b.Int64s("oov/rows", oov_rows);  // [F]; multi-hot ids [batch, F, M] take it as [F, 1]
    if (options.multi_hot) oov = b.Node("Unsqueeze", {oov, axis1}, "oov/rows_per_field")->output(0);
    b.Node("Less", {"ids", b.Int64s("oov/vocabulary_size", {V})}, "oov/in_vocabulary");
    b.Node("Where", {"oov/in_vocabulary", "ids", oov}, "oov/ids");
    rows = "oov/ids";
  }

  if (c.reads_w()) {
    const ExportTensor* w = m.Find("embeddings/w");
    b.Float(w->name, {m.table_rows()}, w->value.data());
    b.Node("Gather", {"embeddings/w", rows}, "first_order/w_rows");
    b.Node("Mul", {"first_order/w_rows", "values"}, "first_order/wx");
    const std::string axes = options.multi_hot ? b.Int64s("axes_1_2", {1, 2}) : axis1;
    GraphBuilder::IntAttr(b.Node("ReduceSum", {"first_order/wx", axes}, "y_first"), "keepdims", 0);
    terms.push_back("y_first");
  }
  if (c.reads_v()) {
    const ExportTensor* v = m.Find("embeddings/V");
    b.Float(v->name, {m.table_rows(), K}, v->value.data());
    if (!options.multi_hot) {
      b.Node("Gather", {"embeddings/V", rows}, "embedding/v_rows");  // [batch, F, K]
      b.Node("Unsqueeze", {"values", b.Int64s("axes_2", {2})}, "embedding/values3");
      b.Node("Mul", {"embedding/v_rows", "embedding/values3"}, "embedding/e");
    } else {  // sum pooling (model/layers/pooled_embedding.h)
      b.Node("Gather", {"embeddings/V", rows}, "embedding/v_rows");  // [batch, F, ids_per_field, K]
      b.Node("Unsqueeze", {"values", b.Int64s("axes_3", {3})}, "embedding/values4");
      b.Node("Mul", {"embedding/v_rows", "embedding/values4"}, "embedding/weighted");
      GraphBuilder::IntAttr(b.Node("ReduceSum", {"embedding/weighted", b.Int64s("axes_2", {2})}, "embedding/e"),
                            "keepdims", 0);  // [batch, F, K]
    }
  }
  CTRAIN_RETURN_IF_ERROR(head->write(b, m, &terms));
  b.Float(head->bias, Need(m, head->bias));
  std::string sum = head->bias;
  for (const std::string& t : terms) {
    const std::string out = "logit/+" + t;
    b.Node("Add", {sum, t}, out);
    sum = out;
  }
  b.Node("Identity", {sum}, "logit");
  b.Node("Sigmoid", {"logit"}, "prediction");
  b.Output("prediction", onnx::TensorProto::FLOAT, {-1});
  result.nodes = g->node_size();

  if (external) {
    CTRAIN_RETURN_IF_ERROR(WriteExternalData(data_path, b.external_pieces()));
    result.external_data_path = data_path;
    result.external_bytes = b.external_bytes();
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return InternalError(path + ": protobuf could not serialize the ONNX model");
  result.model_bytes = static_cast<int64_t>(bytes.size());
  CTRAIN_RETURN_IF_ERROR(io::WriteStringToFileAtomic(path, bytes));
  if (options.check) {
    try {
      onnx::checker::check_model(path);
    } catch (const std::exception& e) {
      return InternalError(path + ": onnx checker: " + e.what());
    }
  }
  return result;
}

}  // namespace ctrain::exporter
