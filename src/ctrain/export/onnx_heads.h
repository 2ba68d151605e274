// Each model kind's part of the ONNX graph (export/onnx_export.h): its "head"
// over what every graph shares, as model/embedding_model.h splits the model.
// ExportOnnx writes the inputs, "y_first" (when config.reads_w()) and
// "embedding/e" [batch, F, K] (when config.reads_v()), calls the kind's head
// writer, and sums "<bias>" + y_first + the head's terms into the logit. The
// int64 initializer "axes_1" ({1}) exists for the heads to use.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/export/exported_model.h"
#include "ctrain/export/onnx_graph.h"

namespace ctrain::exporter {

struct OnnxHead {
  // The dense bias parameter the logit starts from ("fm_bias" for DeepFM's kinds).
  std::string bias;
  // Adds the head's nodes and initializers; appends the names of its logit terms ([batch] each) to *terms.
  // Errors: a tensor the config implies is missing (DataLoss), a setting the graph cannot express (Unimplemented).
  Status (*write)(GraphBuilder& b, const ExportedModel& m, std::vector<std::string>* terms);
};

// The head writer of `kind`, or null when ONNX export does not cover it.
const OnnxHead* FindOnnxHead(std::string_view kind);

// DeepFM and the kinds on its code (deepfm, lr, fm, wide_deep): onnx_deepfm.cc.
Status WriteDeepFmHead(GraphBuilder& b, const ExportedModel& m, std::vector<std::string>* terms);
// DCN and DCN-V2 (dcn, dcn_v2; bias "output/biases"): onnx_dcn.cc.
Status WriteDcnHead(GraphBuilder& b, const ExportedModel& m, std::vector<std::string>* terms);

// xDeepFM (bias "bias"; the CIN and the DNN): onnx_xdeepfm.cc.
Status WriteXDeepFmHead(GraphBuilder& b, const ExportedModel& m, std::vector<std::string>* terms);

// DLRM (model/dlrm.h): bottom MLP over the dense values, the dot interaction, the top MLP: onnx_dlrm.cc.
Status WriteDlrmHead(GraphBuilder& b, const ExportedModel& m, std::vector<std::string>* terms);

}  // namespace ctrain::exporter
