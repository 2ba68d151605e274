// The ONNX head of DLRM (model/dlrm.h) over "embedding/e" [batch, F, K] and
// the "values" input (export/onnx_export.h draws the rest of the graph):
//   dense     = ReduceSum over the entries of values[:, :N]         [batch, N]
//               (one-hot graph: the value itself; --multi-hot graph: the
//               field's entries summed, padding of value 0 adds nothing;
//               ctrain trains dense fields with exactly one entry)
//   x         = the bottom Mlp (Gemm -> Relu -> [BN] per layer, K last)  [batch, K]
//   vectors   = Concat(x[:, None, :], e[:, N:, :])                  [batch, T, K]
//   zflat     = Gather(Reshape(MatMul(vectors, vectorsᵀ), [batch, T*T]),
//               the reference's pair order i*T + j, j < i)         [batch, P]
//   r         = Concat(x, zflat) (N > 0) or zflat                   [batch, R]
//   y_dlrm    = Squeeze(top Mlp(r))                                 [batch]
// MatMul computes all T*T dot products (the trainer computes the P distinct
// ones); every op is opset 13.
#include "ctrain/export/onnx_heads.h"

namespace ctrain::exporter {

Status WriteDlrmHead(GraphBuilder& b, const ExportedModel& m, std::vector<std::string>* terms) {
  const model::ModelConfig& c = m.config;
  const int64_t F = c.field_size, N = c.num_dense_fields;
  const int64_t T = F - N + (N > 0 ? 1 : 0);
  const std::string axis1 = "axes_1";  // written by ExportOnnx
  std::string x;                       // the bottom output [batch, K]
  std::string vectors = "dlrm/categorical";
  if (N < F) {
    b.Node("Slice", {"embedding/e", b.Int64s("dlrm/cat_starts", {N}), b.Int64s("dlrm/cat_ends", {F}), axis1},
           "dlrm/categorical");  // [batch, F - N, K]
  }
  if (N > 0) {
    b.Node("Slice", {"values", b.Int64s("dlrm/dense_starts", {0}), b.Int64s("dlrm/dense_ends", {N}), axis1},
           "dlrm/dense_values");  // [batch, N] or [batch, N, ids_per_field]
    b.Node("Reshape", {"dlrm/dense_values", b.Int64s("dlrm/dense_entries_shape", {0, N, -1})}, "dlrm/dense_entries");
    GraphBuilder::IntAttr(b.Node("ReduceSum", {"dlrm/dense_entries", b.Int64s("dlrm/axes_2", {2})}, "dlrm/dense"),
                          "keepdims", 0);  // [batch, N]
    x = WriteOnnxMlp(b, m, "dlrm/dense", c.bottom_mlp.size() + 1, c.batch_norm, c.batch_norm_epsilon, "bot_mlp",
                     "bot_bn_", /*out_scope=*/"");
    b.Node("Unsqueeze", {x, axis1}, "dlrm/bottom_vector");  // [batch, 1, K]
    if (N < F) {
      GraphBuilder::IntAttr(b.Node("Concat", {"dlrm/bottom_vector", "dlrm/categorical"}, "dlrm/vectors"), "axis", 1);
      vectors = "dlrm/vectors";
    } else {
      vectors = "dlrm/bottom_vector";
    }
  }
  std::string top_input = x;
  if (T >= 2) {
    onnx::NodeProto* tr = b.Node("Transpose", {vectors}, "dlrm/vectors_t");  // [batch, K, T]
    onnx::AttributeProto* perm = tr->add_attribute();
    perm->set_name("perm");
    perm->set_type(onnx::AttributeProto::INTS);
    for (int64_t p : {0, 2, 1}) perm->add_ints(p);
    b.Node("MatMul", {vectors, "dlrm/vectors_t"}, "dlrm/z");  // [batch, T, T]
    b.Node("Reshape", {"dlrm/z", b.Int64s("dlrm/z_flat_shape", {0, T * T})}, "dlrm/z_all");
    std::vector<int64_t> pairs;  // Z[i][j], j < i, row by row (model/layers/dot_interaction.h)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < i; ++j) pairs.push_back(i * T + j);
    GraphBuilder::IntAttr(b.Node("Gather", {"dlrm/z_all", b.Int64s("dlrm/pairs", pairs)}, "dlrm/zflat"), "axis", 1);
    if (N > 0) {
      GraphBuilder::IntAttr(b.Node("Concat", {x, "dlrm/zflat"}, "dlrm/top_input"), "axis", 1);
      top_input = "dlrm/top_input";
    } else {
      top_input = "dlrm/zflat";
    }
  }
  if (top_input.empty()) return UnimplementedError("dlrm: no input for the top MLP (num_dense_fields 0, field_size 1)");
  const std::string y = WriteOnnxMlp(b, m, top_input, c.top_mlp.size(), c.batch_norm, c.batch_norm_epsilon,
                                     "top_mlp", "top_bn_", "top_out");
  b.Node("Squeeze", {y, axis1}, "y_dlrm");
  terms->push_back("y_dlrm");
  return Status::OK();
}

}  // namespace ctrain::exporter
