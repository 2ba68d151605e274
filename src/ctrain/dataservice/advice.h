// The input advisor: from a trainer's input wait and the workers' production,
// how many data workers would keep the trainer fed (docs/data-service.md#status).
//
// A trainer that consumed b batches/s while waiting a fraction w of its time on
// input would consume b / (1 - w) batches/s if input were free. W workers that
// made b batches/s between them make b / W each (when their queues run empty,
// i.e. they are the bottleneck), so ceil(W / (1 - w)) workers would keep up.
#pragma once

#include <cstdint>
#include <string>

namespace ctrain::dataservice {

struct AdviceInputs {
  std::string trainer;         // e.g. "trainer 0 of job j"
  double input_wait_fraction = 0;
  double batches_per_sec = 0;  // consumed by the trainer
  int32_t workers = 0;         // workers feeding it
  double worker_queue_fill = 0;  // mean fill of their queues, [0, 1]
};

// One line, e.g. "trainer 0 of job j waits 31 % on input; each worker makes
// 410 batches/s; 3 workers would keep it fed", or a compute-bound verdict.
// "" when there is too little to judge (no batches yet).
std::string InputAdvice(const AdviceInputs& in);

}  // namespace ctrain::dataservice
