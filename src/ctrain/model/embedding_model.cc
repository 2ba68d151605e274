#include "ctrain/model/embedding_model.h"

#include <cmath>
#include <string>
#include <utility>

#include "ctrain/model/layers/pooled_embedding.h"
#include "ctrain/model/layers/sigmoid_cross_entropy.h"

namespace ctrain::model {

EmbeddingModel::EmbeddingModel(ModelConfig config, std::string bias_name, bool uses_first_order,
                               bool uses_embeddings)
    : config_(std::move(config)), status_(config_.Validate()), uses_w_(uses_first_order), uses_v_(uses_embeddings) {
  if (!status_.ok()) return;
  bias_ = AddDenseParam(&dense_, std::move(bias_name), {1}, true);
}

void EmbeddingModel::InitDense(uint64_t seed) { InitDenseParams(seed, &dense_, &state_); }

Status EmbeddingModel::Check(const data::Batch& batch, std::span<const int64_t> unique_ids,
                             std::span<const int32_t> index, const float* w_rows, const float* v_rows) const {
  if (!status_.ok()) return FailedPreconditionError(status_.message());
  const std::string who = config_.kind + ": ";
  if (batch.variable_length()) return InvalidArgumentError(who + "variable-length batches are not supported");
  if (batch.empty()) return InvalidArgumentError(who + "empty batch");
  if (batch.field_size != config_.field_size)
    return InvalidArgumentError(who + "batch field_size " + std::to_string(batch.field_size) +
                                " != config field_size " + std::to_string(config_.field_size));
  int64_t n = batch.size() * batch.field_size;
  if (batch.multi_hot()) {
    const int64_t slots = n;
    n = static_cast<int64_t>(batch.ids.size());
    if (static_cast<int64_t>(batch.field_splits.size()) != slots + 1 || batch.field_splits.front() != 0 ||
        batch.field_splits.back() != n || static_cast<int64_t>(batch.values.size()) != n)
      return InvalidArgumentError(who + "multi-hot batch needs B*F+1 = " + std::to_string(slots + 1) +
                                  " field_splits from 0 to nnz and nnz values (found " +
                                  std::to_string(batch.field_splits.size()) + " splits, " +
                                  std::to_string(batch.ids.size()) + " ids, " + std::to_string(batch.values.size()) +
                                  " values)");
    for (int64_t s = 0; s < slots; ++s)
      if (batch.field_splits[s + 1] < batch.field_splits[s])
        return InvalidArgumentError(who + "field_splits not monotone at slot " + std::to_string(s));
    if (n >= (int64_t{1} << 31)) return InvalidArgumentError(who + "a batch holds at most 2^31 - 1 ids");
  } else if (static_cast<int64_t>(batch.ids.size()) != n || static_cast<int64_t>(batch.values.size()) != n) {
    return InvalidArgumentError(who + "batch has " + std::to_string(batch.ids.size()) + " ids and " +
                                std::to_string(batch.values.size()) + " values, expected B*F = " + std::to_string(n));
  }
  if (static_cast<int64_t>(index.size()) != n)
    return InvalidArgumentError(who + "index has " + std::to_string(index.size()) + " entries, expected " +
                                (batch.multi_hot() ? "nnz = " : "B*F = ") + std::to_string(n));
  const int64_t U = static_cast<int64_t>(unique_ids.size());
  for (int64_t p = 0; p < n; ++p) {
    const int32_t u = index[p];
    if (u < 0 || u >= U || unique_ids[u] != batch.ids[p])
      return InvalidArgumentError(who + "index[" + std::to_string(p) + "] = " + std::to_string(u) +
                                  " does not point at id " + std::to_string(batch.ids[p]) + " in unique_ids (size " +
                                  std::to_string(U) + ")");
  }
  if (config_.kind != "dlrm") CTRAIN_RETURN_IF_ERROR(CheckNumericIds(batch));
  if (uses_w_ && w_rows == nullptr) return InvalidArgumentError(who + "w_rows is null");
  if (uses_v_ && v_rows == nullptr) return InvalidArgumentError(who + "v_rows is null");
  return Status::OK();
}

Status EmbeddingModel::CheckNumericIds(const data::Batch& batch) const {
  const int32_t N = config_.num_dense_fields, F = batch.field_size;
  for (int64_t b = 0; b < batch.size() && N > 0; ++b)
    for (int32_t f = 0; f < N; ++f) {
      const int64_t slot = b * F + f;
      int64_t p = slot, count = 1;
      if (batch.multi_hot()) {
        p = batch.field_splits[slot];
        count = batch.field_splits[slot + 1] - p;
      }
      if (count != 1 || batch.ids[p] != f)
        return InvalidArgumentError(
            config_.kind + ": num_dense_fields " + std::to_string(N) + ": example " + std::to_string(b) +
            " of the batch has " + (count == 1 ? "id " + std::to_string(batch.ids[p]) : std::to_string(count) + " ids") +
            " in numeric field " + std::to_string(f) + "; a numeric field i must carry the one id i (ctrain's Criteo "
            "layout; after --id-base), or leave num_dense_fields 0");
    }
  return Status::OK();
}

Status EmbeddingModel::Resize(int64_t B) {
  CTRAIN_RETURN_IF_ERROR(ResizeHead(B));
  if (B == batch_size_) return Status::OK();
  batch_size_ = B;
  const int64_t F = config_.field_size, K = config_.embedding_size;
  for (auto* v : {&y_first_, &logits_, &d_logits_}) v->assign(B, 0.0f);
  if (uses_v_) {
    e_.assign(B * F * K, 0.0f);
    d_e_.assign(B * F * K, 0.0f);
  }
  return Status::OK();
}

void EmbeddingModel::Forward(const data::Batch& batch, std::span<const int32_t> index, const float* w_rows,
                             const float* v_rows, bool training, int64_t step) {
  const int64_t B = batch.size();
  const int32_t F = config_.field_size, K = config_.embedding_size;
  const float* values = batch.values.data();
  if (batch.multi_hot()) {  // ragged fields: weighted-sum pooling per (row, field) slot
    const int64_t* splits = batch.field_splits.data();
    if (uses_w_) PooledFirstOrderForward(B, F, splits, index.data(), values, w_rows, y_first_.data());
    if (uses_v_) PooledEmbeddingForward(B * F, splits, K, index.data(), values, v_rows, e_.data());
  } else {
    if (uses_w_) FirstOrderForward(B, F, index.data(), values, w_rows, y_first_.data());
    if (uses_v_) EmbeddingLookupForward(B * F, K, index.data(), values, v_rows, e_.data());
  }
  const float bias = dense_[bias_].value[0];
  for (int64_t b = 0; b < B; ++b) {
    float s = bias;
    if (uses_w_) s += y_first_[b];
    logits_[b] = s;
  }
  const HeadInput in{&batch, B, F, K, uses_v_ ? e_.data() : nullptr};
  HeadForward(in, training, step, logits_.data());
}

Status EmbeddingModel::TrainStep(const data::Batch& batch, std::span<const int64_t> unique_ids,
                                 std::span<const int32_t> index, const float* w_rows, const float* v_rows,
                                 int64_t step, SparseGrad* w_grad, SparseGrad* v_grad, LossTerms* loss) {
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
    if (uses_w_)
      for (int64_t u = 0; u < U; ++u) s += static_cast<double>(w_rows[u]) * w_rows[u];
    if (uses_v_)
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
  const HeadInput in{&batch, B, F, K, uses_v_ ? e_.data() : nullptr};
  HeadBackward(in, d_logits_.data(), uses_v_ ? d_e_.data() : nullptr);

  const float two_l2 = 2.0f * config_.l2_reg;
  positions_.Build(index, U);
  const bool multi = batch.multi_hot();
  if (multi) {
    slot_of_.resize(index.size());
    SlotOfOccurrence(B * F, batch.field_splits.data(), slot_of_.data());
  }
  v_grad->dim = K;
  if (uses_v_) {
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
    v_grad->ids.clear();
    v_grad->grad.clear();
  }
  w_grad->dim = 1;
  if (uses_w_) {
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
    w_grad->ids.clear();
    w_grad->grad.clear();
  }
  return Status::OK();
}

Status EmbeddingModel::Predict(const data::Batch& batch, std::span<const int64_t> unique_ids,
                               std::span<const int32_t> index, const float* w_rows, const float* v_rows,
                               float* probs) {
  CTRAIN_RETURN_IF_ERROR(Check(batch, unique_ids, index, w_rows, v_rows));
  CTRAIN_RETURN_IF_ERROR(Resize(batch.size()));
  Forward(batch, index, w_rows, v_rows, /*training=*/false, 0);
  for (int64_t b = 0; b < batch.size(); ++b) probs[b] = Sigmoid(logits_[b]);
  return Status::OK();
}

}  // namespace ctrain::model
