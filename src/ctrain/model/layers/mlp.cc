#include "ctrain/model/layers/mlp.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "ctrain/model/layers/batch_norm.h"
#include "ctrain/model/layers/dropout.h"
#include "ctrain/model/layers/relu.h"

namespace ctrain::model {

MlpSpec MlpSpecOf(const ModelConfig& config, int64_t in, std::vector<int32_t> hidden, int32_t out) {
  MlpSpec s;
  s.in = in;
  s.hidden = std::move(hidden);
  s.out = out;
  s.batch_norm = config.batch_norm;
  s.batch_norm_momentum = config.batch_norm_momentum;
  s.batch_norm_epsilon = config.batch_norm_epsilon;
  s.dropout = config.dropout;
  s.gemm_dtype = config.gemm_dtype;
  return s;
}

Mlp::Mlp(MlpSpec spec, std::vector<DenseParam>* dense, std::vector<DenseParam>* state)
    : spec_(std::move(spec)), dense_(dense), state_(state) {
  widths_.push_back(spec_.in);
  for (int32_t w : spec_.hidden) widths_.push_back(w);
  if (spec_.out > 0) widths_.push_back(spec_.out);
  const size_t H = spec_.hidden.size();
  for (size_t i = 0; i + 1 < widths_.size(); ++i) {
    const bool hidden = i < H;
    const std::string scope = hidden ? spec_.hidden_scope + std::to_string(i) : spec_.out_scope;
    wei_.push_back(AddDenseParam(dense_, scope + "/weights", {widths_[i], widths_[i + 1]}, true));
    bia_.push_back(AddDenseParam(dense_, scope + "/biases", {widths_[i + 1]}, true));
    if (hidden && spec_.batch_norm) {
      const std::string bn = spec_.bn_scope + std::to_string(i);
      gamma_.push_back(AddDenseParam(dense_, bn + "/gamma", {widths_[i + 1]}, true));
      beta_.push_back(AddDenseParam(dense_, bn + "/beta", {widths_[i + 1]}, true));
      mmean_.push_back(AddDenseParam(state_, bn + "/moving_mean", {widths_[i + 1]}, false));
      mvar_.push_back(AddDenseParam(state_, bn + "/moving_variance", {widths_[i + 1]}, false));
    }
    fc_.emplace_back(widths_[i], widths_[i + 1], spec_.gemm_dtype);
  }
  act_.resize(H);
  xhat_.resize(H);
  bn_out_.resize(H);
  inv_std_.resize(H);
  mask_.resize(H);
  drop_.resize(H);
  layer_in_.resize(fc_.size() + 1);
}

int64_t Mlp::out_dim() const { return widths_.empty() ? spec_.in : widths_.back(); }

double Mlp::GemmFlopsPerExample() const {
  double f = 0;
  for (size_t i = 0; i + 1 < widths_.size(); ++i) f += 3.0 * 2.0 * widths_[i] * widths_[i + 1];
  return f;
}

Status Mlp::Resize(int64_t B) {
  for (FullyConnected& fc : fc_) CTRAIN_RETURN_IF_ERROR(fc.Prepare(B));
  if (B == batch_size_) return Status::OK();
  batch_size_ = B;
  int64_t maxw = 1;
  for (size_t i = 0; i < spec_.hidden.size(); ++i) {
    const int64_t w = spec_.hidden[i];
    maxw = std::max(maxw, w);
    act_[i].assign(B * w, 0.0f);
    if (spec_.batch_norm) {
      xhat_[i].assign(B * w, 0.0f);
      bn_out_[i].assign(B * w, 0.0f);
      inv_std_[i].assign(w, 0.0f);
    }
    if (spec_.dropout > 0.0f) {
      mask_[i].assign(B * w, 0.0f);
      drop_[i].assign(B * w, 0.0f);
    }
  }
  if (spec_.out > 0) {
    out_.assign(B * spec_.out, 0.0f);
    maxw = std::max<int64_t>(maxw, spec_.out);
  }
  g0_.assign(B * maxw, 0.0f);
  g1_.assign(B * maxw, 0.0f);
  return Status::OK();
}

const float* Mlp::Forward(int64_t B, const float* src, bool training, uint64_t seed, int64_t step) {
  src_ = src;
  trained_ = training;
  if (fc_.empty()) return src;
  const size_t H = spec_.hidden.size();
  layer_in_[0] = src;
  for (size_t i = 0; i < H; ++i) {
    const int64_t w = widths_[i + 1];
    float* a = act_[i].data();
    fc_[i].Forward(B, layer_in_[i], (*dense_)[wei_[i]].value.data(), (*dense_)[bia_[i]].value.data(), a);
    ReluForward(B * w, a, a);
    const float* cur = a;
    if (spec_.batch_norm) {
      const float* gamma = (*dense_)[gamma_[i]].value.data();
      const float* beta = (*dense_)[beta_[i]].value.data();
      float* mm = (*state_)[mmean_[i]].value.data();
      float* mv = (*state_)[mvar_[i]].value.data();
      if (training)
        BatchNormForwardTraining(B, w, spec_.batch_norm_epsilon, spec_.batch_norm_momentum, a, gamma, beta,
                                 xhat_[i].data(), inv_std_[i].data(), bn_out_[i].data(), mm, mv);
      else
        BatchNormForwardInference(B, w, spec_.batch_norm_epsilon, a, gamma, beta, mm, mv, bn_out_[i].data());
      cur = bn_out_[i].data();
    }
    if (training && spec_.dropout > 0.0f) {
      DropoutForward(B * w, spec_.dropout, seed, DropoutStream(step, spec_.dropout_layer0 + static_cast<int32_t>(i)),
                     cur, mask_[i].data(), drop_[i].data());
      cur = drop_[i].data();
    }
    layer_in_[i + 1] = cur;
  }
  if (spec_.out <= 0) return layer_in_[H];
  fc_[H].Forward(B, layer_in_[H], (*dense_)[wei_[H]].value.data(), (*dense_)[bia_[H]].value.data(), out_.data());
  return out_.data();
}

void Mlp::Backward(int64_t B, const float* d_out, float* d_src) {
  if (fc_.empty()) {
    if (d_src != nullptr && d_src != d_out) std::memcpy(d_src, d_out, sizeof(float) * B * spec_.in);
    return;
  }
  const size_t H = spec_.hidden.size();
  float* g = g0_.data();
  float* other = g1_.data();
  if (spec_.out > 0) {
    fc_[H].Backward(B, layer_in_[H], (*dense_)[wei_[H]].value.data(), d_out, H > 0 ? g : d_src,
                    (*dense_)[wei_[H]].grad.data(), (*dense_)[bia_[H]].grad.data());
  } else {
    std::memcpy(g, d_out, sizeof(float) * B * widths_.back());
  }
  for (size_t i = H; i-- > 0;) {
    const int64_t w = widths_[i + 1];
    if (trained_ && spec_.dropout > 0.0f) DropoutBackward(B * w, mask_[i].data(), g, g);
    if (spec_.batch_norm)
      BatchNormBackward(B, w, xhat_[i].data(), inv_std_[i].data(), (*dense_)[gamma_[i]].value.data(), g, g,
                        (*dense_)[gamma_[i]].grad.data(), (*dense_)[beta_[i]].grad.data());
    ReluBackward(B * w, act_[i].data(), g, g);
    float* dsrc = i > 0 ? other : d_src;
    fc_[i].Backward(B, layer_in_[i], (*dense_)[wei_[i]].value.data(), g, dsrc, (*dense_)[wei_[i]].grad.data(),
                    (*dense_)[bia_[i]].grad.data());
    std::swap(g, other);
  }
}

}  // namespace ctrain::model
