#include "ctrain/dataservice/advice.h"

#include <cmath>
#include <cstdio>

namespace ctrain::dataservice {

std::string InputAdvice(const AdviceInputs& in) {
  if (in.batches_per_sec <= 0 || in.workers < 1) return "";
  char buf[400];
  const double w = std::min(std::max(in.input_wait_fraction, 0.0), 0.99);
  const double per_worker = in.batches_per_sec / in.workers;
  if (w < 0.05) {
    std::snprintf(buf, sizeof buf,
                  "%s waits %.0f %% on input: it is compute-bound; %d worker%s at %.0f batches/s each keep it fed",
                  in.trainer.c_str(), 100 * w, in.workers, in.workers == 1 ? "" : "s", per_worker);
    return buf;
  }
  if (in.worker_queue_fill > 0.5) {
    std::snprintf(buf, sizeof buf,
                  "%s waits %.0f %% on input although the workers' queues are %.0f %% full: the transfer or the "
                  "trainer's own input handling is the limit, not the workers",
                  in.trainer.c_str(), 100 * w, 100 * in.worker_queue_fill);
    return buf;
  }
  if (w > 0.9) {  // nearly all waiting: the ratio says little beyond "many more"
    std::snprintf(buf, sizeof buf,
                  "%s waits %.0f %% on input: input-bound; each worker makes %.0f batches/s; more than %d workers "
                  "would be needed",
                  in.trainer.c_str(), 100 * w, per_worker, 10 * in.workers);
    return buf;
  }
  const int needed = static_cast<int>(std::ceil(in.workers / (1 - w) - 1e-9));
  std::snprintf(buf, sizeof buf, "%s waits %.0f %% on input; each worker makes %.0f batches/s; %d workers would keep it fed",
                in.trainer.c_str(), 100 * w, per_worker, needed);
  return buf;
}

}  // namespace ctrain::dataservice
