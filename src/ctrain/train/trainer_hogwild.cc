// Hogwild replicas (Recht et al. 2011, docs/training.md#hogwild): H threads
// each run whole steps on their own batches; the tables are updated without
// locks, the dense parameters under one mutex.
#include "ctrain/train/trainer_impl.h"

#include <cstring>
#include <mutex>

namespace ctrain::train {

Status Trainer::Impl::RunHogwild(const FetchFn& fetch, Progress* prog, int64_t* batches, double* wait_seconds) {
  std::atomic<int64_t> step_counter{pos.global_step};
  std::atomic<int64_t> examples{0}, done{0};
  std::atomic<bool> failed{false};
  std::mutex dense_mu;
  std::vector<Status> errors(replicas.size());
  std::vector<double> loss_sum(replicas.size(), 0.0), wait(replicas.size(), 0.0);
  std::vector<int64_t> loss_n(replicas.size(), 0);
  pool->Run([&](int32_t r) {
    Replica& rep = replicas[r];
    auto& dense = rep.model->dense_params();
    for (;;) {
      if (failed.load(std::memory_order_relaxed)) return;
      const auto t0 = Clock::now();
      StatusOr<bool> more = fetch(rep);
      wait[r] += Seconds(t0, Clock::now());
      if (!more.ok() || !*more) {
        if (!more.ok()) {
          errors[r] = more.status();
          failed = true;
        }
        return;
      }
      const int64_t step = step_counter.fetch_add(1) + 1;
      {
        std::lock_guard<std::mutex> lock(dense_mu);
        for (size_t i = 0; i < dense.size(); ++i)
          std::memcpy(dense[i].value.data(), hog_master[i].data(), dense[i].value.size() * sizeof(float));
      }
      Compute(rep, step, step);
      Status st = StepStatus(rep, step);
      if (st.ok()) st = PushRows(rep.w_grad, rep.v_grad, step - opt_step_base);  // lock-free (Hogwild!)
      if (!st.ok()) {
        errors[r] = st;
        failed = true;
        return;
      }
      {
        std::lock_guard<std::mutex> lock(dense_mu);
        ApplyDense(step - opt_step_base, dense);
      }
      examples += rep.batch.size();
      done += 1;
      loss_sum[r] += rep.loss.loss;
      loss_n[r] += 1;
      if (r == 0) {
        pos.global_step = step_counter.load();
        prog->examples = examples.load();
        PrintProgress(*prog, false);
      }
    }
  });
  for (auto& e : errors) CTRAIN_RETURN_IF_ERROR(e);
  pos.global_step = step_counter.load();
  pos.examples += examples.load();
  *batches = done.load();
  *wait_seconds = 0;
  for (size_t r = 0; r < replicas.size(); ++r) {
    prog->loss_sum += loss_sum[r];
    prog->loss_n += loss_n[r];
    *wait_seconds += wait[r];
  }
  return Status::OK();
}

}  // namespace ctrain::train
