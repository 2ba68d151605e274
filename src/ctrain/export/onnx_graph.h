// The ONNX graph writer's private pieces (export/onnx_export.h): a builder of
// nodes and initializers, and what every model's graph shares (the MLP). Each
// model kind's head is written by an OnnxHeadWriter (onnx_heads.h).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ctrain/export/exported_model.h"
#include "ctrain/export/onnx_export.h"

namespace ctrain::exporter {

inline constexpr int64_t kExternalAlign = 4096;  // offsets of external tensors (page aligned for mmap)
inline constexpr const char* kBatchDim = "batch";              // dims given as -1
inline constexpr const char* kIdsPerFieldDim = "ids_per_field";  // dims given as -2 (multi-hot inputs)

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
  std::string Int64s(const std::string& name, const std::vector<int64_t>& v) {
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

  static void IntsAttr(onnx::NodeProto* n, const char* name, const std::vector<int64_t>& v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
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

inline const std::vector<float>& Need(const ExportedModel& m, const std::string& name) {
  // LoadModelForExport guarantees every tensor the config implies.
  return m.Find(name)->value;
}

// Writes an Mlp (model/layers/mlp.h) in inference mode over `x` [batch, in]: per hidden layer
// Gemm -> Relu -> [batch norm as scale/shift]; then, when `out_scope` is not empty, Gemm(out_scope).
// Names as the checkpoint's: "<hidden_scope><i>/weights", "<bn_scope><i>/gamma", "<out_scope>/weights".
// Returns the output's name ([batch, out]).
std::string WriteOnnxMlp(GraphBuilder& b, const ExportedModel& m, const std::string& x, size_t hidden_layers,
                         bool batch_norm, float batch_norm_epsilon, const std::string& hidden_scope = "mlp",
                         const std::string& bn_scope = "bn_", const std::string& out_scope = "deep_out");

}  // namespace ctrain::exporter
