// Evaluation (train/ctr_metrics.h), early stopping and the best checkpoint,
// and the checks of the data a trainer is given.
#include "ctrain/train/trainer_impl.h"

#include <cmath>
#include <cstdio>

#include "ctrain/train/gradient_exchange.h"

namespace ctrain::train {
namespace {

// The error for a non-finite prediction of `row` (batch row `i`): names the
// row's input line and its largest value (never a silent NaN in eval/predict).
Status NonFinitePrediction(const Dataset& data, const data::Batch& batch, int64_t i, int64_t row) {
  ExtremeRow x{i, 0, 0};
  const int32_t F = batch.field_size;
  if (batch.multi_hot())
    return InvalidArgumentError("input row " + std::to_string(row) + ": the prediction is not finite");
  for (int32_t f = 0; f < F; ++f) {
    const float v = batch.values[i * F + f];
    if (!std::isfinite(v) || std::fabs(v) > std::fabs(x.value)) x = {i, f, v};
    if (!std::isfinite(v)) break;
  }
  const std::string where = LocateRows(data.source_paths(), data.source_reader(), batch, {x}).at(0);
  const bool extreme = !std::isfinite(x.value) || std::fabs(x.value) >= InputCheckOptions().extreme_abs_value;
  return InvalidArgumentError("input row " + std::to_string(row) + ": the prediction is not finite (" + where + ")" +
                              (extreme ? ": extreme input values overflow the model; scale them (e.g. log1p) or "
                                         "drop the row"
                                       : ": the model's parameters are not finite"));
}

}  // namespace

Status Trainer::Impl::EvaluateAndLog(const Dataset* valid, const char* when, int64_t* eval_step, TrainResult* result,
                                     bool scheduled) {
  const bool plateau_step = scheduled && options.lr_plateau();
  // mpirun: rank 0 validates and every rank takes its plateau decision, so all ranks come here at the same steps.
  const bool shared = plateau_step && exch != nullptr && exch->size() > 1;
  if (*eval_step == pos.global_step || (valid == nullptr && !shared)) return Status::OK();
  *eval_step = pos.global_step;
  if (valid != nullptr) {
    CTRAIN_ASSIGN_OR_RETURN(result->eval, Evaluate(*valid));
    result->evaluated = true;
    if (observer != nullptr) observer->OnEval(pos.global_step, result->eval);
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s%s step %lld: valid auc %.5f logloss %.5f (%lld examples)",
                  terminal ? "\r\033[K" : "", when, static_cast<long long>(pos.global_step), result->eval.auc,
                  result->eval.logloss, static_cast<long long>(result->eval.examples));
    Log(buf);
    // The order (docs/training.md#reduce-on-plateau): the plateau scheduler first, then early stopping and the
    // best checkpoint, so that a checkpoint written after this evaluation holds the rate it chose.
    if (plateau_step) CTRAIN_RETURN_IF_ERROR(StepPlateau(&result->eval));
    CTRAIN_RETURN_IF_ERROR(TrackBest(result));
    if (!saturation_warned) {
      const std::string w =
          SaturationWarning(result->eval.saturated_fraction, result->eval.examples, pos.global_step);
      if (!w.empty()) {
        saturation_warned = true;
        Warn(w, result);
      }
    }
  } else {
    CTRAIN_RETURN_IF_ERROR(StepPlateau(nullptr));  // a rank without validation data: rank 0's decision
  }
  return Status::OK();
}

Status Trainer::Impl::StepPlateau(const EvalResult* eval) {
  const double before = plateau.lr;
  const std::string metric = options.plateau_metric();
  if (eval != nullptr) optim::PlateauStep(options.plateau_config(), eval->Metric(metric), &plateau);
  if (exch != nullptr && exch->size() > 1) CTRAIN_RETURN_IF_ERROR(BroadcastPlateau());
  if (plateau.lr == before) return Status::OK();
  lr_drops.push_back({pos.global_step, plateau.lr});
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%slr plateau at step %lld: valid %s has not improved on %.6f by more than %g for %d evaluation(s): "
                "learning rate %g -> %g",
                terminal ? "\r\033[K" : "", static_cast<long long>(pos.global_step), metric.c_str(), plateau.best,
                options.lr_plateau_min_delta, options.lr_plateau_patience + 1, before, plateau.lr);
  Log(buf);
  return Status::OK();
}

Status Trainer::Impl::TrackBest(TrainResult* result) {
  if (!tracking_best()) return Status::OK();
  const std::string metric = options.best_metric();
  const double v = result->eval.Metric(metric);
  const bool higher = metric == "auc" || metric == "gauc" || metric == "pr_auc";
  const double d = options.early_stopping_min_delta;
  const bool improved =
      !std::isnan(v) && (std::isnan(best_value) || (higher ? v > best_value + d : v < best_value - d));
  if (improved) {
    best_value = v;
    best_step = pos.global_step;
    evals_since_best = 0;
    if (options.keep_best && (exch == nullptr || exch->is_chief())) {
      if (!hog_master.empty()) SyncReplicas();
      const std::string dir = BestDir();
      CTRAIN_RETURN_IF_ERROR(WriteTrainerCheckpoint(dir, pos.global_step, Tensors(), Meta(), 1));
      char buf[256];
      std::snprintf(buf, sizeof buf, "%sbest %s %.6f at step %lld: saved to %s", terminal ? "\r\033[K" : "",
                    metric.c_str(), v, static_cast<long long>(pos.global_step), dir.c_str());
      Log(buf);
    }
  } else {
    ++evals_since_best;
    if (options.early_stopping_patience > 0 && evals_since_best >= options.early_stopping_patience) {
      early_stopped = true;
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "%searly stopping at step %lld: %s has not improved on %.6f (step %lld) for %d evaluation(s)",
                    terminal ? "\r\033[K" : "", static_cast<long long>(pos.global_step), metric.c_str(),
                    best_value, static_cast<long long>(best_step), evals_since_best);
      Log(buf);
    }
  }
  result->early_stopped = early_stopped;
  result->best_metric = best_value;
  result->best_step = best_step;
  return Status::OK();
}

std::string Trainer::Impl::BestDir() const {
  return options.model_dir + (options.model_dir.back() == '/' ? "" : "/") + kBestDir;
}

StatusOr<EvalResult> Trainer::Impl::Evaluate(const Dataset& data) {
  if (!hog_master.empty()) SyncReplicas();
  pool->ConfigureThread(0);
  Replica& rep = replicas[0];
  double saturated = 0;  // count of saturated predictions
  std::vector<float> probs, all_probs, all_labels;
  std::vector<int64_t> groups;
  const int32_t gf = options.group_field;
  const double rate = options.negative_downsampling_rate;
  constexpr int64_t kChunk = 8192;
  for (int64_t b = 0; b < data.size(); b += kChunk) {
    const int64_t e = std::min(data.size(), b + kChunk);
    data.Slice(b, e, &rep.batch);
    if (gf >= 0)  // the group's key as read (a keyed table translates the ids below)
      for (int64_t i = 0; i < e - b; ++i) groups.push_back(rep.batch.ids[i * rep.batch.field_size + gf]);
    if (keys != nullptr) CTRAIN_RETURN_IF_ERROR(TranslateKeys(rep.batch, /*train=*/false, pos.global_step));
    model::UniqueIds(rep.batch, &rep.unique_ids, &rep.index);
    CTRAIN_RETURN_IF_ERROR(PullRows(rep));
    probs.resize(e - b);
    CTRAIN_RETURN_IF_ERROR(
        rep.model->Predict(rep.batch, rep.unique_ids, rep.index, rep.w_rows.data(), rep.v_rows.data(), probs.data()));
    for (int64_t i = 0; i < e - b; ++i)
      if (!std::isfinite(probs[i])) return NonFinitePrediction(data, rep.batch, i, b + i);
    saturated += SaturatedFraction(probs.data(), e - b) * static_cast<double>(e - b);
    if (rate < 1.0)  // the model learned the downsampled CTR (ctr_metrics.h)
      for (float& p : probs) p = static_cast<float>(CorrectDownsampledProbability(p, rate));
    all_probs.insert(all_probs.end(), probs.begin(), probs.end());
    all_labels.insert(all_labels.end(), rep.batch.labels.begin(), rep.batch.labels.end());
    if (predictions != nullptr) predictions->insert(predictions->end(), probs.begin(), probs.end());
  }
  EvalResult r;
  if (predictions != nullptr) return r;  // predict: the labels may be absent (NaN), nothing to measure
  if (!eval_weights.empty() && static_cast<int64_t>(eval_weights.size()) != data.size())
    return InvalidArgumentError("sample weights: " + std::to_string(eval_weights.size()) + " weights for " +
                                std::to_string(data.size()) + " examples (one weight per example, in order)");
  CTRAIN_ASSIGN_OR_RETURN(CtrMetrics m,
                          ComputeCtrMetrics(all_probs, all_labels, eval_weights, groups, eval_metric_options));
  r.auc = m.auc;
  r.logloss = m.logloss;
  r.examples = m.examples;
  r.label_mean = m.label_mean;
  r.prediction_mean = m.prediction_mean;
  r.normalized_entropy = m.normalized_entropy;
  r.calibration = m.calibration;
  r.pr_auc = m.pr_auc;
  r.gauc = m.gauc;
  r.gauc_groups = m.gauc_groups;
  r.gauc_skipped_groups = m.gauc_skipped_groups;
  r.saturated_fraction = data.size() > 0 ? saturated / static_cast<double>(data.size()) : 0;
  return r;
}

Status Trainer::Impl::CheckData(const Dataset& data, const char* what) const {
  if (data.field_size() != options.model.field_size)
    return InvalidArgumentError(std::string(what) + " data has field_size " + std::to_string(data.field_size()) +
                                ", the model " + std::to_string(options.model.field_size));
  const int64_t max_id = data.MaxIdPlusOne();
  if (max_id > options.model.feature_size)
    return InvalidArgumentError(std::string(what) + " data has id " + std::to_string(max_id - 1) +
                                " >= feature_size " + std::to_string(options.model.feature_size));
  return Status::OK();
}

Status Trainer::Impl::CheckBatch(const data::Batch& b) const {
  if (b.field_size != options.model.field_size)
    return InvalidArgumentError("training batch has field_size " + std::to_string(b.field_size) +
                                ", the model " + std::to_string(options.model.field_size));
  if (b.variable_length())
    return InvalidArgumentError("training batch has variable-length rows; the model needs exactly field_size (" +
                                std::to_string(options.model.field_size) + ") features per example");
  return Status::OK();
}

}  // namespace ctrain::train
