// EmbeddingModel: the part every CTR model of the zoo shares (model/model.h
// lists the kinds), so a model is only its "head" over the field embeddings.
//
// Per step, for a batch of B examples with F fields (docs/model.md):
//   e[b,f,:]  = V[ids[b,f], :] * values[b,f]                    [B, F, K]
//               (multi-hot fields: the value-weighted sum of their ids' rows)
//   y_first   = sum_f w[ids[b,f]] * values[b,f]                  [B]   (models with a first-order / wide term)
//   logit     = bias + y_first + head(e, batch)                  [B]
//   loss      = mean_b sigmoid_xent(logit, label) + l2
//   l2        = l2_reg * ( sum_{u in unique ids} w[u]^2 + ||V[u,:]||^2 )   (over the tables the model reads)
// The base owns the dense "bias" parameter (first in dense_params(), named by
// the model: DeepFM's "fm_bias"), checks the batch, gathers and pools the
// embeddings, computes the loss and turns d e into the sparse gradients of w
// and V. A head adds its logit term and, in backward, writes d e.
//
// Errors (TrainStep/Predict): FailedPrecondition (invalid config: Validate's
// message); InvalidArgument (variable-length batch, bad field_splits,
// batch.field_size != config, empty batch, index/unique_ids inconsistent with
// batch.ids naming position p, null rows for a table the model reads, a
// numeric field f < num_dense_fields whose id is not f (all kinds but dlrm), or
// "step S: loss is not finite (term: logloss|l2)"); the head's (e.g.
// FullyConnected's FailedPrecondition for bf16 without AVX512_BF16).
// Determinism, memory and thread safety: as model/model.h; a steady-state step
// allocates nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/batch.h"
#include "ctrain/model/layers/embedding_lookup.h"
#include "ctrain/model/model.h"

namespace ctrain::model {

// What a head reads in forward and backward.
struct HeadInput {
  const data::Batch* batch = nullptr;  // the step's batch (labels, values; multi-hot splits)
  int64_t B = 0;                        // examples
  int32_t F = 0;                        // fields
  int32_t K = 0;                        // embedding width
  const float* e = nullptr;             // [B, F, K] pooled, value-scaled embeddings (null if the model reads no V)
};

class EmbeddingModel : public Model {
 public:
  std::string_view kind() const override { return config_.kind; }
  const Status& status() const override { return status_; }
  std::vector<DenseParam>& dense_params() override { return dense_; }
  std::vector<DenseParam>& state() override { return state_; }
  // Default: InitDenseParams (model.h): Glorot-uniform "/weights", gamma 1, the rest 0, moving variance 1.
  void InitDense(uint64_t seed) override;

  Status TrainStep(const data::Batch& batch, std::span<const int64_t> unique_ids, std::span<const int32_t> index,
                   const float* w_rows, const float* v_rows, int64_t step, SparseGrad* w_grad, SparseGrad* v_grad,
                   LossTerms* loss) override;
  Status Predict(const data::Batch& batch, std::span<const int64_t> unique_ids, std::span<const int32_t> index,
                 const float* w_rows, const float* v_rows, float* probs) override;

  // Logits of the last TrainStep/Predict [B].
  std::span<const float> logits() const { return {logits_.data(), static_cast<size_t>(batch_size_)}; }
  const ModelConfig& config() const { return config_; }

 protected:
  // status() is config.Validate(); the bias parameter [1] is registered first, as `bias_name`.
  // uses_first_order: the model reads w (y_first); uses_embeddings: it reads V (e).
  EmbeddingModel(ModelConfig config, std::string bias_name, bool uses_first_order, bool uses_embeddings);

  // Prepares the head's buffers and primitives for batch size B (called on every step; cheap when unchanged).
  virtual Status ResizeHead(int64_t B) = 0;
  // Adds the head's term to logits [B] (which hold bias + y_first). training: dropout and batch BN statistics.
  virtual void HeadForward(const HeadInput& in, bool training, int64_t step, float* logits) = 0;
  // Backward of the last training HeadForward: d_logits [B] -> every head parameter's grad (overwrite)
  // and, when the model reads V, d_e [B, F, K] (overwrite).
  virtual void HeadBackward(const HeadInput& in, const float* d_logits, float* d_e) = 0;

  bool uses_first_order() const { return uses_w_; }
  bool uses_embeddings() const { return uses_v_; }

  ModelConfig config_;
  Status status_;
  std::vector<DenseParam> dense_;
  std::vector<DenseParam> state_;

 private:
  Status Check(const data::Batch& batch, std::span<const int64_t> unique_ids, std::span<const int32_t> index,
               const float* w_rows, const float* v_rows) const;
  // Kinds that embed the numeric fields (all but dlrm): field f < num_dense_fields holds the one id f.
  Status CheckNumericIds(const data::Batch& batch) const;
  Status Resize(int64_t B);
  void Forward(const data::Batch& batch, std::span<const int32_t> index, const float* w_rows, const float* v_rows,
               bool training, int64_t step);

  bool uses_w_ = true, uses_v_ = true;
  int bias_ = 0;
  int64_t batch_size_ = 0;
  std::vector<float> e_, d_e_, y_first_, logits_, d_logits_;
  RowPositions positions_;
  std::vector<int32_t> slot_of_;  // multi-hot batches: (row, field) slot of each id occurrence
};

}  // namespace ctrain::model
