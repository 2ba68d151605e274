#include "ctrain/monitor/train_monitor.h"

namespace ctrain::monitor {

void TrainMonitor::OnStep(const train::StepInfo& s) {
  ++steps_;
  examples_ += s.examples;
  seconds_ += s.step_seconds;
  wait_ += s.input_wait_seconds;
  if (s.has_loss) loss_ += s.loss, ++loss_steps_;
  if (steps_ < every_) return;
  std::vector<Scalar> scalars{{"train/step_time_ms", 1000.0 * seconds_ / steps_},
                              {"train/examples_per_sec", seconds_ > 0 ? examples_ / seconds_ : 0.0},
                              {"train/input_wait_percent", seconds_ > 0 ? 100.0 * wait_ / seconds_ : 0.0}};
  if (loss_steps_ > 0) scalars.emplace_back("train/loss", loss_ / loss_steps_);
  monitor_->Record("train", s.global_step, scalars);
  steps_ = examples_ = loss_steps_ = 0;
  seconds_ = wait_ = loss_ = 0;
}

void TrainMonitor::OnEval(int64_t global_step, const train::EvalResult& eval) {
  monitor_->Record("eval", global_step, {{"eval/auc", eval.auc}, {"eval/logloss", eval.logloss}});
}

}  // namespace ctrain::monitor
