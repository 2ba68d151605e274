// ctrain.Trainer's C++ side (python/ctrain/_trainer.py): the jobs of
// src/ctrain/job, the same code `ctrain train | eval | predict` runs.
//   train_option_schema()   the option schema (job/option_schema.h): one dict
//                     per option (name, aliases, type, default, unit, help, modes)
//   run_train(options, pipeline)   the Trainer's options as typed values (a JSON
//                     object: {"batch_size": 256, "deep_layers": [400, 400]}),
//                     set through the schema (job::TrainJobOptionsFromValues:
//                     config= files applied), then `pipeline` (PipelineOptions
//                     names without an option, from a ctrain.Pipeline:
//                     deterministic, order, ...), then job::RunTrain;
//                     logs["input"] = the data settings it ran with
//   check_train_options(options)   the same, without running
//   train_settings(options)   {"values": data settings, "given": names set}
//                     (config= files included): what fit() checks a Pipeline's
//                     settings against
//   run_eval / run_predict(model_dir, inputs, data options, given names)
//   write_examples(path, labels, ids, values)   a TFRecord for predict(numpy)
// Ctrl-C during training requests the CLI's stop (a checkpoint at the current
// step); the job then returns Cancelled and KeyboardInterrupt is raised.
#include <csignal>
#include <cmath>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "call_thread.h"
#include "convert.h"
#include "ctrain/base/signals.h"
#include "ctrain/data/example_reader.h"
#include "ctrain/job/config_file.h"
#include "ctrain/job/infer_job.h"
#include "ctrain/job/option_schema.h"
#include "ctrain/job/train_job.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace ctrain::python {
namespace {

nb::object Num(double v) { return std::isfinite(v) ? nb::cast(v) : nb::none(); }

nb::dict EvalDict(const train::EvalResult& e) {
  nb::dict d;
  d["auc"] = Num(e.auc);
  d["logloss"] = Num(e.logloss);
  d["examples"] = e.examples;
  d["label_mean"] = Num(e.label_mean);
  d["prediction_mean"] = Num(e.prediction_mean);
  return d;
}

// Runs a job on a CallThread; Ctrl-C requests the CLI's stop between two steps.
Status RunJob(const std::function<Status()>& job) {
  CallThread call;
  Status st;
  ClearPendingInterrupt();
  try {
    call.Run([&] { st = job(); }, [] { RequestInterrupt(SIGINT); }, CallThread::OnInterrupt::kFinishCall);
  } catch (...) {
    ClearPendingInterrupt();
    throw;
  }
  ClearPendingInterrupt();
  return st;
}

// The settings of a training run that decide which batches it sees and how
// they are read (the names ctrain.Trainer and ctrain.Pipeline share, plus
// pipeline_deterministic: PipelineOptions::deterministic, not the trainer's
// --deterministic), from parsed (or, after the run, used) options.
nb::dict DataSettings(const job::TrainJobOptions& o) {
  nb::dict d;
  const train::TrainOptions& t = o.train_options;
  d["batch_size"] = t.batch_size;
  d["epochs"] = t.epochs;
  d["max_steps"] = t.max_steps;
  d["seed"] = t.seed;
  d["shuffle"] = t.shuffle;
  d["input_mode"] = o.input_mode;
  const data::PipelineOptions& p = o.pipeline;
  d["num_parallel_reads"] = p.num_parallel_reads;
  d["num_parallel_calls"] = p.num_parallel_calls;
  d["shuffle_buffer_size"] = p.shuffle_buffer_size;
  d["reshuffle_each_iteration"] = p.reshuffle_each_iteration;
  d["prefetch_buffer_size"] = p.prefetch_buffer_size;
  d["cache"] = p.cache;
  d["cache_max_bytes"] = p.cache_max_bytes;
  d["num_shards"] = p.num_shards;
  d["shard_index"] = p.shard_index;
  d["drop_remainder"] = p.drop_remainder;
  d["pipeline_deterministic"] = p.deterministic;
  d["order"] = p.order;
  d["count_shard_records"] = p.count_shard_records;
  d["read_chunk_records"] = p.read_chunk_records;
  d["read_chunk_bytes"] = p.read_chunk_bytes;
  d["queue_chunks"] = p.queue_chunks;
  d["deterministic"] = o.parallel.deterministic;
  const job::DataOptions& r = o.data;
  d["format"] = r.format;
  d["compression"] = r.compression;
  d["field_size"] = r.field_size;
  d["id_base"] = r.id_base;
  d["feature_size"] = r.feature_size;
  d["feature_map"] = r.feature_map;
  d["skip_corrupt_records"] = r.skip_corrupt_records;
  d["max_skipped_records"] = r.max_skipped_records;
  d["max_line_bytes"] = r.max_line_bytes;
  d["pipe_timeout_ms"] = r.pipe_timeout_ms;
  d["criteo_pad_missing_trailing"] = r.criteo_pad_missing_trailing;
  d["feature_spec"] = r.feature_spec;
  d["data_service"] = o.data_service.address;
  d["ps"] = o.ps.enabled();
  return d;
}

// The schema as Python values: [{"name", "aliases", "type", "default" (JSON text),
// "unit", "help", "modes", "needs", "set_by_launch"}] in declaration order.
nb::list OptionSchema() {
  nb::list out;
  for (const job::OptionSpec& s : job::TrainOptionSchema()) {
    nb::dict d;
    d["name"] = s.name;
    d["aliases"] = s.aliases;
    d["type"] = std::string(job::OptionTypeName(s.type));
    d["default"] = s.default_value().dump();
    d["unit"] = s.unit;
    d["help"] = s.help;
    d["modes"] = job::ModeSetText(s.modes);
    d["needs"] = job::ModeSetText(s.needs);
    d["set_by_launch"] = s.set_by_launch;
    out.append(d);
  }
  return out;
}

job::TrainJobOptions ParseTrain(const std::string& options_json) {
  const nlohmann::json values = nlohmann::json::parse(options_json, nullptr, /*allow_exceptions=*/false);
  if (values.is_discarded()) Raise(InvalidArgumentError("Trainer: the options are not JSON"));
  StatusOr<job::TrainJobOptions> o = job::TrainJobOptionsFromValues(values, "Trainer");
  ThrowIfError(o.status());
  return std::move(*o);
}

nb::dict TrainSettings(const std::string& options_json) {
  job::TrainJobOptions o = ParseTrain(options_json);
  nb::list given;
  for (const std::string& name : o.given.names()) given.append(name);
  nb::dict d;
  d["values"] = DataSettings(o);
  d["given"] = given;
  return d;
}

nb::dict RunTrain(const std::string& options_json, const nb::dict& pipeline) {
  job::TrainJobOptions options = ParseTrain(options_json);
  SetPipelineOptions(pipeline, &options.pipeline);  // names without a flag: not in options.given
  train::TrainResult r;
  ThrowIfError(RunJob([&] { return job::RunTrain(options, &r); }));
  nb::dict d;
  d["steps"] = r.steps;
  d["steps_this_run"] = r.steps_this_run;
  d["examples"] = r.examples;
  d["epochs"] = r.epochs;
  d["seconds"] = r.seconds;
  d["examples_per_sec"] = r.examples_per_sec;
  d["loss"] = Num(r.last_loss);
  d["restored"] = r.restored;
  d["input_wait_fraction"] = r.input_wait_fraction;
  d["model_dir"] = options.train_options.model_dir;
  if (r.evaluated) {
    nb::dict e = EvalDict(r.eval);
    d["auc"] = e["auc"];
    d["logloss"] = e["logloss"];
    d["valid_examples"] = e["examples"];
  }
  d["input"] = DataSettings(options);
  return d;
}

job::InferJobOptions InferOptions(const std::string& model_dir, const std::vector<std::string>& inputs,
                                  const nb::dict& data) {
  job::InferJobOptions o;
  o.model_dir = model_dir;
  o.input = inputs;
  SetDataOptions(data, &o.data);
  for (auto [k, v] : data)
    if (!v.is_none()) o.given.Add(nb::cast<std::string>(k));
  return o;
}

nb::dict RunEval(const std::string& model_dir, const std::vector<std::string>& inputs, const nb::dict& data) {
  job::InferJobOptions o = InferOptions(model_dir, inputs, data);
  train::EvalResult r;
  ThrowIfError(RunJob([&] { return job::RunEval(o, &r); }));
  return EvalDict(r);
}

void RunPredict(const std::string& model_dir, const std::vector<std::string>& inputs, const nb::dict& data,
                const std::string& output) {
  job::InferJobOptions o = InferOptions(model_dir, inputs, data);
  o.output = output;
  ThrowIfError(RunJob([&] { return job::RunPredict(o); }));
}

// Writes examples as TFRecord (tf.train.Example, the seed schema).
void WriteExamples(const std::string& path, nb::ndarray<const float, nb::ndim<1>, nb::c_contig> labels,
                   nb::ndarray<const int64_t, nb::ndim<2>, nb::c_contig> ids,
                   nb::ndarray<const float, nb::ndim<2>, nb::c_contig> values) {
  const size_t n = ids.shape(0), f = ids.shape(1);
  if (labels.shape(0) != n || values.shape(0) != n || values.shape(1) != f)
    Raise(InvalidArgumentError("labels [" + std::to_string(labels.shape(0)) + "], ids [" + std::to_string(n) + ", " +
                               std::to_string(f) + "] and values [" + std::to_string(values.shape(0)) + ", " +
                               std::to_string(values.shape(1)) + "] do not match"));
  data::ExampleWriterOptions wo;
  wo.format = data::RecordFormat::kTFRecord;
  Status st;
  CallThread call;
  call.Run([&] {
    auto w = data::OpenExampleWriter(path, wo);
    if (!w.ok()) {
      st = w.status();
      return;
    }
    for (size_t i = 0; i < n && st.ok(); ++i) {
      st = (*w)->Write(labels.data()[i], std::span<const int64_t>(ids.data() + i * f, f),
                       std::span<const float>(values.data() + i * f, f));
      if (!st.ok()) st = st.WithContext("row " + std::to_string(i));
    }
    if (st.ok()) st = (*w)->Close();
  });
  ThrowIfError(st);
}

}  // namespace

void BindTrainer(nb::module_& m) {
  m.def("train_option_schema", &OptionSchema);
  m.def("check_train_options", [](const std::string& options) { ParseTrain(options); }, "options"_a);
  m.def("train_settings", &TrainSettings, "options"_a);
  m.def("run_train", &RunTrain, "options"_a, "pipeline"_a = nb::dict());
  m.def("run_eval", &RunEval, "model_dir"_a, "inputs"_a, "data"_a);
  m.def("run_predict", &RunPredict, "model_dir"_a, "inputs"_a, "data"_a, "output"_a);
  m.def("write_examples", &WriteExamples, "path"_a, "labels"_a, "ids"_a, "values"_a);
}

}  // namespace ctrain::python
