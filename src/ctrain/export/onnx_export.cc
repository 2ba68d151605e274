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

#include "ctrain/io/file.h"
#include "ctrain/train/train_config.h"

namespace ctrain::exporter {

namespace {

constexpr int64_t kIrVersion = 8;   // ONNX 1.12's IR_VERSION
constexpr int64_t kOpsetVersion = 13;
constexpr int64_t kProtobufLimitBytes = (int64_t{1} << 31) - 1;
constexpr int64_t kExternalAlign = 4096;  // offsets of external tensors (page aligned for mmap)
constexpr const char* kBatchDim = "batch";              // dims given as -1
constexpr const char* kIdsPerFieldDim = "ids_per_field";  // dims given as -2 (multi-hot inputs)

// Builds the graph: names values, adds nodes and initializers.
class GraphBuilder {
 public:
  GraphBuilder(onnx::GraphProto* g, bool external, std::string data_file_name)
      : g_(g), external_(external), data_file_name_(std::move(data_file_name)) {}

  // A float initializer. Large ones go to the external data file when enabled.
  const std::string& Float(const std::string& name, const std::vector<int64_t>& shape, const float* data) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : shape) {
      t->add_dims(d);
      n *= d;
    }
    const int64_t bytes = n * static_cast<int64_t>(sizeof(float));
    if (external_ && bytes >= kExternalDataMinBytes) {
      const int64_t offset = (external_bytes_ + kExternalAlign - 1) / kExternalAlign * kExternalAlign;
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      auto add = [t](const char* k, const std::string& v) {
        onnx::StringStringEntryProto* e = t->add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      add("location", data_file_name_);
      add("offset", std::to_string(offset));
      add("length", std::to_string(bytes));
      pieces_.push_back({offset, data, bytes});
      external_bytes_ = offset + bytes;
    } else {
      // raw_data is little-endian, as on x86-64.
      t->set_raw_data(data, static_cast<size_t>(bytes));
    }
    return t->name();
  }
  std::string Float(const std::string& name, const std::vector<float>& v) {
    return Float(name, {static_cast<int64_t>(v.size())}, v.data());
  }
  std::string Int64s(const std::string& name, std::initializer_list<int64_t> v) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return name;
  }
  std::string Scalar(const std::string& name, float v) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(v);
    return name;
  }

  // Adds node `op` with `inputs`; its single output is named `out`.
  onnx::NodeProto* Node(const std::string& op, std::vector<std::string> inputs, const std::string& out) {
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (std::string& i : inputs) n->add_input(std::move(i));
    n->add_output(out);
    return n;
  }
  static void IntAttr(onnx::NodeProto* n, const char* name, int64_t v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }

  void Input(const std::string& name, int32_t elem_type, std::vector<int64_t> dims) { Value(g_->add_input(), name, elem_type, dims); }
  void Output(const std::string& name, int32_t elem_type, std::vector<int64_t> dims) { Value(g_->add_output(), name, elem_type, dims); }

  struct ExternalPiece {
    int64_t offset;
    const float* data;
    int64_t bytes;
  };
  const std::vector<ExternalPiece>& external_pieces() const { return pieces_; }
  int64_t external_bytes() const { return external_bytes_; }

 private:
  // dims: -1 = the symbolic batch dimension, -2 = ids per field.
  static void Value(onnx::ValueInfoProto* v, const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    for (int64_t d : dims) {
      onnx::TensorShapeProto_Dimension* dim = t->mutable_shape()->add_dim();
      if (d < 0) dim->set_dim_param(d == -1 ? kBatchDim : kIdsPerFieldDim);
      else dim->set_dim_value(d);
    }
  }

  onnx::GraphProto* g_;
  bool external_;
  std::string data_file_name_;
  std::vector<ExternalPiece> pieces_;
  int64_t external_bytes_ = 0;
};

const std::vector<float>& Need(const ExportedModel& m, const std::string& name) {
  // LoadModelForExport guarantees every tensor the config implies.
  return m.Find(name)->value;
}

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

}  // namespace

StatusOr<ExternalData> ParseExternalData(const std::string& text) {
  if (text == "auto") return ExternalData::kAuto;
  if (text == "always") return ExternalData::kAlways;
  if (text == "never") return ExternalData::kNever;
  return InvalidArgumentError("external data must be auto, always or never, got '" + text + "'");
}

StatusOr<OnnxExportResult> ExportOnnx(const ExportedModel& m, const std::string& path,
                                      const OnnxExportOptions& options) {
  // The graph below is DeepFM's forward pass; a model of another kind needs its own graph writer.
  if (m.config.kind != "deepfm")
    return UnimplementedError(m.checkpoint_path + ": ONNX export of model kind '" + m.config.kind +
                              "' is not available (the ONNX graph is written for deepfm)");
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
                       " (model ids in [0, feature_size), built as metadata ctrain.data describes), values float32" +
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
  g->set_name("deepfm");
  GraphBuilder b(g, external, data_name);
  const std::vector<int64_t> in_dims = options.multi_hot ? std::vector<int64_t>{-1, F, -2} : std::vector<int64_t>{-1, F};
  b.Input("ids", onnx::TensorProto::INT64, in_dims);
  b.Input("values", onnx::TensorProto::FLOAT, in_dims);

  std::vector<std::string> terms;  // summed into the logit, after fm_bias
  const std::string axis1 = b.Int64s("axes_1", {1});
  if (c.use_first_order) {
    const ExportTensor* w = m.Find("embeddings/w");
    b.Float(w->name, {c.feature_size}, w->value.data());
    b.Node("Gather", {"embeddings/w", "ids"}, "first_order/w_rows");
    b.Node("Mul", {"first_order/w_rows", "values"}, "first_order/wx");
    const std::string axes = options.multi_hot ? b.Int64s("axes_1_2", {1, 2}) : axis1;
    GraphBuilder::IntAttr(b.Node("ReduceSum", {"first_order/wx", axes}, "y_first"), "keepdims", 0);
    terms.push_back("y_first");
  }
  if (c.use_fm || c.use_deep) {
    const ExportTensor* v = m.Find("embeddings/V");
    b.Float(v->name, {c.feature_size, K}, v->value.data());
    if (!options.multi_hot) {
      b.Node("Gather", {"embeddings/V", "ids"}, "embedding/v_rows");  // [batch, F, K]
      b.Node("Unsqueeze", {"values", b.Int64s("axes_2", {2})}, "embedding/values3");
      b.Node("Mul", {"embedding/v_rows", "embedding/values3"}, "embedding/e");
    } else {  // sum pooling (model/layers/pooled_embedding.h)
      b.Node("Gather", {"embeddings/V", "ids"}, "embedding/v_rows");  // [batch, F, ids_per_field, K]
      b.Node("Unsqueeze", {"values", b.Int64s("axes_3", {3})}, "embedding/values4");
      b.Node("Mul", {"embedding/v_rows", "embedding/values4"}, "embedding/weighted");
      GraphBuilder::IntAttr(b.Node("ReduceSum", {"embedding/weighted", b.Int64s("axes_2", {2})}, "embedding/e"),
                            "keepdims", 0);  // [batch, F, K]
    }
  }
  if (c.use_fm) {
    GraphBuilder::IntAttr(b.Node("ReduceSum", {"embedding/e", axis1}, "fm/sum"), "keepdims", 0);  // [batch, K]
    b.Node("Mul", {"fm/sum", "fm/sum"}, "fm/sum_square");
    b.Node("Mul", {"embedding/e", "embedding/e"}, "fm/e_square");
    GraphBuilder::IntAttr(b.Node("ReduceSum", {"fm/e_square", axis1}, "fm/square_sum"), "keepdims", 0);
    b.Node("Sub", {"fm/sum_square", "fm/square_sum"}, "fm/diff");
    GraphBuilder::IntAttr(b.Node("ReduceSum", {"fm/diff", axis1}, "fm/half_sum"), "keepdims", 0);  // [batch]
    b.Node("Mul", {"fm/half_sum", b.Scalar("fm/one_half", 0.5f)}, "y_fm");
    terms.push_back("y_fm");
  }
  if (c.use_deep) {
    b.Node("Reshape", {"embedding/e", b.Int64s("deep/flat_shape", {0, F * K})}, "deep/input");  // [batch, F*K]
    std::string x = "deep/input";
    const size_t L = c.deep_layers.size();
    for (size_t i = 0; i <= L; ++i) {
      const std::string scope = i < L ? "mlp" + std::to_string(i) : std::string("deep_out");
      const ExportTensor* wt = m.Find(scope + "/weights");
      b.Float(wt->name, wt->shape, wt->value.data());
      b.Float(scope + "/biases", Need(m, scope + "/biases"));
      b.Node("Gemm", {x, scope + "/weights", scope + "/biases"}, scope + "/linear");
      x = scope + "/linear";
      if (i == L) break;
      b.Node("Relu", {x}, scope + "/relu");
      x = scope + "/relu";
      if (c.batch_norm) {
        const std::string bn = "bn_" + std::to_string(i);
        const std::vector<float>& gamma = Need(m, bn + "/gamma");
        const std::vector<float>& var = Need(m, bn + "/moving_variance");
        std::vector<float> scale(gamma.size());
        // As BatchNormForwardInference computes it (model/layers/batch_norm.cc).
        for (size_t j = 0; j < scale.size(); ++j) scale[j] = gamma[j] / std::sqrt(var[j] + c.batch_norm_epsilon);
        b.Node("Sub", {x, b.Float(bn + "/moving_mean", Need(m, bn + "/moving_mean"))}, bn + "/centered");
        b.Node("Mul", {bn + "/centered", b.Float(bn + "/scale", scale)}, bn + "/scaled");
        b.Node("Add", {bn + "/scaled", b.Float(bn + "/beta", Need(m, bn + "/beta"))}, bn + "/output");
        x = bn + "/output";
      }
    }
    b.Node("Squeeze", {x, axis1}, "y_deep");
    terms.push_back("y_deep");
  }
  b.Float("fm_bias", Need(m, "fm_bias"));
  std::string sum = "fm_bias";
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
