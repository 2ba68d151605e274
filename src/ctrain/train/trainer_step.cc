// One synchronous step (docs/training.md#step): pull the rows, forward and
// backward on each tower, merge the towers, push the sparse rows, update the
// dense parameters; the learning-rate schedule; the epoch order.
#include "ctrain/train/trainer_impl.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "ctrain/model/random.h"
#include "ctrain/optim/lr_schedule.h"
#include "ctrain/train/gradient_exchange.h"
#include "ctrain/train/remote_parameters.h"

namespace ctrain::train {
namespace {

// The error for a step whose loss is not finite, naming the term. When the
// batch holds extreme input values (input_checks.h), they are the cause: the
// message names their input lines; only ordinary inputs get the
// learning-rate hint.
Status NonFiniteLoss(int64_t step, const model::LossTerms& loss, const data::Batch& batch,
                     const std::vector<std::string>& paths, const data::ExampleReaderOptions& reader) {
  const char* term = !std::isfinite(loss.logloss) ? "logloss" : (!std::isfinite(loss.l2) ? "l2" : "loss");
  const double v = !std::isfinite(loss.logloss) ? loss.logloss : (!std::isfinite(loss.l2) ? loss.l2 : loss.loss);
  char buf[256];
  std::snprintf(buf, sizeof buf, "step %lld: loss is not finite (term: %s = %g)", static_cast<long long>(step), term,
                v);
  const std::vector<ExtremeRow> rows = ExtremeRows(batch, 5);
  if (rows.empty())
    return InvalidArgumentError(std::string(buf) +
                                "; training stopped before applying this step (diverged: try a smaller "
                                "--learning-rate)");
  std::string m = std::string(buf) + " on a batch holding extreme input values: ";
  const std::vector<std::string> where = LocateRows(paths, reader, batch, rows);
  for (size_t i = 0; i < where.size(); ++i) m += (i ? "; " : "") + where[i];
  m += ". Values this large overflow the forward pass (DeepFM multiplies each value into an embedding and the FM "
       "term squares the sum): scale them (e.g. log1p) or drop these rows. Training stopped before applying this step";
  return InvalidArgumentError(m);
}

}  // namespace

Status Trainer::Impl::PullRows(Replica& rep) {
  const size_t U = rep.unique_ids.size();
  rep.w_rows.resize(U);
  rep.v_rows.resize(U * options.model.embedding_size);
  if (remote != nullptr)  // the rows and the current dense values, from the servers (keeps_dense: when they moved)
    return remote->Pull(rep.unique_ids, rep.w_rows.data(), rep.v_rows.data(), &rep.model->dense_params());
  CTRAIN_RETURN_IF_ERROR(w_table->Pull(rep.unique_ids, rep.w_rows.data()));
  return v_table->Pull(rep.unique_ids, rep.v_rows.data());
}

Status Trainer::Impl::PushRows(const model::SparseGrad& w_grad, const model::SparseGrad& v_grad, int64_t step) {
  if (keys != nullptr) {  // the keys without a row read the default row, which stays zero: its gradient is dropped
    const int64_t d = keys->default_row();
    for (const model::SparseGrad* g : {&w_grad, &v_grad}) {
      LocalParameterTable& table = g == &w_grad ? *w_table : *v_table;
      const std::span<const int64_t> ids(g->ids);
      const size_t at = static_cast<size_t>(std::lower_bound(ids.begin(), ids.end(), d) - ids.begin());
      const bool has = at < ids.size() && ids[at] == d;
      if (at > 0) CTRAIN_RETURN_IF_ERROR(table.Push(SparseRows{ids.first(at), g->grad.data(), g->dim}, step));
      const size_t rest = at + (has ? 1 : 0);
      if (rest < ids.size())
        CTRAIN_RETURN_IF_ERROR(
            table.Push(SparseRows{ids.subspan(rest), g->grad.data() + rest * static_cast<size_t>(g->dim), g->dim}, step));
    }
    return Status::OK();
  }
  if (!w_grad.ids.empty())
    CTRAIN_RETURN_IF_ERROR(w_table->Push(SparseRows{w_grad.ids, w_grad.grad.data(), w_grad.dim}, step));
  if (!v_grad.ids.empty())
    CTRAIN_RETURN_IF_ERROR(v_table->Push(SparseRows{v_grad.ids, v_grad.grad.data(), v_grad.dim}, step));
  return Status::OK();
}

float* Trainer::Impl::DenseValue(size_t i) {
  return hog_master.empty() ? replicas[0].model->dense_params()[i].value.data() : hog_master[i].data();
}

void Trainer::Impl::SyncReplicas() {
  auto& d0 = replicas[0].model->dense_params();
  for (size_t r = hog_master.empty() ? 1 : 0; r < replicas.size(); ++r) {
    auto& d = replicas[r].model->dense_params();
    for (size_t i = 0; i < d.size(); ++i) {
      const float* src = DenseValue(i);
      std::memcpy(d[i].value.data(), src, d0[i].value.size() * sizeof(float));
    }
    auto& s = replicas[r].model->state();
    auto& s0 = replicas[0].model->state();
    if (r != 0)
      for (size_t i = 0; i < s.size(); ++i) s[i].value = s0[i].value;
  }
}

void Trainer::Impl::EpochOrder(int64_t n, int64_t epoch, std::vector<int64_t>* order) const {
  order->resize(n);
  std::iota(order->begin(), order->end(), int64_t{0});
  if (!options.shuffle) return;
  // Fisher-Yates with a generator seeded from (seed, epoch): the order is a
  // pure function of both, so a resumed run recomputes it exactly.
  std::mt19937_64 rng(model::StreamKey(options.seed, 0x5eed0000ULL + static_cast<uint64_t>(epoch)));
  for (int64_t i = n - 1; i > 0; --i) {
    const uint64_t j = rng() % static_cast<uint64_t>(i + 1);
    std::swap((*order)[i], (*order)[j]);
  }
}

void Trainer::Impl::Compute(Replica& rep, int64_t dropout_step, int64_t step, bool translated) {
  if (keys != nullptr && !translated) {
    rep.status = TranslateKeys(rep.batch, /*train=*/true, step);
    if (!rep.status.ok()) {
      rep.loss = model::LossTerms();
      return;
    }
  }
  model::UniqueIds(rep.batch, &rep.unique_ids, &rep.index);
  rep.status = PullRows(rep);
  if (!rep.status.ok()) {
    rep.loss = model::LossTerms();  // finite: StepStatus reports rep.status
    return;
  }
  rep.status = rep.model->TrainStep(rep.batch, rep.unique_ids, rep.index, rep.w_rows.data(), rep.v_rows.data(),
                                    dropout_step, &rep.w_grad, &rep.v_grad, &rep.loss);
}

Status Trainer::Impl::StepStatus(const Replica& rep, int64_t step) const {
  if (rep.status.ok()) return Status::OK();
  if (!std::isfinite(rep.loss.logloss) || !std::isfinite(rep.loss.l2))
    return NonFiniteLoss(step, rep.loss, rep.batch, source_paths, source_reader);
  return rep.status;
}

void Trainer::Impl::ApplyDense(int64_t step, const std::vector<model::DenseParam>& grads_from) {
  for (size_t i = 0; i < grads_from.size(); ++i) {
    std::vector<float*> slots(dense_slots[i].size());
    for (size_t k = 0; k < slots.size(); ++k) slots[k] = dense_slots[i][k].data();
    optimizer->ApplyDense(DenseValue(i), grads_from[i].grad.data(), slots.data(),
                          static_cast<int64_t>(grads_from[i].value.size()), step);
  }
}

void Trainer::Impl::MergeSparse(const std::vector<const model::SparseGrad*>& g, const std::vector<float>& wt, model::SparseGrad* out) {
  const int32_t dim = g[0]->dim;
  out->dim = dim;
  out->ids.clear();
  for (auto* s : g) out->ids.insert(out->ids.end(), s->ids.begin(), s->ids.end());
  std::sort(out->ids.begin(), out->ids.end());
  out->ids.erase(std::unique(out->ids.begin(), out->ids.end()), out->ids.end());
  out->grad.assign(out->ids.size() * dim, 0.0f);
  for (size_t t = 0; t < g.size(); ++t) {  // tower order: deterministic sums
    size_t j = 0;
    for (size_t i = 0; i < g[t]->ids.size(); ++i) {
      while (out->ids[j] != g[t]->ids[i]) ++j;
      const float* src = g[t]->grad.data() + i * dim;
      float* dst = out->grad.data() + j * dim;
      for (int32_t k = 0; k < dim; ++k) dst[k] += wt[t] * src[k];
    }
  }
}

Status Trainer::Impl::SyncStep(int64_t B, const FillFn& fill, double* loss_out) {
  const int64_t step = pos.global_step + 1;
  if (options.has_lr_schedule()) SetScheduledRate(step - warm_start_step);
  const int64_t ostep = step - opt_step_base;  // the optimizer's own count (Adam's bias correction)
  const int32_t T = static_cast<int32_t>(replicas.size());
  // Distributed: distinct dropout streams per rank (step, rank) -> step * N + rank.
  // Parameter servers: per worker (step, worker) -> step * W + k.
  const int64_t key = exch != nullptr     ? step * exch->size() + exch->rank()
                      : remote != nullptr ? step * remote->num_workers() + remote->worker_index()
                                          : step;
  int64_t examples = B;
  if (remote != nullptr && B == 0) {  // a sync round without a batch for this worker: weight 0
    // (keeping the dense parameters, the worker's dense values go along: a round may average them.)
    CTRAIN_RETURN_IF_ERROR(remote->Push(
        {}, {}, remote->keeps_dense() ? &replicas[0].model->dense_params() : nullptr, current_lr, 0));
    examples = 0;
    *loss_out = 0;
  } else if (T == 1) {
    Replica& rep = replicas[0];
    fill(rep, 0, B);
    const bool across = keys != nullptr && exch != nullptr;  // a keyed table under mpirun: every rank's keys at once
    if (across) {
      data::Batch* b = &rep.batch;
      CTRAIN_RETURN_IF_ERROR(TranslateAcrossRanks(std::span<data::Batch* const>(&b, 1), step));
    }
    Compute(rep, key, step, /*translated=*/across);
    CTRAIN_RETURN_IF_ERROR(StepStatus(rep, step));
    double loss = rep.loss.loss;
    if (exch != nullptr)
      CTRAIN_RETURN_IF_ERROR(ExchangeStep(step, B, &rep.w_grad, &rep.v_grad, rep.model->dense_params(),
                                          rep.model->state(), &loss, &examples));
    if (remote != nullptr) {  // the servers run the optimizer (keeps_dense: for the rows; the dense one is here)
      if (remote->keeps_dense()) ApplyDense(ostep, rep.model->dense_params());
      CTRAIN_RETURN_IF_ERROR(remote->Push(rep.w_grad, rep.v_grad, &rep.model->dense_params(), current_lr, B));
    } else {
      CTRAIN_RETURN_IF_ERROR(PushRows(rep.w_grad, rep.v_grad, ostep));
      ApplyDense(ostep, rep.model->dense_params());
    }
    *loss_out = loss;
  } else {
    // Slices [B*t/T, B*(t+1)/T); a tower with an empty slice sits out.
    std::vector<int64_t> lo(T + 1);
    for (int32_t t = 0; t <= T; ++t) lo[t] = B * t / T;
    // A keyed table admits keys in batch order, tower after tower, so that which sighting of a key gets its row
    // never depends on the towers' timing (deterministic, and the counts of one tower): the slices are filled
    // in parallel, translated in tower order, then computed in parallel.
    const bool keyed = keys != nullptr;
    if (keyed) {
      pool->Run([&](int32_t t) {
        if (lo[t + 1] > lo[t]) fill(replicas[t], lo[t], lo[t + 1]);
      });
      if (exch != nullptr) {  // under mpirun: every rank's towers at once, in rank then tower order
        std::vector<data::Batch*> batches;
        for (int32_t t = 0; t < T; ++t) {
          replicas[t].status = Status::OK();
          if (lo[t + 1] > lo[t]) batches.push_back(&replicas[t].batch);
        }
        CTRAIN_RETURN_IF_ERROR(TranslateAcrossRanks(batches, step));
      } else {
        for (int32_t t = 0; t < T; ++t)
          replicas[t].status =
              lo[t + 1] > lo[t] ? TranslateKeys(replicas[t].batch, /*train=*/true, step) : Status::OK();
      }
    }
    pool->Run([&](int32_t t) {
      Replica& rep = replicas[t];
      if (lo[t + 1] == lo[t]) {
        rep.status = Status::OK();
        return;
      }
      if (keyed && !rep.status.ok()) {
        rep.loss = model::LossTerms();
        return;
      }
      if (!keyed) fill(rep, lo[t], lo[t + 1]);
      // Distinct dropout streams per tower: (step, tower) -> step * T + t.
      Compute(rep, key * T + t, step, /*translated=*/keyed);
    });
    std::vector<const model::SparseGrad*> wg, vg;
    std::vector<float> wt;
    std::vector<int32_t> active;
    double loss = 0;
    for (int32_t t = 0; t < T; ++t) {
      if (lo[t + 1] == lo[t]) continue;
      CTRAIN_RETURN_IF_ERROR(StepStatus(replicas[t], step));
      active.push_back(t);
      wt.push_back(static_cast<float>(static_cast<double>(lo[t + 1] - lo[t]) / static_cast<double>(B)));
      wg.push_back(&replicas[t].w_grad);
      vg.push_back(&replicas[t].v_grad);
      loss += wt.back() * replicas[t].loss.loss;
    }
    MergeSparse(wg, wt, &merged_w);
    MergeSparse(vg, wt, &merged_v);
    // Dense: weighted sum of tower grads into replica 0's grads, then one update.
    auto& d0 = replicas[0].model->dense_params();
    for (size_t i = 0; i < d0.size(); ++i) {
      const int64_t n = static_cast<int64_t>(d0[i].grad.size());
      float* g0 = d0[i].grad.data();
      const size_t A = active.size();
#pragma omp parallel for schedule(static) if (n > 65536)
      for (int64_t e = 0; e < n; ++e) {
        float s = 0.0f;
        for (size_t a = 0; a < A; ++a) s += wt[a] * replicas[active[a]].model->dense_params()[i].grad[e];
        g0[e] = s;
      }
    }
    // BN moving statistics: mean over towers (each moved from the same value).
    auto& s0 = replicas[0].model->state();
    for (size_t i = 0; i < s0.size(); ++i)
      for (size_t e = 0; e < s0[i].value.size(); ++e) {
        float s = 0.0f;
        for (size_t a = 0; a < active.size(); ++a) s += wt[a] * replicas[active[a]].model->state()[i].value[e];
        s0[i].value[e] = s;
      }
    if (exch != nullptr)
      CTRAIN_RETURN_IF_ERROR(ExchangeStep(step, B, &merged_w, &merged_v, d0, s0, &loss, &examples));
    CTRAIN_RETURN_IF_ERROR(PushRows(merged_w, merged_v, ostep));
    ApplyDense(ostep, d0);
    SyncReplicas();
    *loss_out = loss;
  }
  ++pos.global_step;
  pos.examples += examples;
  step_examples = examples;
  if (exch != nullptr && exch->check_replicas_every() > 0 && pos.global_step % exch->check_replicas_every() == 0)
    CTRAIN_RETURN_IF_ERROR(CheckReplicas());
  return Status::OK();
}

void Trainer::Impl::SetScheduledRate(int64_t step) {
  const float lr =
      static_cast<float>(optim::ScheduledLearningRate(options.lr_schedule(), BaseRate(), step));
  current_lr = lr;
  optimizer->set_learning_rate(lr);
  if (remote != nullptr) return;  // pushed with the step's gradients
  w_table->mutable_optimizer().set_learning_rate(lr);
  v_table->mutable_optimizer().set_learning_rate(lr);
}

}  // namespace ctrain::train
