#include "ctrain/job/infer_job.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/log.h"
#include "ctrain/data/feature_spec.h"
#include "ctrain/data/file_list.h"
#include "ctrain/io/file.h"
#include "ctrain/job/load_examples.h"
#include "ctrain/job/metrics_json.h"
#include "ctrain/train/data_source.h"
#include "ctrain/train/input_checks.h"
#include "ctrain/train/prediction_output.h"
#include "ctrain/train/sample_weights.h"
#include "ctrain/train/trainer.h"

namespace ctrain::job {
namespace {

// "--field-size" -> "field_size" (ExplicitOptions' names).
std::string OptionName(std::string_view flag) {
  std::string n;
  for (char c : flag.substr(flag.starts_with("--") ? 2 : 0)) n += c == '-' ? '_' : c;
  return n;
}

// eval/predict read their input as the training run read its files (checkpoint
// meta "data"), unless a flag says otherwise. Flags that agree with the model
// are accepted; the model's field_size and feature_size are fixed.
// The input's format is not taken from the checkpoint: it is detected (or
// given) and compared with the checkpoint's (CheckInputEncoding), so data in
// another format is named as such instead of failing to parse.
Status ApplyCheckpointDataOptions(InferJobOptions& job, const train::TrainOptions& to) {
  auto fixed = [&](const char* flag, int64_t given, int64_t model, const char* what) -> Status {
    if (!job.given.Has(OptionName(flag)) || given == model) return Status::OK();
    return InvalidArgumentError(std::string(flag) + " " + std::to_string(given) + " contradicts the model in " +
                                job.model_dir + ", which has " + what + " " + std::to_string(model) +
                                " (fixed at training time; leave " + flag + " out)");
  };
  CTRAIN_RETURN_IF_ERROR(fixed("--field-size", job.data.field_size, to.model.field_size, "field_size"));
  // --oov bucket: the input's id space is the vocabulary; the rows after it are the out-of-vocabulary rows.
  CTRAIN_RETURN_IF_ERROR(fixed("--feature-size", job.data.feature_size, to.model.vocabulary_size(), "feature_size"));
  job.data.field_size = to.model.field_size;
  job.data.feature_size = to.model.vocabulary_size();
  job.data.oov = to.model.oov_buckets ? "bucket" : "error";
  if (!to.data.recorded()) return Status::OK();
  std::string used;
  auto from_checkpoint = [&](const char* flag) {
    if (job.given.Has(OptionName(flag))) return false;
    used += std::string(used.empty() ? "" : " ") + flag + " ";
    return true;
  };
  if (from_checkpoint("--id-base")) used += std::to_string(job.data.id_base = to.data.id_base);
  if (!to.data.feature_map.empty() && from_checkpoint("--feature-map")) used += job.data.feature_map = to.data.feature_map;
  if (!used.empty()) Logf("reading --input as the model's training data: %s\n", used.c_str());
  return Status::OK();
}

// Refuses eval/predict input encoded differently from the model's training
// data (train/data_source.h). `formats`: the inputs' formats as detected.
Status CheckInputEncoding(InferJobOptions& job, const train::TrainOptions& to, const std::vector<train::InputFormat>& formats,
                          std::vector<std::string>* notes) {
  CTRAIN_ASSIGN_OR_RETURN(data::ExampleReaderOptions ro, job.data.ReaderOptions());
  return train::CheckInputsMatchModel(to.data, job.model_dir, formats, ro, CanonicalPath(job.data.feature_map), notes);
}

Status RunInfer(InferJobOptions& job, bool predict, train::EvalResult* eval_out) {
  const char* command = predict ? "predict" : "eval";
  {  // globs and directories expand as for train and inspect (data/file_list.h)
    StatusOr<std::vector<std::string>> expanded = data::ExpandFileList(job.input);
    if (!expanded.ok()) return expanded.status().WithContext("--input");
    job.input = std::move(expanded).value();
  }
  CTRAIN_RETURN_IF_ERROR(io::CheckOutputWritable(predict ? "--output" : "--metrics-json",
                                             predict ? job.output : job.metrics_json));
  {  // The output must not overwrite an input or the model (eval/predict read the model dir).
    const std::string out_flag = predict ? "--output" : "--metrics-json";
    std::vector<io::FlagPath> in{{"--feature-map", job.data.feature_map},
                                 {"--feature-spec", job.data.feature_spec},
                                 {"--weights", job.weights}};
    for (const std::string& p : job.input) in.push_back({"--input", p});
    std::error_code ec;  // the model's files (other files in the model dir, e.g. eval.json, may be written)
    for (const auto& e : std::filesystem::directory_iterator(job.model_dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name == "checkpoint" || name.starts_with("ckpt-")) in.push_back({"--model-dir", e.path().string()});
    }
    CTRAIN_RETURN_IF_ERROR(io::CheckOutputsAreNotInputs(in, {{out_flag, predict ? job.output : job.metrics_json}}));
  }
  std::vector<train::PredictColumn> columns;
  if (predict) {
    CTRAIN_ASSIGN_OR_RETURN(columns, train::ParsePredictColumns(job.output_columns));
  }
  if (job.no_label && !predict) return InvalidArgumentError("--no-label: eval needs the labels (use predict)");
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> t, train::LoadTrainerFromCheckpoint(job.model_dir, job.parallel));
  const train::TrainOptions& to = t->options();
  CTRAIN_RETURN_IF_ERROR(t->set_eval_negative_downsampling(job.negative_downsampling));
  CTRAIN_RETURN_IF_ERROR(t->set_group_field(job.gauc_field));
  // A model trained through a feature spec reads its input through that spec (the checkpoint keeps it).
  CTRAIN_ASSIGN_OR_RETURN(std::optional<data::FeatureSpec> spec,
                          train::ResolveInferenceSpec(to.data, job.model_dir, job.data.feature_spec));
  train::Dataset ds;
  train::LoadStats stats;
  if (spec) {
    CTRAIN_RETURN_IF_ERROR(LoadSpecExamples(job.input, *spec, &ds, "input", &stats));
    job.data.field_size = spec->field_size;
    job.data.feature_size = spec->feature_size;
  } else {
    // What the files are, before the checkpoint's defaults decide how to read them:
    // a Criteo TSV read "as libsvm" would only give a parse error.
    const bool format_given = job.given.Has("format");
    std::vector<train::InputFormat> detected;
    {
      CTRAIN_ASSIGN_OR_RETURN(data::ExampleReaderOptions sniff, job.data.ReaderOptions());
      if (!format_given) sniff.format = data::RecordFormat::kAuto;
      for (const std::string& p : job.input) {
        StatusOr<std::vector<train::InputFormat>> f = train::DetectInputFormats({p}, sniff);
        if (f.ok()) detected.insert(detected.end(), f->begin(), f->end());  // else: reading reports it
      }
    }
    CTRAIN_RETURN_IF_ERROR(ApplyCheckpointDataOptions(job, to));
    std::vector<std::string> notes;
    CTRAIN_RETURN_IF_ERROR(CheckInputEncoding(job, to, detected, &notes));
    const io::LabelMode labels = !predict ? io::LabelMode::kRequired
                                 : job.no_label ? io::LabelMode::kAbsent
                                                : io::LabelMode::kAuto;
    CTRAIN_RETURN_IF_ERROR(
        LoadExamples(job.input, job.data, to.model.vocabulary_size(), &ds, "input", &stats, /*model_fixed=*/true,
                     labels));
    // Again as actually read (covers stdin and FIFOs, which cannot be sniffed first).
    CTRAIN_RETURN_IF_ERROR(CheckInputEncoding(job, to, train::InputFormatsRead(stats), &notes));
    for (const std::string& n : notes) Logf("note: %s\n", n.c_str());
    {  // values the model cannot handle give saturated predictions, not errors: say so
      train::InputStats st(ds.field_size());
      st.Add(ds.ids(), ds.values(), ds.size(), ds.labels());
      for (const std::string& w : st.Warnings("input examples", &ds.source_paths(), &ds.source_reader(), st.examples()))
        Warnf("%s\n", w.c_str());
    }
  }
  for (const std::string& d : train::DescribeDropped(stats.dropped, predict))
    Logf("%s: %s\n", command, d.c_str());
  if (predict) {
    CTRAIN_RETURN_IF_ERROR(train::CheckDroppedAlignable(stats.dropped));
    CTRAIN_RETURN_IF_ERROR(train::CheckPredictColumns(columns, ds));
    std::vector<float> probs;
    CTRAIN_RETURN_IF_ERROR(t->Predict(ds, &probs));
    io::WriteOptions wo;
    wo.atomic = true;
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> f, io::OpenWritableFile(job.output, wo));
    CTRAIN_RETURN_IF_ERROR(f->Append(train::FormatPredictions(columns, ds, probs, stats.dropped)));
    CTRAIN_RETURN_IF_ERROR(f->Close());
    int64_t dropped = 0;
    for (const auto& d : stats.dropped) dropped += static_cast<int64_t>(d.where.records);
    Logf("wrote %lld lines to %s: %zu predictions, %lld nan for dropped records (model step %lld)\n",
                 static_cast<long long>(probs.size() + dropped), job.output.c_str(), probs.size(),
                 static_cast<long long>(dropped), static_cast<long long>(t->global_step()));
    return Status::OK();
  }
  if (!job.weights.empty()) {
    if (!stats.dropped.empty())
      return InvalidArgumentError("--weights: records dropped by --skip-corrupt-records would misalign the weights");
    std::string data;
    for (const std::string& in : job.input) data += (data.empty() ? "" : ",") + in;
    StatusOr<std::vector<float>> w = train::ReadSampleWeightsFor(job.weights, ds.size(), "--input " + data);
    if (!w.ok()) return w.status().WithContext("--weights");
    t->set_eval_weights(std::move(w).value());
  }
  CTRAIN_ASSIGN_OR_RETURN(train::EvalResult r, t->Evaluate(ds));
  const std::string saturated = train::SaturationWarning(r.saturated_fraction, r.examples, t->global_step());
  if (!saturated.empty()) Warnf("%s\n", saturated.c_str());
  std::printf("auc %.6f\nlogloss %.6f\nexamples %lld\nnormalized_entropy %.6f\ncalibration %.6f\npr_auc %.6f\n", r.auc,
              r.logloss, static_cast<long long>(r.examples), r.normalized_entropy, r.calibration, r.pr_auc);
  if (job.gauc_field >= 0)
    std::printf("gauc %.6f\ngauc_groups %lld\ngauc_skipped_groups %lld\n", r.gauc, static_cast<long long>(r.gauc_groups),
                static_cast<long long>(r.gauc_skipped_groups));
  if (eval_out != nullptr) *eval_out = r;
  if (!job.metrics_json.empty()) {
    nlohmann::json j{{"auc", JsonNumber(r.auc)},
                     {"logloss", JsonNumber(r.logloss)},
                     {"examples", r.examples},
                     {"label_mean", r.label_mean},
                     {"prediction_mean", r.prediction_mean},
                     {"saturated_fraction", r.saturated_fraction},
                     {"normalized_entropy", JsonNumber(r.normalized_entropy)},
                     {"calibration", JsonNumber(r.calibration)},
                     {"pr_auc", JsonNumber(r.pr_auc)},
                     {"steps", t->global_step()}};
    if (job.gauc_field >= 0) {
      j["gauc"] = JsonNumber(r.gauc);
      j["gauc_groups"] = r.gauc_groups;
      j["gauc_skipped_groups"] = r.gauc_skipped_groups;
    }
    if (to.negative_downsampling_rate != 1.0) j["model_negative_downsampling"] = to.negative_downsampling_rate;
    if (job.negative_downsampling != 1.0) j["negative_downsampling"] = job.negative_downsampling;
    CTRAIN_RETURN_IF_ERROR(WriteMetricsJson(job.metrics_json, j));
  }
  return Status::OK();
}

}  // namespace

Status RunEval(InferJobOptions& options, train::EvalResult* result) { return RunInfer(options, false, result); }

Status RunPredict(InferJobOptions& options) { return RunInfer(options, true, nullptr); }

}  // namespace ctrain::job
