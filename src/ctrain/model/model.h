// Model: what the trainer, checkpoints, autotune and the parameter servers
// use of a CTR model (docs/model.md, docs/training.md#the-code-one-loop-for-every-mode).
// A model reads two sparse tables the caller owns, w [feature_size, 1] (the
// first-order weights) and V [feature_size, K] (the embeddings), and owns its
// dense parameters; a model that does not read a table leaves its rows
// pointer unused and its SparseGrad empty. Per step the caller
//   1. UniqueIds(batch, &unique_ids, &index)
//   2. gathers w_rows [U] and v_rows [U, K] of unique_ids from its tables
//      (local tables, the parameter servers),
//   3. calls TrainStep, which fills every dense gradient and the sparse
//      gradients of the U rows,
//   4. applies its optimizers (a model never updates a parameter, except its
//      non-trainable state(), e.g. BN moving statistics).
// Models (ModelKinds(), docs/model.md): "deepfm", and the kinds built on its
// switches "lr", "fm", "wide_deep" (model/deepfm.h); "dcn", "dcn_v2"
// (model/dcn.h); "dlrm" (model/dlrm.h); "xdeepfm" (model/xdeepfm.h). Every kind
// is an EmbeddingModel (model/embedding_model.h): its head over the field
// embeddings. A new model is a Model implementation and a line in MakeModel
// (model.cc); the trainer does not change.
//
// Thread safety: a Model object is used by one thread at a time (its kernels
// use OpenMP internally). Determinism: for a fixed OpenMP thread count,
// TrainStep/Predict produce the same bits on every run.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/batch.h"
#include "ctrain/model/embedding_initializer.h"
#include "ctrain/model/layers/fully_connected.h"

namespace ctrain::model {

// The hyper-parameters of every model (the fields a model does not use are
// ignored by it and still recorded).
struct ModelConfig {
  // Which model (ModelKinds()): recorded in checkpoints, so eval, predict,
  // resume and export refuse another kind by name.
  std::string kind = "deepfm";
  int64_t feature_size = 0;  // rows of w and V (ids must lie in [0, feature_size) for the tables; not checked here)
  // --oov bucket: the last field_size rows of w and V are per-field out-of-vocabulary rows. The input's
  // ids lie in [0, vocabulary_size()); the readers read an id at or above it in field f as row
  // vocabulary_size() + f (data::ExampleReaderOptions::oov_buckets). false: feature_size is the id space.
  bool oov_buckets = false;
  int64_t vocabulary_size() const { return oov_buckets ? feature_size - field_size : feature_size; }
  int32_t field_size = 0;    // F: features per example (fixed-length batches)
  int32_t embedding_size = 8;                     // K
  std::vector<int32_t> deep_layers = {400, 400, 400};  // hidden widths; may be empty (deep = linear)
  // DROP probability of every hidden layer's dropout, in [0, 1). The seed's
  // --dropout is the KEEP probability: seed 0.5 == ctrain 0.5, seed 0.8 == ctrain 0.2.
  float dropout = 0.5f;
  bool batch_norm = false;            // BN after each hidden ReLU (seed order)
  float batch_norm_momentum = 0.99f;  // moving = m * moving + (1 - m) * batch
  float batch_norm_epsilon = 1e-3f;   // tf.contrib.layers.batch_norm default
  float l2_reg = 0.0f;                // see l2 above (no 1/2 factor; TF's l2_loss has one)
  // DeepFM's terms (kind "deepfm" only; "lr", "fm" and "wide_deep" fix them: DeepFmTermsOf).
  bool use_first_order = true;
  bool use_fm = true;
  bool use_deep = true;
  uint64_t seed = 2017;  // dropout stream
  // DCN / DCN-V2 (Wang et al. 2017, 2021): cross layers over x0 = flatten(e) [F*K].
  int32_t cross_layers = 3;
  // DCN-V2: rank r of each cross layer's W = U V^T (0 = full rank, W [F*K, F*K]).
  int32_t low_rank = 0;
  // DCN-V2: low-rank experts per cross layer, mixed by a softmax gate (1 = no mixture; needs low_rank > 0 when > 1).
  int32_t num_experts = 1;
  // DCN / DCN-V2: "parallel" (cross and deep side by side, concatenated into the output layer) or
  // "stacked" (the deep network over the cross network's output).
  std::string model_structure = "parallel";
  // xDeepFM (Lian et al. 2018): feature maps of each CIN layer.
  std::vector<int32_t> cin_layer_units = {16, 16, 16};
  // The first num_dense_fields fields are numeric, with ids 0..N-1 (ctrain's Criteo layout: numeric field i
  // has id i). DLRM (Naumov et al. 2019): their values feed the bottom MLP and their ids are not embedded;
  // every other kind embeds them as any field, their rows starting with numeric_embedding_initializer, and
  // checks each batch's ids of those fields (EmbeddingModel).
  int32_t num_dense_fields = 0;
  std::vector<int32_t> bottom_mlp = {64, 64};  // hidden widths of the bottom MLP (a last layer to K follows)
  std::vector<int32_t> top_mlp = {64, 64};     // hidden widths of the top MLP (a last layer to 1 follows)
  // How the tables' rows start (model/embedding_initializer.h: glorot_normal, normal:S,
  // truncated_normal:S, uniform:L), and the numeric fields' rows [0, num_dense_fields) ("" = the same).
  std::string embedding_initializer = "glorot_normal";
  std::string numeric_embedding_initializer;

  // The tables the model reads: the first-order weights w, the embeddings V.
  bool reads_w() const;
  bool reads_v() const;
  // Operand type of the MLP GEMMs (every FullyConnected layer). kBF16 = mixed
  // precision: GEMM operands rounded to bf16, f32 accumulation and master
  // weights (params, grads, activations, optimizer state all stay f32); needs
  // AVX512_BF16 (else TrainStep/Predict fail with FailedPrecondition). See
  // docs/model.md "Mixed precision".
  DataType gemm_dtype = DataType::kF32;

  // InvalidArgument naming the field when a value is out of range.
  Status Validate() const;
};

// Gradient rows for one sparse table, for the unique ids of a batch.
struct SparseGrad {
  std::vector<int64_t> ids;   // unique, ascending (== the unique_ids passed in)
  std::vector<float> grad;    // [ids.size(), dim], row-major, includes the l2 gradient
  int32_t dim = 0;
};

// A dense trainable parameter (or, in state(), a non-trainable tensor).
struct DenseParam {
  std::string name;             // TF-style: "fm_bias", "mlp0/weights", "bn_0/gamma", "deep_out/biases", ...
  std::vector<float> value;     // row-major, shape below
  std::vector<float> grad;      // same size as value; overwritten by TrainStep (empty for state)
  std::vector<int64_t> shape;
};

// Loss of one step, by term, so a trainer can say which one went bad.
struct LossTerms {
  double loss = 0;     // logloss + l2
  double logloss = 0;  // mean sigmoid cross-entropy over the batch
  double l2 = 0;
};

// The terms of the kinds built on DeepFM's code (deepfm: its switches; lr: first order;
// fm: first order + FM; wide_deep: first order (the wide part over the same ids) + deep).
struct DeepFmTerms {
  bool first_order = true, fm = true, deep = true;
};
DeepFmTerms DeepFmTermsOf(const ModelConfig& config);
// True for the kinds DeepFM's code implements (deepfm, lr, fm, wide_deep).
bool IsDeepFmKind(std::string_view kind);

// Appends a zero-filled parameter (with a zero grad when trainable) and returns its index.
int AddDenseParam(std::vector<DenseParam>* params, std::string name, std::vector<int64_t> shape, bool trainable);
// The zoo's dense initialisation, by name: "*/weights" Glorot-uniform (tf's xavier_initializer, limit
// sqrt(6/(fan_in+fan_out)), fan_in = shape[0], fan_out = the product of the rest, 1 for a vector), each
// parameter from its own stream (seed, its index); "*/gamma" 1; everything else 0; state "*moving_variance" 1,
// the rest 0.
void InitDenseParams(uint64_t seed, std::vector<DenseParam>* dense, std::vector<DenseParam>* state);

// Unique ids of the batch (ascending) and index [B*F or nnz]:
// unique_ids[index[p]] == batch.ids[p].
void UniqueIds(const data::Batch& batch, std::vector<int64_t>* unique_ids, std::vector<int32_t>* index);

// How config's tables start (InitEmbeddings' `init`). Errors: the initializers' spellings
// (ParseEmbeddingInitializer), naming the option.
StatusOr<EmbeddingInit> EmbeddingInitOf(const ModelConfig& config);

class Model {
 public:
  virtual ~Model() = default;

  // The kind MakeModel made (config.kind).
  virtual std::string_view kind() const = 0;
  // An invalid config is reported here and by every TrainStep/Predict.
  virtual const Status& status() const = 0;
  // Trainable dense parameters, in a fixed order with TF-style names (the
  // checkpoint tensors, the parameter servers' dense placement). Callers may
  // change values, never sizes.
  virtual std::vector<DenseParam>& dense_params() = 0;
  // Non-trainable state for checkpoints (e.g. BN moving statistics); updated by TrainStep.
  virtual std::vector<DenseParam>& state() = 0;
  // Initialises the dense parameters and state; deterministic in seed.
  virtual void InitDense(uint64_t seed) = 0;
  // Forward + backward in training mode: unique_ids and index from
  // UniqueIds(batch); w_rows [U], v_rows [U, K] the rows of unique_ids; step
  // selects the dropout masks. Fills every dense_params()[i].grad, *w_grad
  // (dim 1) and *v_grad (dim K) and *loss. Errors: the model's (DeepFM::TrainStep).
  virtual Status TrainStep(const data::Batch& batch, std::span<const int64_t> unique_ids,
                           std::span<const int32_t> index, const float* w_rows, const float* v_rows, int64_t step,
                           SparseGrad* w_grad, SparseGrad* v_grad, LossTerms* loss) = 0;
  // Inference mode: probs [B] = sigmoid(logit).
  virtual Status Predict(const data::Batch& batch, std::span<const int64_t> unique_ids, std::span<const int32_t> index,
                         const float* w_rows, const float* v_rows, float* probs) = 0;
  // Floating-point operations of the model's GEMMs per training example
  // (forward + both backward GEMMs): autotune's and the benchmarks' roofline.
  virtual double GemmFlopsPerExample() const = 0;
};

// The kinds MakeModel knows, in the order the help lists them.
const std::vector<std::string>& ModelKinds();
// InvalidArgument "unknown model 'x' (models: deepfm, lr, ...)" unless kind is one of ModelKinds().
Status CheckModelKind(std::string_view kind);
// The model `config.kind` names. Errors: CheckModelKind's.
StatusOr<std::unique_ptr<Model>> MakeModel(const ModelConfig& config);

}  // namespace ctrain::model
