// Mlp: a tower of fully connected layers, each hidden layer
//   Linear -> ReLU -> [BatchNorm] -> [Dropout]      (the seed DeepFM's order)
// and an optional plain Linear output layer. Every model's MLPs (DeepFM's
// deep part, Wide&Deep's deep part, DCN's deep network, DLRM's bottom and top
// MLPs, xDeepFM's DNN) are one of these, so their kernels, initialisation and
// checkpoint names come from one place.
//
// Shapes (row-major): src [B, in]; hidden layer i: weights [w_i, w_{i+1}],
// biases [w_{i+1}], BN gamma/beta/moving_mean/moving_variance [w_{i+1}];
// output [B, out_dim()] (out_dim() = the output layer's width, or the last
// hidden width when there is no output layer, or `in` when there is neither).
//
// Parameters live in the owning model's dense/state vectors (Model::dense_params,
// Model::state), registered at construction in this order per layer: weights,
// biases, [gamma, beta]; names from MlpSpec (DeepFM: "mlp{i}/weights",
// "bn_{i}/gamma", "deep_out/weights"). The Mlp keeps indices into those vectors,
// which must outlive it and never be resized after construction.
//
// Determinism: dropout masks are a function of (seed, step, dropout_layer0 + i,
// element); the rest is as FullyConnected / BatchNorm (fixed order).
// Memory: buffers are allocated when B changes and reused otherwise.
// Thread safety: one Mlp per thread (it owns FullyConnected primitives).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/model/layers/fully_connected.h"
#include "ctrain/model/model.h"

namespace ctrain::model {

struct MlpSpec {
  int64_t in = 0;                      // input width (>= 1)
  std::vector<int32_t> hidden;         // hidden widths (may be empty)
  int32_t out = 0;                     // output layer width (Linear, no activation); 0 = no output layer
  std::string hidden_scope = "mlp";    // hidden layer i: "<hidden_scope><i>/weights|biases"
  std::string bn_scope = "bn_";        // "<bn_scope><i>/gamma|beta|moving_mean|moving_variance"
  std::string out_scope = "deep_out";  // "<out_scope>/weights|biases"
  bool batch_norm = false;
  float batch_norm_momentum = 0.99f;
  float batch_norm_epsilon = 1e-3f;
  float dropout = 0.0f;      // drop probability of each hidden layer, [0, 1)
  int32_t dropout_layer0 = 0;  // dropout stream of hidden layer i: DropoutStream(step, dropout_layer0 + i)
  DataType gemm_dtype = DataType::kF32;
};

// A spec with `config`'s MLP settings (batch_norm, its momentum and epsilon, dropout, gemm_dtype) over
// `in` with `hidden` widths and an output layer of width `out` (0 = none); scopes as MlpSpec's defaults.
MlpSpec MlpSpecOf(const ModelConfig& config, int64_t in, std::vector<int32_t> hidden, int32_t out);

class Mlp {
 public:
  Mlp() = default;
  // Registers the parameters in *dense (trainable) and *state (BN moving statistics).
  Mlp(MlpSpec spec, std::vector<DenseParam>* dense, std::vector<DenseParam>* state);

  const MlpSpec& spec() const { return spec_; }
  int64_t in_dim() const { return spec_.in; }
  int64_t out_dim() const;
  bool empty() const { return fc_.empty(); }

  // Prepares the GEMM primitives and buffers for batch size B. Errors: FullyConnected::Prepare's.
  Status Resize(int64_t B);
  // Forward: src [B, in] -> returns the output [B, out_dim()] (owned by the Mlp, or src itself when
  // the Mlp has no layer). training selects batch BN statistics (updating the moving ones) and dropout.
  // src must stay valid until Backward.
  const float* Forward(int64_t B, const float* src, bool training, uint64_t seed, int64_t step);
  // Backward of the last training Forward: d_out [B, out_dim()] (not modified) -> fills every layer's
  // parameter gradient (overwrites) and, when d_src is not null, d_src [B, in] (overwrites; may be
  // d_out only when the Mlp has no layer).
  void Backward(int64_t B, const float* d_out, float* d_src);
  // 3 x 2 x in x out per linear layer: forward + backward data + backward weights.
  double GemmFlopsPerExample() const;

 private:
  MlpSpec spec_;
  std::vector<DenseParam>* dense_ = nullptr;
  std::vector<DenseParam>* state_ = nullptr;
  std::vector<int64_t> widths_;  // [in, hidden..., (out)]
  std::vector<int> wei_, bia_, gamma_, beta_, mmean_, mvar_;
  std::vector<FullyConnected> fc_;
  int64_t batch_size_ = 0;
  const float* src_ = nullptr;
  bool trained_ = false;
  std::vector<std::vector<float>> act_, xhat_, bn_out_, inv_std_, mask_, drop_;
  std::vector<const float*> layer_in_;  // input of linear layer i
  std::vector<float> out_, g0_, g1_;
};

}  // namespace ctrain::model
