// The trainer's monitoring (train/trainer.h TrainObserver -> monitor/monitor.h):
// per step, written every `every_steps` steps as kind "train" at the global step:
//   train/step_time_ms         mean wall time per step over the steps since the last write
//   train/examples_per_sec     examples / wall time over those steps
//   train/input_wait_percent   time blocked on input / wall time over those steps (0-100)
//   train/loss                 mean training loss over those of the steps that have one (left out when
//                              none has: StepInfo::has_loss, a user's script fed by the data service)
// and after every validation, as kind "eval":
//   eval/auc, eval/logloss
#pragma once

#include <cstdint>

#include "ctrain/monitor/monitor.h"
#include "ctrain/train/trainer.h"

namespace ctrain::monitor {

class TrainMonitor final : public train::TrainObserver {
 public:
  TrainMonitor(Monitor* monitor, int64_t every_steps) : monitor_(monitor), every_(every_steps < 1 ? 1 : every_steps) {}
  void OnStep(const train::StepInfo& step) override;
  void OnEval(int64_t global_step, const train::EvalResult& eval) override;

 private:
  Monitor* monitor_;
  int64_t every_;
  int64_t steps_ = 0, examples_ = 0;
  int64_t loss_steps_ = 0;
  double seconds_ = 0, wait_ = 0, loss_ = 0;
};

}  // namespace ctrain::monitor
