#include "ctrain/model/dlrm.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ctrain/model/layers/dot_interaction.h"

namespace ctrain::model {

Dlrm::Dlrm(ModelConfig config) : EmbeddingModel(std::move(config), "bias", /*uses_first_order=*/false, true) {
  if (!status_.ok()) return;
  if (config_.kind != "dlrm") {
    status_ = InvalidArgumentError("Dlrm implements dlrm, not '" + config_.kind + "'");
    return;
  }
  const int32_t K = config_.embedding_size;
  num_dense_ = config_.num_dense_fields;
  const int32_t categorical = config_.field_size - num_dense_;
  num_vectors_ = categorical + (num_dense_ > 0 ? 1 : 0);
  top_in_ = (num_dense_ > 0 ? K : 0) + DotInteractionPairs(num_vectors_);
  int32_t next_dropout_layer = 0;
  if (num_dense_ > 0) {
    std::vector<int32_t> hidden = config_.bottom_mlp;
    hidden.push_back(K);  // the last bottom layer maps to K, with ReLU like the others (the reference)
    MlpSpec b = MlpSpecOf(config_, num_dense_, std::move(hidden), 0);
    b.hidden_scope = "bot_mlp";
    b.bn_scope = "bot_bn_";
    b.dropout_layer0 = 0;
    next_dropout_layer = static_cast<int32_t>(b.hidden.size());
    bottom_ = Mlp(std::move(b), &dense_, &state_);
  }
  MlpSpec t = MlpSpecOf(config_, top_in_, config_.top_mlp, 1);
  t.hidden_scope = "top_mlp";
  t.bn_scope = "top_bn_";
  t.out_scope = "top_out";
  t.dropout_layer0 = next_dropout_layer;
  top_ = Mlp(std::move(t), &dense_, &state_);
  InitDense(config_.seed);
}

double Dlrm::GemmFlopsPerExample() const {
  if (!status_.ok()) return 0.0;
  return (num_dense_ > 0 ? bottom_.GemmFlopsPerExample() : 0.0) + top_.GemmFlopsPerExample() +
         DotInteractionFlops(num_vectors_, config_.embedding_size);
}

Status Dlrm::CheckDenseFields(const data::Batch& batch) const {
  // Structural problems (sizes, splits) are EmbeddingModel::Check's to report.
  const int64_t F = config_.field_size;
  if (!status_.ok() || num_dense_ == 0 || !batch.multi_hot() || batch.field_size != F) return Status::OK();
  const int64_t B = batch.size();
  if (static_cast<int64_t>(batch.field_splits.size()) != B * F + 1) return Status::OK();
  for (int64_t b = 0; b < B; ++b)
    for (int32_t f = 0; f < num_dense_; ++f) {
      const int64_t n = batch.field_splits[b * F + f + 1] - batch.field_splits[b * F + f];
      if (n != 1)
        return InvalidArgumentError("dlrm: row " + std::to_string(b) + " of the batch, field " + std::to_string(f) +
                                    ": a dense field (--num-dense-fields " + std::to_string(num_dense_) +
                                    ") must hold exactly one value, this multi-hot field holds " + std::to_string(n) +
                                    " ids");
    }
  return Status::OK();
}

Status Dlrm::TrainStep(const data::Batch& batch, std::span<const int64_t> unique_ids, std::span<const int32_t> index,
                       const float* w_rows, const float* v_rows, int64_t step, SparseGrad* w_grad, SparseGrad* v_grad,
                       LossTerms* loss) {
  CTRAIN_RETURN_IF_ERROR(CheckDenseFields(batch));
  return EmbeddingModel::TrainStep(batch, unique_ids, index, w_rows, v_rows, step, w_grad, v_grad, loss);
}

Status Dlrm::Predict(const data::Batch& batch, std::span<const int64_t> unique_ids, std::span<const int32_t> index,
                     const float* w_rows, const float* v_rows, float* probs) {
  CTRAIN_RETURN_IF_ERROR(CheckDenseFields(batch));
  return EmbeddingModel::Predict(batch, unique_ids, index, w_rows, v_rows, probs);
}

Status Dlrm::ResizeHead(int64_t B) {
  if (num_dense_ > 0) CTRAIN_RETURN_IF_ERROR(bottom_.Resize(B));
  CTRAIN_RETURN_IF_ERROR(top_.Resize(B));
  if (B == batch_size_) return Status::OK();
  batch_size_ = B;
  const int64_t K = config_.embedding_size;
  dense_x_.assign(B * num_dense_, 0.0f);
  vectors_.assign(B * num_vectors_ * K, 0.0f);
  d_vectors_.assign(B * num_vectors_ * K, 0.0f);
  top_in_x_.assign(B * top_in_, 0.0f);
  d_top_in_.assign(B * top_in_, 0.0f);
  d_bottom_.assign(num_dense_ > 0 ? B * K : 0, 0.0f);
  return Status::OK();
}

void Dlrm::HeadForward(const HeadInput& in, bool training, int64_t step, float* logits) {
  const int64_t B = in.B, F = in.F, K = in.K, N = num_dense_, T = num_vectors_, R = top_in_;
  const int64_t C = F - N;                // categorical fields
  const int64_t x_cols = N > 0 ? K : 0;   // bottom output columns ahead of z in the top input
  const data::Batch& batch = *in.batch;
  if (N > 0) {
    // The dense values; a multi-hot batch has one id per dense field (CheckDenseFields).
    const bool multi = batch.multi_hot();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t f = 0; f < N; ++f)
        dense_x_[b * N + f] = batch.values[multi ? batch.field_splits[b * F + f] : b * F + f];
    bottom_out_ = bottom_.Forward(B, dense_x_.data(), training, config_.seed, step);
  }
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    float* v = vectors_.data() + b * T * K;
    if (N > 0) {
      std::memcpy(v, bottom_out_ + b * K, sizeof(float) * K);
      std::memcpy(top_in_x_.data() + b * R, bottom_out_ + b * K, sizeof(float) * K);
      v += K;
    }
    std::memcpy(v, in.e + (b * F + N) * K, sizeof(float) * C * K);
  }
  DotInteractionForward(B, static_cast<int32_t>(T), static_cast<int32_t>(K), vectors_.data(), R,
                        top_in_x_.data() + x_cols);
  const float* y = top_.Forward(B, top_in_x_.data(), training, config_.seed, step);
  for (int64_t b = 0; b < B; ++b) logits[b] += y[b];
}

void Dlrm::HeadBackward(const HeadInput& in, const float* d_logits, float* d_e) {
  const int64_t B = in.B, F = in.F, K = in.K, N = num_dense_, T = num_vectors_, R = top_in_;
  const int64_t C = F - N;
  const int64_t x_cols = N > 0 ? K : 0;
  top_.Backward(B, d_logits, d_top_in_.data());  // d_logits [B] is [B, 1]
  DotInteractionBackward(B, static_cast<int32_t>(T), static_cast<int32_t>(K), vectors_.data(),
                         d_top_in_.data() + x_cols, R, d_vectors_.data());
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const float* dv = d_vectors_.data() + b * T * K;
    float* de = d_e + b * F * K;
    std::memset(de, 0, sizeof(float) * N * K);  // the dense fields' embeddings are not read
    if (N > 0) {
      const float* dx = d_top_in_.data() + b * R;  // the bottom output's own columns
      float* db = d_bottom_.data() + b * K;
      for (int64_t k = 0; k < K; ++k) db[k] = dx[k] + dv[k];
      dv += K;
    }
    std::memcpy(de + N * K, dv, sizeof(float) * C * K);
  }
  if (N > 0) bottom_.Backward(B, d_bottom_.data(), /*d_src=*/nullptr);
}

}  // namespace ctrain::model
