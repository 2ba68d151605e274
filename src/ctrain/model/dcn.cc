#include "ctrain/model/dcn.h"

#include <utility>

namespace ctrain::model {

DCN::DCN(ModelConfig config) : EmbeddingModel(std::move(config), "output/biases", false, true) {
  if (!status_.ok()) return;
  if (config_.kind != "dcn" && config_.kind != "dcn_v2") {
    status_ = InvalidArgumentError("DCN implements dcn and dcn_v2, not '" + config_.kind + "'");
    return;
  }
  const int64_t D = static_cast<int64_t>(config_.field_size) * config_.embedding_size;
  stacked_ = config_.model_structure == "stacked";
  deep_ = !config_.deep_layers.empty();
  CrossNetSpec cs;
  cs.kind = CrossKindOf(config_);
  cs.dim = D;
  cs.layers = config_.cross_layers;
  cs.low_rank = cs.kind == CrossKind::kVector ? 0 : config_.low_rank;
  cs.num_experts = cs.kind == CrossKind::kMixture ? config_.num_experts : 1;
  cs.gemm_dtype = config_.gemm_dtype;
  cross_ = CrossNet(std::move(cs), &dense_);
  if (deep_) {
    mlp_ = Mlp(MlpSpecOf(config_, D, config_.deep_layers, 0), &dense_, &state_);
  }
  // h's blocks: parallel [x_L, MLP(x0)]; stacked [MLP(x_L)]; without an MLP [x_L].
  if (!stacked_ || !deep_) block_width_.push_back(D);
  if (deep_) block_width_.push_back(mlp_.out_dim());
  int64_t h = 0;
  for (int64_t w : block_width_) {
    out_fc_.emplace_back(w, 1, config_.gemm_dtype);
    h += w;
  }
  out_w_ = AddDenseParam(&dense_, "output/weights", {h, 1}, true);
  block_.resize(block_width_.size());
  InitDense(config_.seed);
}

void DCN::InitDense(uint64_t seed) {
  EmbeddingModel::InitDense(seed);
  if (status_.ok()) cross_.InitMixture(seed);
}

double DCN::GemmFlopsPerExample() const {
  double f = cross_.GemmFlopsPerExample() + (deep_ ? mlp_.GemmFlopsPerExample() : 0.0);
  for (int64_t w : block_width_) f += 6.0 * static_cast<double>(w);
  return f;
}

Status DCN::ResizeHead(int64_t B) {
  CTRAIN_RETURN_IF_ERROR(cross_.Resize(B));
  if (deep_) CTRAIN_RETURN_IF_ERROR(mlp_.Resize(B));
  for (FullyConnected& fc : out_fc_) CTRAIN_RETURN_IF_ERROR(fc.Prepare(B));
  if (B == batch_size_) return Status::OK();
  batch_size_ = B;
  const int64_t D = static_cast<int64_t>(config_.field_size) * config_.embedding_size;
  y_.assign(B * block_width_.size(), 0.0f);
  d_block0_.assign(B * block_width_[0], 0.0f);
  d_block1_.assign(block_width_.size() > 1 ? B * block_width_[1] : 0, 0.0f);
  d_tmp_.assign(B * D, 0.0f);
  return Status::OK();
}

void DCN::HeadForward(const HeadInput& in, bool training, int64_t step, float* logits) {
  const int64_t B = in.B;
  const float* x0 = in.e;  // [B, F, K] == [B, D]
  const float* xl = cross_.Forward(B, x0);
  if (!deep_) {
    block_[0] = xl;
  } else if (stacked_) {
    block_[0] = mlp_.Forward(B, xl, training, config_.seed, step);
  } else {
    block_[0] = xl;
    block_[1] = mlp_.Forward(B, x0, training, config_.seed, step);
  }
  const float* w = dense_[out_w_].value.data();
  int64_t row = 0;
  for (size_t i = 0; i < block_.size(); ++i) {
    out_fc_[i].Forward(B, block_[i], w + row, nullptr, y_.data() + i * B);
    row += block_width_[i];
  }
  for (int64_t b = 0; b < B; ++b) {
    float s = logits[b];
    for (size_t i = 0; i < block_.size(); ++i) s += y_[i * B + b];
    logits[b] = s;
  }
}

void DCN::HeadBackward(const HeadInput& in, const float* d_logits, float* d_e) {
  const int64_t B = in.B;
  const float* w = dense_[out_w_].value.data();
  float* dw = dense_[out_w_].grad.data();
  float* d_block[2] = {d_block0_.data(), d_block1_.data()};
  int64_t row = 0;
  for (size_t i = 0; i < block_.size(); ++i) {
    out_fc_[i].Backward(B, block_[i], w + row, d_logits, d_block[i], dw + row, nullptr);
    row += block_width_[i];
  }
  if (!deep_) {
    cross_.Backward(B, d_block[0], d_e);
  } else if (stacked_) {
    mlp_.Backward(B, d_block[0], d_tmp_.data());  // d x_L
    cross_.Backward(B, d_tmp_.data(), d_e);
  } else {
    cross_.Backward(B, d_block[0], d_e);
    mlp_.Backward(B, d_block[1], d_tmp_.data());
    const int64_t n = B * in.F * in.K;
    const float* t = d_tmp_.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) d_e[i] += t[i];
  }
}

}  // namespace ctrain::model
