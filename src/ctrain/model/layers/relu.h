// ReLU: dst = max(src, 0);  diff_src = diff_dst where dst > 0, else 0.
// The backward pass needs only dst (dst > 0 <=> src > 0), so the forward may run
// in place (src == dst). At src == 0 the subgradient 0 is used (as TF).
// Shapes: flat arrays of n floats. Thread safety: reentrant.
#pragma once

#include <cstdint>

namespace ctrain::model {

void ReluForward(int64_t n, const float* src, float* dst);
// diff_src may alias diff_dst.
void ReluBackward(int64_t n, const float* dst, const float* diff_dst, float* diff_src);

}  // namespace ctrain::model
