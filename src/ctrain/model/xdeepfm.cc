#include "ctrain/model/xdeepfm.h"

#include <utility>

namespace ctrain::model {

XDeepFM::XDeepFM(ModelConfig config) : EmbeddingModel(std::move(config), "bias", true, true) {
  if (!status_.ok()) return;
  if (config_.kind != "xdeepfm") {
    status_ = InvalidArgumentError("XDeepFM implements xdeepfm, not '" + config_.kind + "'");
    return;
  }
  CinSpec cin;
  cin.fields = config_.field_size;
  cin.embedding_size = config_.embedding_size;
  cin.units = config_.cin_layer_units;
  cin.gemm_dtype = config_.gemm_dtype;
  cin_ = Cin(std::move(cin), &dense_);
  has_dnn_ = !config_.deep_layers.empty();
  if (has_dnn_) {
    MlpSpec spec =
        MlpSpecOf(config_, static_cast<int64_t>(config_.field_size) * config_.embedding_size, config_.deep_layers, 1);
    spec.hidden_scope = "dnn";
    spec.bn_scope = "dnn_bn_";
    spec.out_scope = "dnn_out";
    dnn_ = Mlp(std::move(spec), &dense_, &state_);
  }
  InitDense(config_.seed);
}

double XDeepFM::GemmFlopsPerExample() const {
  return cin_.GemmFlopsPerExample() + (has_dnn_ ? dnn_.GemmFlopsPerExample() : 0.0);
}

Status XDeepFM::ResizeHead(int64_t B) {
  CTRAIN_RETURN_IF_ERROR(cin_.Resize(B));
  if (has_dnn_) CTRAIN_RETURN_IF_ERROR(dnn_.Resize(B));
  return Status::OK();
}

void XDeepFM::HeadForward(const HeadInput& in, bool training, int64_t step, float* logits) {
  y_cin_ = cin_.Forward(in.B, in.e);
  if (has_dnn_) y_dnn_ = dnn_.Forward(in.B, in.e, training, config_.seed, step);
  for (int64_t b = 0; b < in.B; ++b) logits[b] += y_cin_[b] + (has_dnn_ ? y_dnn_[b] : 0.0f);
}

void XDeepFM::HeadBackward(const HeadInput& in, const float* d_logits, float* d_e) {
  if (has_dnn_) dnn_.Backward(in.B, d_logits, d_e);
  cin_.Backward(in.B, d_logits, /*accumulate=*/has_dnn_, d_e);
}

}  // namespace ctrain::model
