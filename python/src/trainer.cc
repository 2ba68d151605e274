// ctrain.Trainer's C++ side (python/ctrain/_trainer.py): the jobs of
// src/ctrain/job, the same code `ctrain train | eval | predict` runs.
//   run_train(args)   `ctrain train` flags (the Trainer's options as --name value
//                     pairs) parsed by the CLI's own parser, then job::RunTrain
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
#include "ctrain/cli/commands.h"
#include "ctrain/data/example_reader.h"
#include "ctrain/job/infer_job.h"
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

nb::dict RunTrain(const std::vector<std::string>& args) {
  StatusOr<job::TrainJobOptions> o = cli::ParseTrainJobOptions(args);
  ThrowIfError(o.status());
  job::TrainJobOptions options = std::move(*o);
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
  m.def("train_option_names", &cli::TrainOptionNames);
  m.def("check_train_options", [](const std::vector<std::string>& args) {
    ThrowIfError(cli::ParseTrainJobOptions(args).status());
  }, "args"_a);
  m.def("run_train", &RunTrain, "args"_a);
  m.def("run_eval", &RunEval, "model_dir"_a, "inputs"_a, "data"_a);
  m.def("run_predict", &RunPredict, "model_dir"_a, "inputs"_a, "data"_a, "output"_a);
  m.def("write_examples", &WriteExamples, "path"_a, "labels"_a, "ids"_a, "values"_a);
}

}  // namespace ctrain::python
