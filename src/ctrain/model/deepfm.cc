#include "ctrain/model/deepfm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "ctrain/model/layers/batch_norm.h"
#include "ctrain/model/layers/dropout.h"
#include "ctrain/model/layers/fm_interaction.h"
#include "ctrain/model/layers/pooled_embedding.h"
#include "ctrain/model/layers/relu.h"
#include "ctrain/model/layers/sigmoid_cross_entropy.h"
#include "ctrain/model/random.h"

namespace ctrain::model {

namespace {


int AddParam(std::vector<DenseParam>* params, std::string name, std::vector<int64_t> shape, bool trainable) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  DenseParam p;
  p.name = std::move(name);
  p.value.assign(n, 0.0f);
  if (trainable) p.grad.assign(n, 0.0f);
  p.shape = std::move(shape);
  params->push_back(std::move(p));
  return static_cast<int>(params->size()) - 1;
}

}  // namespace

Status DeepFMConfig::Validate() const {
  auto bad = [](const std::string& what) { return InvalidArgumentError("DeepFMConfig: " + what); };
  CTRAIN_RETURN_IF_ERROR(CheckModelKind(kind));
  if (feature_size < 1) return bad("feature_size must be >= 1, got " + std::to_string(feature_size));
  if (field_size < 1) return bad("field_size must be >= 1, got " + std::to_string(field_size));
  if (embedding_size < 1) return bad("embedding_size must be >= 1, got " + std::to_string(embedding_size));
  for (size_t i = 0; i < deep_layers.size(); ++i)
    if (deep_layers[i] < 1)
      return bad("deep_layers[" + std::to_string(i) + "] must be >= 1, got " + std::to_string(deep_layers[i]));
  if (!(dropout >= 0.0f && dropout < 1.0f))
    return bad("dropout (drop probability) must be in [0, 1), got " + std::to_string(dropout));
  if (!(batch_norm_momentum >= 0.0f && batch_norm_momentum <= 1.0f))
    return bad("batch_norm_momentum must be in [0, 1], got " + std::to_string(batch_norm_momentum));
  if (!(batch_norm_epsilon > 0.0f)) return bad("batch_norm_epsilon must be > 0");
  if (!(l2_reg >= 0.0f) || !std::isfinite(l2_reg)) return bad("l2_reg must be finite and >= 0");
  if (!use_first_order && !use_fm && !use_deep) return bad("at least one of use_first_order/use_fm/use_deep");
  if (gemm_dtype != DataType::kF32 && gemm_dtype != DataType::kBF16)
    return bad("gemm_dtype must be f32 or bf16, got " + std::to_string(static_cast<int>(gemm_dtype)));
  return Status::OK();
}

DeepFM::DeepFM(DeepFMConfig config) : config_(std::move(config)), status_(config_.Validate()) {
  if (!status_.ok()) return;
  bias_ = AddParam(&dense_, "fm_bias", {1}, true);
  if (!config_.use_deep) return;
  widths_.push_back(config_.field_size * config_.embedding_size);
  for (int32_t w : config_.deep_layers) widths_.push_back(w);
  widths_.push_back(1);
  const size_t L = config_.deep_layers.size();
  for (size_t i = 0; i <= L; ++i) {
    const std::string scope = i < L ? "mlp" + std::to_string(i) : std::string("deep_out");
    wei_.push_back(AddParam(&dense_, scope + "/weights", {widths_[i], widths_[i + 1]}, true));
    bia_.push_back(AddParam(&dense_, scope + "/biases", {widths_[i + 1]}, true));
    if (i < L && config_.batch_norm) {
      const std::string bn = "bn_" + std::to_string(i);
      gamma_.push_back(AddParam(&dense_, bn + "/gamma", {widths_[i + 1]}, true));
      beta_.push_back(AddParam(&dense_, bn + "/beta", {widths_[i + 1]}, true));
      mmean_.push_back(AddParam(&state_, bn + "/moving_mean", {widths_[i + 1]}, false));
      mvar_.push_back(AddParam(&state_, bn + "/moving_variance", {widths_[i + 1]}, false));
    }
    fc_.emplace_back(widths_[i], widths_[i + 1], config_.gemm_dtype);
  }
  act_.resize(L);
  xhat_.resize(L);
  bn_out_.resize(L);
  inv_std_.resize(L);
  mask_.resize(L);
  drop_.resize(L);
  layer_in_.resize(L + 1);
  InitDense(config_.seed);
}

void DeepFM::InitDense(uint64_t seed) {
  for (size_t i = 0; i < dense_.size(); ++i) {
    DenseParam& p = dense_[i];
    const std::string& n = p.name;
    const bool kernel = n.size() >= 8 && n.compare(n.size() - 8, 8, "/weights") == 0;
    if (kernel) {
      const double limit = std::sqrt(6.0 / static_cast<double>(p.shape[0] + p.shape[1]));
      const uint64_t key = StreamKey(seed, 0x1000 + i);
      for (size_t j = 0; j < p.value.size(); ++j)
        p.value[j] = static_cast<float>((2.0 * UniformOpen(CounterBits(key, j)) - 1.0) * limit);
    } else if (n.size() >= 6 && n.compare(n.size() - 6, 6, "/gamma") == 0) {
      std::fill(p.value.begin(), p.value.end(), 1.0f);
    } else {
      std::fill(p.value.begin(), p.value.end(), 0.0f);
    }
  }
  for (DenseParam& s : state_) {
    const bool var = s.name.find("moving_variance") != std::string::npos;
    std::fill(s.value.begin(), s.value.end(), var ? 1.0f : 0.0f);
  }
}

double DeepFM::GemmFlopsPerExample() const {
  double f = 0;
  for (size_t i = 0; i + 1 < widths_.size(); ++i) f += 3.0 * 2.0 * widths_[i] * widths_[i + 1];
  return f;
}

Status DeepFM::Check(const data::Batch& batch, std::span<const int64_t> unique_ids, std::span<const int32_t> index,
                     const float* w_rows, const float* v_rows) const {
  if (!status_.ok()) return FailedPreconditionError(status_.message());
  if (batch.variable_length()) return InvalidArgumentError("DeepFM: variable-length batches are not supported");
  if (batch.empty()) return InvalidArgumentError("DeepFM: empty batch");
  if (batch.field_size != config_.field_size)
    return InvalidArgumentError("DeepFM: batch field_size " + std::to_string(batch.field_size) +
                                " != config field_size " + std::to_string(config_.field_size));
  int64_t n = batch.size() * batch.field_size;
  if (batch.multi_hot()) {
    const int64_t slots = n;
    n = static_cast<int64_t>(batch.ids.size());
    if (static_cast<int64_t>(batch.field_splits.size()) != slots + 1 || batch.field_splits.front() != 0 ||
        batch.field_splits.back() != n || static_cast<int64_t>(batch.values.size()) != n)
      return InvalidArgumentError("DeepFM: multi-hot batch needs B*F+1 = " + std::to_string(slots + 1) +
                                  " field_splits from 0 to nnz and nnz values (found " +
                                  std::to_string(batch.field_splits.size()) + " splits, " +
                                  std::to_string(batch.ids.size()) + " ids, " + std::to_string(batch.values.size()) +
                                  " values)");
    for (int64_t s = 0; s < slots; ++s)
      if (batch.field_splits[s + 1] < batch.field_splits[s])
        return InvalidArgumentError("DeepFM: field_splits not monotone at slot " + std::to_string(s));
    if (n >= (int64_t{1} << 31)) return InvalidArgumentError("DeepFM: a batch holds at most 2^31 - 1 ids");
  } else if (static_cast<int64_t>(batch.ids.size()) != n || static_cast<int64_t>(batch.values.size()) != n) {
    return InvalidArgumentError("DeepFM: batch has " + std::to_string(batch.ids.size()) + " ids and " +
                                std::to_string(batch.values.size()) + " values, expected B*F = " + std::to_string(n));
  }
  if (static_cast<int64_t>(index.size()) != n)
    return InvalidArgumentError("DeepFM: index has " + std::to_string(index.size()) + " entries, expected " +
                                (batch.multi_hot() ? "nnz = " : "B*F = ") + std::to_string(n));
  const int64_t U = static_cast<int64_t>(unique_ids.size());
  for (int64_t p = 0; p < n; ++p) {
    const int32_t u = index[p];
    if (u < 0 || u >= U || unique_ids[u] != batch.ids[p])
      return InvalidArgumentError("DeepFM: index[" + std::to_string(p) + "] = " + std::to_string(u) +
                                  " does not point at id " + std::to_string(batch.ids[p]) + " in unique_ids (size " +
                                  std::to_string(U) + ")");
  }
  if (config_.use_first_order && w_rows == nullptr) return InvalidArgumentError("DeepFM: w_rows is null");
  if (uses_v() && v_rows == nullptr) return InvalidArgumentError("DeepFM: v_rows is null");
  return Status::OK();
}

Status DeepFM::Resize(int64_t B) {
  for (FullyConnected& fc : fc_) CTRAIN_RETURN_IF_ERROR(fc.Prepare(B));
  if (B == batch_size_) return Status::OK();
  batch_size_ = B;
  const int64_t F = config_.field_size, K = config_.embedding_size;
  for (auto* v : {&y_first_, &y_fm_, &y_deep_, &logits_, &d_logits_}) v->assign(B, 0.0f);
  if (uses_v()) {
    e_.assign(B * F * K, 0.0f);
    d_e_.assign(B * F * K, 0.0f);
    fm_sum_.assign(B * K, 0.0f);
  }
  if (config_.use_deep) {
    int64_t maxw = 1;
    for (size_t i = 0; i < config_.deep_layers.size(); ++i) {
      const int64_t w = config_.deep_layers[i];
      maxw = std::max(maxw, w);
      act_[i].assign(B * w, 0.0f);
      if (config_.batch_norm) {
        xhat_[i].assign(B * w, 0.0f);
        bn_out_[i].assign(B * w, 0.0f);
        inv_std_[i].assign(w, 0.0f);
      }
      if (config_.dropout > 0.0f) {
        mask_[i].assign(B * w, 0.0f);
        drop_[i].assign(B * w, 0.0f);
      }
    }
    g0_.assign(B * maxw, 0.0f);
    g1_.assign(B * maxw, 0.0f);
  }
  return Status::OK();
}

void DeepFM::Forward(const data::Batch& batch, std::span<const int32_t> index, const float* w_rows,
                     const float* v_rows, bool training, int64_t step) {
  const int64_t B = batch.size();
  const int32_t F = config_.field_size, K = config_.embedding_size;
  const float* values = batch.values.data();
  if (batch.multi_hot()) {  // ragged fields: weighted-sum pooling per (row, field) slot
    const int64_t* splits = batch.field_splits.data();
    if (config_.use_first_order) PooledFirstOrderForward(B, F, splits, index.data(), values, w_rows, y_first_.data());
    if (uses_v()) PooledEmbeddingForward(B * F, splits, K, index.data(), values, v_rows, e_.data());
  } else {
    if (config_.use_first_order) FirstOrderForward(B, F, index.data(), values, w_rows, y_first_.data());
    if (uses_v()) EmbeddingLookupForward(B * F, K, index.data(), values, v_rows, e_.data());
  }
  if (config_.use_fm) FmInteractionForward(B, F, K, e_.data(), fm_sum_.data(), y_fm_.data());
  if (config_.use_deep) {
    const size_t L = config_.deep_layers.size();
    layer_in_[0] = e_.data();
    for (size_t i = 0; i < L; ++i) {
      const int64_t w = widths_[i + 1];
      float* a = act_[i].data();
      fc_[i].Forward(B, layer_in_[i], dense_[wei_[i]].value.data(), dense_[bia_[i]].value.data(), a);
      ReluForward(B * w, a, a);
      const float* cur = a;
      if (config_.batch_norm) {
        const float* gamma = dense_[gamma_[i]].value.data();
        const float* beta = dense_[beta_[i]].value.data();
        float* mm = state_[mmean_[i]].value.data();
        float* mv = state_[mvar_[i]].value.data();
        if (training)
          BatchNormForwardTraining(B, w, config_.batch_norm_epsilon, config_.batch_norm_momentum, a, gamma, beta,
                                   xhat_[i].data(), inv_std_[i].data(), bn_out_[i].data(), mm, mv);
        else
          BatchNormForwardInference(B, w, config_.batch_norm_epsilon, a, gamma, beta, mm, mv, bn_out_[i].data());
        cur = bn_out_[i].data();
      }
      if (training && config_.dropout > 0.0f) {
        DropoutForward(B * w, config_.dropout, config_.seed, DropoutStream(step, static_cast<int32_t>(i)), cur,
                       mask_[i].data(), drop_[i].data());
        cur = drop_[i].data();
      }
      layer_in_[i + 1] = cur;
    }
    fc_[L].Forward(B, layer_in_[L], dense_[wei_[L]].value.data(), dense_[bia_[L]].value.data(), y_deep_.data());
  }
  const float bias = dense_[bias_].value[0];
  for (int64_t b = 0; b < B; ++b) {
    float s = bias;
    if (config_.use_first_order) s += y_first_[b];
    if (config_.use_fm) s += y_fm_[b];
    if (config_.use_deep) s += y_deep_[b];
    logits_[b] = s;
  }
}

Status DeepFM::TrainStep(const data::Batch& batch, std::span<const int64_t> unique_ids,
                         std::span<const int32_t> index, const float* w_rows, const float* v_rows, int64_t step,
                         SparseGrad* w_grad, SparseGrad* v_grad, LossTerms* loss) {
  CTRAIN_RETURN_IF_ERROR(Check(batch, unique_ids, index, w_rows, v_rows));
  const int64_t B = batch.size();
  const int32_t F = config_.field_size, K = config_.embedding_size;
  const int64_t U = static_cast<int64_t>(unique_ids.size());
  CTRAIN_RETURN_IF_ERROR(Resize(B));

  Forward(batch, index, w_rows, v_rows, /*training=*/true, step);

  // Loss terms.
  const double logloss = SigmoidCrossEntropy(B, logits_.data(), batch.labels.data(), d_logits_.data());
  double l2 = 0.0;
  if (config_.l2_reg > 0.0f) {
    double s = 0.0;
    if (config_.use_first_order)
      for (int64_t u = 0; u < U; ++u) s += static_cast<double>(w_rows[u]) * w_rows[u];
    if (uses_v())
      for (int64_t i = 0; i < U * K; ++i) s += static_cast<double>(v_rows[i]) * v_rows[i];
    l2 = config_.l2_reg * s;
  }
  loss->logloss = logloss;
  loss->l2 = l2;
  loss->loss = logloss + l2;
  if (!std::isfinite(logloss) || !std::isfinite(l2))
    return InvalidArgumentError("step " + std::to_string(step) + ": loss is not finite (term: " +
                                (std::isfinite(logloss) ? "l2" : "logloss") + "), logloss=" +
                                std::to_string(logloss) + " l2=" + std::to_string(l2));

  // Backward. d logit / d bias = 1.
  {
    double s = 0.0;
    for (int64_t b = 0; b < B; ++b) s += d_logits_[b];
    dense_[bias_].grad[0] = static_cast<float>(s);
  }
  bool have_de = false;
  if (config_.use_deep) {
    const size_t L = config_.deep_layers.size();
    float* g = g0_.data();
    float* other = g1_.data();
    fc_[L].Backward(B, layer_in_[L], dense_[wei_[L]].value.data(), d_logits_.data(), L > 0 ? g : d_e_.data(),
                    dense_[wei_[L]].grad.data(), dense_[bia_[L]].grad.data());
    for (size_t i = L; i-- > 0;) {
      const int64_t w = widths_[i + 1];
      if (config_.dropout > 0.0f) DropoutBackward(B * w, mask_[i].data(), g, g);
      if (config_.batch_norm)
        BatchNormBackward(B, w, xhat_[i].data(), inv_std_[i].data(), dense_[gamma_[i]].value.data(), g, g,
                          dense_[gamma_[i]].grad.data(), dense_[beta_[i]].grad.data());
      ReluBackward(B * w, act_[i].data(), g, g);
      float* dsrc = i > 0 ? other : d_e_.data();
      fc_[i].Backward(B, layer_in_[i], dense_[wei_[i]].value.data(), g, dsrc, dense_[wei_[i]].grad.data(),
                      dense_[bia_[i]].grad.data());
      std::swap(g, other);
    }
    have_de = true;
  }
  if (config_.use_fm) {
    FmInteractionBackward(B, F, K, e_.data(), fm_sum_.data(), d_logits_.data(), /*accumulate=*/have_de, d_e_.data());
    have_de = true;
  }

  const float two_l2 = 2.0f * config_.l2_reg;
  positions_.Build(index, U);
  const bool multi = batch.multi_hot();
  if (multi) {
    slot_of_.resize(index.size());
    SlotOfOccurrence(B * F, batch.field_splits.data(), slot_of_.data());
  }
  if (uses_v()) {
    v_grad->dim = K;
    v_grad->ids.assign(unique_ids.begin(), unique_ids.end());
    v_grad->grad.resize(U * K);
    if (multi)
      PooledEmbeddingBackward(positions_, slot_of_.data(), K, batch.values.data(), d_e_.data(), v_grad->grad.data());
    else
      EmbeddingLookupBackward(positions_, K, batch.values.data(), d_e_.data(), v_grad->grad.data());
    if (two_l2 > 0.0f) {
      float* gv = v_grad->grad.data();
#pragma omp parallel for simd schedule(static)
      for (int64_t i = 0; i < U * K; ++i) gv[i] += two_l2 * v_rows[i];
    }
  } else {
    v_grad->dim = K;
    v_grad->ids.clear();
    v_grad->grad.clear();
  }
  if (config_.use_first_order) {
    w_grad->dim = 1;
    w_grad->ids.assign(unique_ids.begin(), unique_ids.end());
    w_grad->grad.resize(U);
    if (multi)
      PooledFirstOrderBackward(positions_, slot_of_.data(), F, batch.values.data(), d_logits_.data(),
                               w_grad->grad.data());
    else
      FirstOrderBackward(positions_, F, batch.values.data(), d_logits_.data(), w_grad->grad.data());
    if (two_l2 > 0.0f)
      for (int64_t u = 0; u < U; ++u) w_grad->grad[u] += two_l2 * w_rows[u];
  } else {
    w_grad->dim = 1;
    w_grad->ids.clear();
    w_grad->grad.clear();
  }
  return Status::OK();
}

Status DeepFM::Predict(const data::Batch& batch, std::span<const int64_t> unique_ids, std::span<const int32_t> index,
                       const float* w_rows, const float* v_rows, float* probs) {
  CTRAIN_RETURN_IF_ERROR(Check(batch, unique_ids, index, w_rows, v_rows));
  CTRAIN_RETURN_IF_ERROR(Resize(batch.size()));
  Forward(batch, index, w_rows, v_rows, /*training=*/false, 0);
  for (int64_t b = 0; b < batch.size(); ++b) probs[b] = Sigmoid(logits_[b]);
  return Status::OK();
}

}  // namespace ctrain::model
