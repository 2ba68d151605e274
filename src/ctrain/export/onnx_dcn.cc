// The ONNX head of dcn and dcn_v2 (model/dcn.h): the cross network over
// x0 = flatten("embedding/e"), the MLP (parallel over x0, stacked over x_L) and
// the output layer; "output/biases" is the logit's bias (onnx_heads.h).
// Standard opset-13 operators only (MatMul, Gemm, Mul, Add, Tanh, Softmax,
// Gather, Concat, Reshape, Squeeze).
#include <string>
#include <vector>

#include "ctrain/export/onnx_heads.h"
#include "ctrain/model/layers/cross_net.h"

namespace ctrain::exporter {
namespace {

// One mixture layer (layers/cross_net.h kMixture): returns x_{l+1}.
std::string WriteMixtureLayer(GraphBuilder& b, const ExportedModel& m, int32_t l, const std::string& x0,
                              const std::string& xl) {
  const model::ModelConfig& c = m.config;
  const int64_t D = static_cast<int64_t>(c.field_size) * c.embedding_size, r = c.low_rank, E = c.num_experts;
  const std::string s = "cross" + std::to_string(l);
  b.Node("MatMul", {xl, "cross_gate/weights"}, s + "/gate_logits");  // [batch, E]
  GraphBuilder::IntAttr(b.Node("Softmax", {s + "/gate_logits"}, s + "/gate"), "axis", 1);
  // Each expert's slices of the [E, ., .] tensors become initializers of their own.
  const std::vector<float>& V = Need(m, s + "/experts_v");
  const std::vector<float>& C = Need(m, s + "/experts_c");
  const std::vector<float>& U = Need(m, s + "/experts_u");
  const std::string bias = b.Float(s + "/biases", Need(m, s + "/biases"));
  std::string sum;
  for (int64_t e = 0; e < E; ++e) {
    const std::string x = s + "/expert" + std::to_string(e);
    b.Node("MatMul", {xl, b.Float(x + "/v", {D, r}, V.data() + e * D * r)}, x + "/v_x");
    b.Node("Tanh", {x + "/v_x"}, x + "/tanh_v_x");
    b.Node("MatMul", {x + "/tanh_v_x", b.Float(x + "/c", {r, r}, C.data() + e * r * r)}, x + "/c_x");
    b.Node("Tanh", {x + "/c_x"}, x + "/tanh_c_x");
    b.Node("MatMul", {x + "/tanh_c_x", b.Float(x + "/u", {r, D}, U.data() + e * r * D)}, x + "/u_x");
    b.Node("Add", {x + "/u_x", bias}, x + "/z");
    b.Node("Mul", {x0, x + "/z"}, x + "/out");  // E_e(x_l) [batch, D]
    GraphBuilder::IntAttr(b.Node("Gather", {s + "/gate", b.Int64s(x + "/index", {e})}, x + "/p"), "axis", 1);
    b.Node("Mul", {x + "/out", x + "/p"}, x + "/weighted");  // p_e [batch, 1] broadcast
    if (sum.empty()) {
      sum = x + "/weighted";
    } else {
      b.Node("Add", {sum, x + "/weighted"}, x + "/sum");
      sum = x + "/sum";
    }
  }
  b.Node("Add", {sum, xl}, s + "/output");
  return s + "/output";
}

// The cross network over x0 [batch, D]: returns x_L.
Status WriteCrossNet(GraphBuilder& b, const ExportedModel& m, const std::string& x0, std::string* out) {
  const model::ModelConfig& c = m.config;
  const model::CrossKind kind = model::CrossKindOf(c);
  if (kind == model::CrossKind::kMixture && c.cross_layers > 0) {
    const ExportTensor* g = m.Find("cross_gate/weights");
    b.Float(g->name, g->shape, g->value.data());
  }
  std::string x = x0;
  for (int32_t l = 0; l < c.cross_layers; ++l) {
    const std::string s = "cross" + std::to_string(l);
    if (kind == model::CrossKind::kMixture) {
      x = WriteMixtureLayer(b, m, l, x0, x);
      continue;
    }
    auto weight = [&](const std::string& name) {
      const ExportTensor* t = m.Find(name);
      return b.Float(t->name, t->shape, t->value.data());
    };
    const std::string bias = b.Float(s + "/biases", Need(m, s + "/biases"));
    if (kind == model::CrossKind::kVector) {  // x0 * (x_l · w) + b + x_l
      b.Node("MatMul", {x, weight(s + "/weights")}, s + "/dot");  // [batch, 1]
      b.Node("Mul", {x0, s + "/dot"}, s + "/cross");
      b.Node("Add", {s + "/cross", bias}, s + "/cross_b");
    } else {  // x0 ⊙ (x_l W + b) + x_l, W = V U when low rank
      if (kind == model::CrossKind::kMatrix) {
        b.Node("Gemm", {x, weight(s + "/weights"), bias}, s + "/z");
      } else {
        b.Node("MatMul", {x, weight(s + "/v/weights")}, s + "/v_x");
        b.Node("Gemm", {s + "/v_x", weight(s + "/u/weights"), bias}, s + "/z");
      }
      b.Node("Mul", {x0, s + "/z"}, s + "/cross_b");
    }
    b.Node("Add", {s + "/cross_b", x}, s + "/output");
    x = s + "/output";
  }
  *out = x;
  return Status::OK();
}

}  // namespace

Status WriteDcnHead(GraphBuilder& b, const ExportedModel& m, std::vector<std::string>* terms) {
  const model::ModelConfig& c = m.config;
  const int64_t D = static_cast<int64_t>(c.field_size) * c.embedding_size;
  b.Node("Reshape", {"embedding/e", b.Int64s("cross/flat_shape", {0, D})}, "cross/x0");  // [batch, D]
  std::string xl;
  CTRAIN_RETURN_IF_ERROR(WriteCrossNet(b, m, "cross/x0", &xl));
  const bool deep = !c.deep_layers.empty(), stacked = c.model_structure == "stacked";
  std::string h = xl;
  if (deep) {
    const std::string mlp = WriteOnnxMlp(b, m, stacked ? xl : "cross/x0", c.deep_layers.size(), c.batch_norm,
                                         c.batch_norm_epsilon, "mlp", "bn_", /*out_scope=*/"");
    if (stacked) {
      h = mlp;
    } else {
      GraphBuilder::IntAttr(b.Node("Concat", {xl, mlp}, "output/input"), "axis", 1);  // [batch, D + H]
      h = "output/input";
    }
  }
  const ExportTensor* w = m.Find("output/weights");
  b.Float(w->name, w->shape, w->value.data());
  b.Node("MatMul", {h, "output/weights"}, "output/linear");  // [batch, 1]
  b.Node("Squeeze", {"output/linear", "axes_1"}, "y_dcn");
  terms->push_back("y_dcn");
  return Status::OK();
}

}  // namespace ctrain::exporter
