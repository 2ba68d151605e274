#include "ctrain/monitor/train_monitor.h"

namespace ctrain::monitor {

void TrainMonitor::OnStep(const train::StepInfo& s) {
  ++steps_;
  examples_ += s.examples;
  seconds_ += s.step_seconds;
  wait_ += s.input_wait_seconds;
  loss_ += s.loss;
  if (steps_ < every_) return;
  monitor_->Record("train", s.global_step,
                   {{"train/step_time_ms", 1000.0 * seconds_ / steps_},
                    {"train/examples_per_sec", seconds_ > 0 ? examples_ / seconds_ : 0.0},
                    {"train/input_wait_percent", seconds_ > 0 ? 100.0 * wait_ / seconds_ : 0.0},
                    {"train/loss", loss_ / steps_}});
  steps_ = examples_ = 0;
  seconds_ = wait_ = loss_ = 0;
}

void TrainMonitor::OnEval(int64_t global_step, const train::EvalResult& eval) {
  monitor_->Record("eval", global_step, {{"eval/auc", eval.auc}, {"eval/logloss", eval.logloss}});
}

}  // namespace ctrain::monitor
