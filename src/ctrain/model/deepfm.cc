#include "ctrain/model/deepfm.h"

#include <utility>

#include "ctrain/model/layers/fm_interaction.h"

namespace ctrain::model {

DeepFM::DeepFM(DeepFMConfig config)
    : EmbeddingModel(config, "fm_bias", config.reads_w(), config.reads_v()),
      terms_(DeepFmTermsOf(config_)) {
  if (!status_.ok()) return;
  if (!IsDeepFmKind(config_.kind)) {
    status_ = InvalidArgumentError("DeepFM implements deepfm, lr, fm and wide_deep, not '" + config_.kind + "'");
    return;
  }
  if (terms_.deep) {
    mlp_ = Mlp(MlpSpecOf(config_, static_cast<int64_t>(config_.field_size) * config_.embedding_size,
                         config_.deep_layers, 1),
               &dense_, &state_);
  }
  InitDense(config_.seed);
}

double DeepFM::GemmFlopsPerExample() const { return terms_.deep ? mlp_.GemmFlopsPerExample() : 0.0; }

Status DeepFM::ResizeHead(int64_t B) {
  if (terms_.deep) CTRAIN_RETURN_IF_ERROR(mlp_.Resize(B));
  if (B == batch_size_) return Status::OK();
  batch_size_ = B;
  if (terms_.fm) {
    fm_sum_.assign(B * config_.embedding_size, 0.0f);
    y_fm_.assign(B, 0.0f);
  }
  return Status::OK();
}

void DeepFM::HeadForward(const HeadInput& in, bool training, int64_t step, float* logits) {
  if (terms_.fm) FmInteractionForward(in.B, in.F, in.K, in.e, fm_sum_.data(), y_fm_.data());
  if (terms_.deep) y_deep_ = mlp_.Forward(in.B, in.e, training, config_.seed, step);
  for (int64_t b = 0; b < in.B; ++b) {
    float s = logits[b];
    if (terms_.fm) s += y_fm_[b];
    if (terms_.deep) s += y_deep_[b];
    logits[b] = s;
  }
}

void DeepFM::HeadBackward(const HeadInput& in, const float* d_logits, float* d_e) {
  if (terms_.deep) mlp_.Backward(in.B, d_logits, d_e);
  if (terms_.fm) FmInteractionBackward(in.B, in.F, in.K, in.e, fm_sum_.data(), d_logits, /*accumulate=*/terms_.deep, d_e);
}

}  // namespace ctrain::model
