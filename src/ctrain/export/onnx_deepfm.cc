// The ONNX head of DeepFM and the kinds on its code (lr, fm, wide_deep):
// y_fm and y_deep over "embedding/e" (export/onnx_export.h draws the graph).
#include "ctrain/export/onnx_heads.h"

namespace ctrain::exporter {

Status WriteDeepFmHead(GraphBuilder& b, const ExportedModel& m, std::vector<std::string>* terms) {
  const model::ModelConfig& c = m.config;
  const model::DeepFmTerms t = model::DeepFmTermsOf(c);
  const int64_t F = c.field_size, K = c.embedding_size;
  const std::string axis1 = "axes_1";  // written by ExportOnnx
  if (t.fm) {
    GraphBuilder::IntAttr(b.Node("ReduceSum", {"embedding/e", axis1}, "fm/sum"), "keepdims", 0);  // [batch, K]
    b.Node("Mul", {"fm/sum", "fm/sum"}, "fm/sum_square");
    b.Node("Mul", {"embedding/e", "embedding/e"}, "fm/e_square");
    GraphBuilder::IntAttr(b.Node("ReduceSum", {"fm/e_square", axis1}, "fm/square_sum"), "keepdims", 0);
    b.Node("Sub", {"fm/sum_square", "fm/square_sum"}, "fm/diff");
    GraphBuilder::IntAttr(b.Node("ReduceSum", {"fm/diff", axis1}, "fm/half_sum"), "keepdims", 0);  // [batch]
    b.Node("Mul", {"fm/half_sum", b.Scalar("fm/one_half", 0.5f)}, "y_fm");
    terms->push_back("y_fm");
  }
  if (t.deep) {
    b.Node("Reshape", {"embedding/e", b.Int64s("deep/flat_shape", {0, F * K})}, "deep/input");  // [batch, F*K]
    const std::string x =
        WriteOnnxMlp(b, m, "deep/input", c.deep_layers.size(), c.batch_norm, c.batch_norm_epsilon);
    b.Node("Squeeze", {x, axis1}, "y_deep");
    terms->push_back("y_deep");
  }
  return Status::OK();
}

}  // namespace ctrain::exporter
