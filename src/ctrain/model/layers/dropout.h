// Inverted dropout (Srivastava et al. 2014; tf.nn.dropout):
//   mask[i] = (u_i >= rate) ? 1 / (1 - rate) : 0,   dst = src * mask,   diff_src = diff_dst * mask
// where `rate` is the DROP probability and u_i is uniform in [0, 1).
//
// NOTE: the seed (lambdaji/tf_repos DeepFM.py) calls tf.nn.dropout(x, keep_prob=dropout[i]),
// i.e. its --dropout flag is the KEEP probability (0.5,0.5,0.5 there means keep half).
// ctrain's `rate` is the drop probability: seed keep_prob p  <=>  ctrain rate 1 - p.
//
// Randomness: u_i = f(seed, stream, i) with a counter-based hash (random.h), where
// the caller picks stream = f(step, layer). A step is therefore reproducible on
// any thread count and can be recomputed without storing masks.
// Inference: do not call Forward (identity). Shapes: flat arrays of n floats.
// Thread safety: reentrant.
#pragma once

#include <cstdint>

namespace ctrain::model {

// Stream id for (step, layer) so different layers and steps never share draws.
uint64_t DropoutStream(int64_t step, int32_t layer);

// REQUIRES: 0 <= rate < 1. Writes mask [n] and dst [n]; dst may alias src.
void DropoutForward(int64_t n, float rate, uint64_t seed, uint64_t stream, const float* src, float* mask, float* dst);
// diff_src may alias diff_dst.
void DropoutBackward(int64_t n, const float* mask, const float* diff_dst, float* diff_src);

}  // namespace ctrain::model
