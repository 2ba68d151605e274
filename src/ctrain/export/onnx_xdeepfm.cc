// The ONNX head of xDeepFM (model/xdeepfm.h): y_cin and y_dnn over "embedding/e" [batch, F, K]
// (export/onnx_export.h draws the rest: the inputs, y_first, the bias and the sum). The CIN in
// FuxiCTR's layout, X^k as [batch, H_k, K] (H_0 = F, X^0 = e), with the checkpoint's
// cin{k}/weights [F*H_{k-1}, H_k] (layers/cin.h) transposed by a Transpose node:
//   Z^k   = Reshape(Unsqueeze(e, 2) * Unsqueeze(X^{k-1}, 1), [0, F*H_{k-1}, K])   [batch, F*H_{k-1}, K]
//   X^k   = MatMul(Transpose(W^k), Z^k) + Unsqueeze(c^k, 1)                       [batch, H_k, K]
//   p^k   = ReduceSum(X^k, axis 2)                                                [batch, H_k]
//   y_cin = Squeeze(Gemm(Concat(p^1..p^L), cin_out/weights, cin_out/biases))      [batch]
// The DNN (absent when deep_layers is empty) is WriteOnnxMlp over Reshape(e, [0, F*K]) with the
// scopes dnn / dnn_bn_ / dnn_out.
#include <string>
#include <vector>

#include "ctrain/export/onnx_heads.h"

namespace ctrain::exporter {

Status WriteXDeepFmHead(GraphBuilder& b, const ExportedModel& m, std::vector<std::string>* terms) {
  const model::ModelConfig& c = m.config;
  const int64_t F = c.field_size, K = c.embedding_size;
  const std::string axis1 = "axes_1";  // written by ExportOnnx
  if (c.cin_layer_units.empty()) return UnimplementedError("xdeepfm without CIN layers (cin_layer_units is empty)");
  const std::string axis2 = b.Int64s("cin/axes_2", {2});
  b.Node("Unsqueeze", {"embedding/e", axis2}, "cin/x0");  // [batch, F, 1, K]
  std::string prev = "embedding/e";
  int64_t Hp = F;
  std::vector<std::string> pooled;
  for (size_t k = 0; k < c.cin_layer_units.size(); ++k) {
    const std::string s = "cin" + std::to_string(k);
    const ExportTensor* w = m.Find(s + "/weights");
    if (w == nullptr) return DataLossError("xdeepfm: tensor '" + s + "/weights' is missing");
    b.Float(w->name, w->shape, w->value.data());
    b.Float(s + "/biases", Need(m, s + "/biases"));
    b.Node("Unsqueeze", {prev, axis1}, s + "/prev");                              // [batch, 1, Hp, K]
    b.Node("Mul", {"cin/x0", s + "/prev"}, s + "/outer");                          // [batch, F, Hp, K]
    b.Node("Reshape", {s + "/outer", b.Int64s(s + "/z_shape", {0, F * Hp, K})}, s + "/z");
    b.Node("Transpose", {s + "/weights"}, s + "/weights_t");                       // [H, F*Hp]
    b.Node("MatMul", {s + "/weights_t", s + "/z"}, s + "/matmul");                 // [batch, H, K]
    b.Node("Unsqueeze", {s + "/biases", axis1}, s + "/bias_col");                  // [H, 1]
    b.Node("Add", {s + "/matmul", s + "/bias_col"}, s + "/x");
    GraphBuilder::IntAttr(b.Node("ReduceSum", {s + "/x", b.Int64s(s + "/axes_2", {2})}, s + "/pooled"), "keepdims", 0);
    pooled.push_back(s + "/pooled");
    prev = s + "/x";
    Hp = c.cin_layer_units[k];
  }
  GraphBuilder::IntAttr(b.Node("Concat", pooled, "cin/pooled"), "axis", 1);  // [batch, sum H]
  const ExportTensor* ow = m.Find("cin_out/weights");
  if (ow == nullptr) return DataLossError("xdeepfm: tensor 'cin_out/weights' is missing");
  b.Float(ow->name, ow->shape, ow->value.data());
  b.Float("cin_out/biases", Need(m, "cin_out/biases"));
  b.Node("Gemm", {"cin/pooled", "cin_out/weights", "cin_out/biases"}, "cin_out/linear");  // [batch, 1]
  b.Node("Squeeze", {"cin_out/linear", axis1}, "y_cin");
  terms->push_back("y_cin");
  if (!c.deep_layers.empty()) {
    b.Node("Reshape", {"embedding/e", b.Int64s("dnn/flat_shape", {0, F * K})}, "dnn/input");  // [batch, F*K]
    const std::string x = WriteOnnxMlp(b, m, "dnn/input", c.deep_layers.size(), c.batch_norm, c.batch_norm_epsilon,
                                       "dnn", "dnn_bn_", "dnn_out");
    b.Node("Squeeze", {x, axis1}, "y_dnn");
    terms->push_back("y_dnn");
  }
  return Status::OK();
}

}  // namespace ctrain::exporter
