// The training job's lines and --metrics-json (job/train_steps.h).
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/log.h"
#include "ctrain/job/metrics_json.h"
#include "ctrain/job/train_steps.h"
#include "ctrain/ps/ps_training.h"
#include "ctrain/train/openmp_wait.h"
#include "ctrain/train/train_config.h"

namespace ctrain::job {

namespace {

// The kind's own hyper-parameters, as the run line shows them ("deep=400,400,400 dropout=0.5").
std::string ModelSummary(const model::ModelConfig& m) {
  using train::FormatLayerList;
  auto list = [](const std::vector<int32_t>& v) { return v.empty() ? std::string("none") : FormatLayerList(v); };
  const std::string& k = m.kind;
  std::string s;
  if (k == "dcn" || k == "dcn_v2") {
    s += " cross=" + std::to_string(m.cross_layers);
    if (k == "dcn_v2" && m.low_rank > 0) s += " low_rank=" + std::to_string(m.low_rank);
    if (k == "dcn_v2" && m.num_experts > 1) s += " experts=" + std::to_string(m.num_experts);
    s += " " + m.model_structure;
  }
  if (k == "xdeepfm") s += " cin=" + list(m.cin_layer_units);
  if (k == "dlrm")
    s += " dense_fields=" + std::to_string(m.num_dense_fields) + " bottom=" + list(m.bottom_mlp) + " top=" +
         list(m.top_mlp);
  if (k == "deepfm" || k == "wide_deep" || k == "dcn" || k == "dcn_v2" || k == "xdeepfm")
    s += " deep=" + list(m.deep_layers);
  if (m.embedding_initializer != "glorot_normal") s += " init=" + m.embedding_initializer;
  if (!m.numeric_embedding_initializer.empty())
    s += " numeric_init=" + m.numeric_embedding_initializer + " (" + std::to_string(m.num_dense_fields) + " fields)";
  if (m.oov_buckets)
    s += " oov=bucket (" + std::to_string(m.vocabulary_size()) + " ids + " + std::to_string(m.field_size) +
         " out-of-vocabulary rows)";
  if (k != "lr" && k != "fm") {
    char buf[64];
    std::snprintf(buf, sizeof(buf), " dropout=%g%s", m.dropout, m.batch_norm ? " bn" : "");
    s += buf;
  }
  return s;
}

}  // namespace

void PrintRunLine(const TrainRun& run) {
  if (!run.report) return;
  const train::TrainOptions& o = run.o;
  std::fprintf(stderr,
               "ctrain: %s F=%d K=%d%s l2=%g gemm=%s | %s lr=%g batch=%lld epochs=%d | "
               "threads: intra_op=%d towers=%d hogwild=%d%s %s\n",
               o.model.kind.c_str(), o.model.field_size, o.model.embedding_size, ModelSummary(o.model).c_str(),
               o.model.l2_reg, model::DataTypeName(o.model.gemm_dtype), o.optimizer.name.c_str(),
               o.optimizer.learning_rate, static_cast<long long>(o.batch_size), o.epochs, run.intra,
               o.parallel.towers, o.parallel.hogwild, o.parallel.affinity ? " affinity" : "",
               train::OpenMPWaitSummary().c_str());
  if (o.table.keyed()) {
    const train::KeyedTableOptions& t = o.table;
    std::fprintf(stderr,
                 "ctrain: keyed embedding table: max_rows=%lld min_count=%d admission=%s steps_to_live=%lld "
                 "l2_weight_threshold=%g, key space [0, %lld)\n",
                 static_cast<long long>(t.live_bound()), t.min_count, t.admission.c_str(),
                 static_cast<long long>(t.steps_to_live), t.l2_weight_threshold,
                 static_cast<long long>(o.model.feature_size));
  }
}

void ReportDone(const TrainRun& run) {
  // The other ranks' lines would repeat rank 0's (docs/distributed.md).
  if (!run.report) return;
  const train::TrainResult& r = run.r;
  // One write: a line built piecewise on stderr could be split by another thread's log line.
  char buf[512];
  std::string line;
  if (r.steps_this_run == 0) {
    std::snprintf(buf, sizeof buf, "nothing to do: already at step %lld (%lld examples, %.2f epochs)",
                  static_cast<long long>(r.steps), static_cast<long long>(r.examples), r.epochs);
  } else if (!r.epoch_size_known) {
    std::snprintf(buf, sizeof buf,
                  "done: %lld steps, %lld examples (%lld epochs completed; epoch size unknown until the first epoch "
                  "ends), %.0f examples/s",
                  static_cast<long long>(r.steps), static_cast<long long>(r.examples),
                  static_cast<long long>(r.epochs), r.examples_per_sec);
  } else {
    std::snprintf(buf, sizeof buf, "done: %lld steps, %lld examples (%.2f epochs), %.0f examples/s",
                  static_cast<long long>(r.steps), static_cast<long long>(r.examples), r.epochs, r.examples_per_sec);
  }
  line = buf;
  if (r.evaluated) {
    std::snprintf(buf, sizeof buf, ", valid auc %.5f logloss %.5f", r.eval.auc, r.eval.logloss);
    line += buf;
  }
  if (r.streamed && r.steps_this_run > 0 && run.remote) {
    std::snprintf(buf, sizeof buf, ", input wait %.1f%% (data service)", 100.0 * r.input_wait_fraction);
    line += buf;
  } else if (r.streamed && r.steps_this_run > 0) {
    std::snprintf(buf, sizeof buf, ", input wait %.1f%%, pipeline %.0f records/s", 100.0 * r.input_wait_fraction,
                  r.pipeline.records_per_second);
    line += buf;
  }
  LogLine(line + "\n");
  if (r.streamed && r.input_wait_fraction > 0.1 && !r.input_suggestion.empty())
    Logf("%s\n", r.input_suggestion.c_str());
}

nlohmann::json ReportPs(const TrainRun& run) {
  if (!run.ps_params) return nullptr;
  // docs/parameter-servers.md#metrics
  ps::PsTrainResult pr;
  pr.train = run.r;
  ps::FinishPsResult(*run.ps_params, *run.trainer, &pr);
  nlohmann::json j = ps::PsMetricsJson(pr, run.ps_params->ps_options());
  Logf("%s\n", ps::PsMetricsLine(j).c_str());
  return j;
}

Status WriteTrainMetrics(const TrainRun& run, const nlohmann::json& mpi_json, const nlohmann::json& ps_json) {
  if (run.job.metrics_json.empty()) return Status::OK();
  const train::TrainOptions& o = run.o;
  const train::TrainResult& r = run.r;
  nlohmann::json j{{"auc", r.evaluated ? JsonNumber(r.eval.auc) : nlohmann::json(nullptr)},
                   {"logloss", r.evaluated ? JsonNumber(r.eval.logloss) : nlohmann::json(nullptr)},
                   {"examples_per_sec", r.examples_per_sec},
                   {"examples", r.examples},
                   {"examples_this_run", r.examples_this_run},
                   {"steps", r.steps},
                   {"epochs", r.epochs},
                   {"train_loss", JsonNumber(r.last_loss)},
                   {"seconds", r.seconds},
                   {"restored", r.restored},
                   {"intra_op_parallelism_threads", run.intra},
                   {"towers", o.parallel.towers},
                   {"hogwild", o.parallel.hogwild},
                   {"input_mode", run.stream ? "stream" : "memory"},
                   {"input_wait_fraction", r.input_wait_fraction},
                   {"input_wait_seconds", r.input_wait_seconds},
                   {"compute_seconds", r.compute_seconds},
                   {"warnings", r.warnings},
                   {"warm_started", run.trainer->warm_started()}};
  if (r.evaluated) {  // train/ctr_metrics.h
    j["normalized_entropy"] = JsonNumber(r.eval.normalized_entropy);
    j["calibration"] = JsonNumber(r.eval.calibration);
    j["pr_auc"] = JsonNumber(r.eval.pr_auc);
    if (o.group_field >= 0) j["gauc"] = JsonNumber(r.eval.gauc);
  }
  if (!o.early_stopping_metric.empty() || o.keep_best) {
    j["early_stopped"] = r.early_stopped;
    j["best_metric"] = JsonNumber(r.best_metric);
    j["best_step"] = r.best_step;
  }
  if (r.keyed) {  // train/key_index.h: every admitted, filtered and evicted key
    j["keyed_table"] = r.keyed_table.ToJson();
    nlohmann::json epochs = nlohmann::json::array();
    for (const train::TrainResult::KeyedEpoch& e : r.keyed_table_epochs) {
      nlohmann::json c = e.counters.ToJson();
      c["epoch"] = e.epoch;
      epochs.push_back(std::move(c));
    }
    j["keyed_table_epochs"] = std::move(epochs);
  }
  // --oov bucket: training ids read as their field's out-of-vocabulary row in one pass of the data (memory: the
  // loaded rows; stream: the last epoch's pipeline, as pipeline.oov_ids; with the data service, the workers'
  // counts of that epoch's splits, carried in their end frames).
  if (o.model.oov_buckets)
    j["oov_ids"] = run.stream ? static_cast<int64_t>(r.pipeline.oov_ids) : run.tr_stats.oov_ids;
  // The rate the next step would run at, and --lr-decay plateau's reductions (the evaluation's step, the new rate).
  j["learning_rate"] = r.learning_rate;
  if (o.lr_plateau()) {
    nlohmann::json drops = nlohmann::json::array();
    for (const train::TrainResult::LrDrop& d : r.lr_drops) drops.push_back({{"step", d.step}, {"lr", d.lr}});
    j["lr_drops"] = std::move(drops);
  }
  if (!mpi_json.is_null()) j["mpi"] = mpi_json;
  if (!ps_json.is_null()) j["ps"] = ps_json;
  if (r.streamed) {
    j["pipeline_records_per_sec"] = r.pipeline.records_per_second;
    j["input_suggestion"] = r.input_suggestion;
    nlohmann::json pj = nlohmann::json::parse(r.pipeline.ToJson(), nullptr, false);
    j["pipeline"] = pj.is_discarded() ? nlohmann::json(r.pipeline.ToJson()) : pj;
    if (!r.source_metrics.is_null()) j["data_service"] = r.source_metrics;
  }
  return WriteMetricsJson(run.job.metrics_json, j);
}

}  // namespace ctrain::job
