// Mean sigmoid cross-entropy with logits (tf.nn.sigmoid_cross_entropy_with_logits
// followed by reduce_mean, as in the seed), in the numerically stable form:
//   loss = 1/B * sum_b [ max(x_b, 0) - x_b * z_b + log(1 + exp(-|x_b|)) ]
//   d x_b = (sigmoid(x_b) - z_b) / B
// x: logits [B], z: labels [B] (usually 0/1, any real accepted).
// The sum is accumulated in double, b ascending (deterministic).
// Thread safety: reentrant.
#pragma once

#include <cstdint>

namespace ctrain::model {

// Numerically stable logistic function.
float Sigmoid(float x);

// Returns the mean loss. Writes d_logits [B] unless it is null.
double SigmoidCrossEntropy(int64_t B, const float* logits, const float* labels, float* d_logits);

}  // namespace ctrain::model
