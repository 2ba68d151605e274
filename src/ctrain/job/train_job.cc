#include "ctrain/job/train_job.h"

#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/data/feature_spec.h"
#include "ctrain/base/signals.h"
#include "ctrain/data/shard.h"
#include "ctrain/dataservice/client.h"
#if CTRAIN_HAVE_MPI
#include "ctrain/dist/job_setup.h"
#include "ctrain/dist/mpi_exchange.h"
#endif
#include "ctrain/io/file.h"
#include "ctrain/job/load_examples.h"
#include "ctrain/job/metrics_json.h"
#include "ctrain/model/layers/bf16.h"
#include "ctrain/monitor/monitor.h"
#include "ctrain/monitor/train_monitor.h"
#include "ctrain/train/autotune.h"
#include "ctrain/train/data_source.h"
#include "ctrain/train/input_checks.h"
#include "ctrain/train/model_dir_lock.h"
#include "ctrain/train/threads.h"

namespace ctrain::job {
namespace {

#if CTRAIN_HAVE_MPI
using MpiJob = dist::MpiExchange;
#else
struct MpiJob;  // built without MPI (-DCTRAIN_MPI=OFF)
#endif

Status RunTrainJob(TrainJobOptions& job, MpiJob* mpi, train::TrainResult* result) {
  bool per_rank_inputs = false;  // --train held {local_rank} or {rank}
  train::TrainOptions& o = job.train_options;
  CTRAIN_ASSIGN_OR_RETURN(o.model.deep_layers, train::ParseLayerList(job.deep_layers));
  o.model.embedding_size = job.embedding_size;
  o.model.dropout = job.dropout;
  o.model.batch_norm = job.batch_norm;
  o.model.l2_reg = job.l2_reg;
  // Mixed precision is a runtime choice, not part of the model: checkpoints stay f32
  // and a run may resume with the other setting.
  if (job.mixed_precision == "bf16" || job.mixed_precision == "mixed_bfloat16") {
    CTRAIN_RETURN_IF_ERROR(model::Bf16GemmSupported());
    o.model.gemm_dtype = model::DataType::kBF16;
  } else if (job.mixed_precision == "f32" || job.mixed_precision == "float32") {
    o.model.gemm_dtype = model::DataType::kF32;
  } else if (job.mixed_precision == "auto") {  // --autotune measures both (train/autotune.h)
    const Status bf16 = model::Bf16GemmSupported();
    o.model.gemm_dtype = bf16.ok() ? model::DataType::kBF16 : model::DataType::kF32;
    if (!bf16.ok() && !job.autotune)
      std::fprintf(stderr, "ctrain: --mixed-precision auto: f32 (%s)\n", std::string(bf16.message()).c_str());
  } else {
    return InvalidArgumentError("--mixed-precision: expected f32, bf16 or auto, got '" + job.mixed_precision + "'");
  }
  o.model.field_size = job.data.field_size;
  o.model.feature_size = job.data.feature_size;
  std::optional<data::FeatureSpec> spec;  // --feature-spec: it decides F and the id space
  if (!job.data.feature_spec.empty()) {
    StatusOr<data::FeatureSpec> s = data::LoadFeatureSpec(job.data.feature_spec);
    if (!s.ok()) return s.status().WithContext("--feature-spec");
    spec = std::move(s).value();
    o.model.field_size = spec->field_size;
    o.model.feature_size = spec->feature_size;
  }
  o.optimizer.name = job.optimizer;
  o.optimizer.learning_rate = job.learning_rate;
  // The schedule (optim/lr_schedule.h): alone the warm-up starts from 0, under mpirun SetUpRank sets lr / N.
  if (job.lr_warmup_steps != 0) o.lr_warmup_steps = job.lr_warmup_steps;
  if (job.lr_decay != "none") {
    CTRAIN_ASSIGN_OR_RETURN(o.lr_decay, optim::ParseLrDecay(job.lr_decay));
  }
  bool report = true;  // this process prints the run's lines (under mpirun: rank 0 only)
#if CTRAIN_HAVE_MPI
  std::string job_line;
  if (mpi != nullptr) {  // one rank of `mpirun -np N ctrain train` (dist/job_setup.h)
    dist::RankSettings rs;
    rs.train = job.train;
    rs.cache = job.pipeline.cache;
    rs.learning_rate = job.learning_rate;
    rs.lr_scaling = job.lr_scaling;
    rs.lr_warmup_steps = job.lr_warmup_steps;
    rs.batch_size = o.batch_size;
    rs.autotune = job.autotune;
    CTRAIN_RETURN_IF_ERROR(dist::SetUpRank(*mpi, &rs));
    job.train = rs.train;
    job.pipeline.cache = rs.cache;
    per_rank_inputs = rs.per_rank_inputs;
    o.optimizer.learning_rate = rs.learning_rate;
    o.lr_warmup_steps = rs.lr_warmup_steps;
    o.lr_warmup_from = rs.lr_warmup_from;
    job_line = rs.job_line;
    if (!o.early_stopping_metric.empty() && mpi->size() > 1)
      return InvalidArgumentError("--early-stopping-metric under mpirun: rank 0 alone validates, so the other ranks "
                                  "could not stop at its step; train without it (--keep-best works)");
    if (!mpi->is_chief()) {  // rank 0 alone checkpoints, validates and reports
      o.model_dir.clear();
      o.keep_best = false;  // rank 0 saves the best checkpoint
      o.group_field = -1;   // and computes the validation metrics
      job.metrics_json.clear();
      job.valid.clear();
      job.progress = "none";
      report = false;
    }
  }
#else
  if (const char* n = std::getenv("OMPI_COMM_WORLD_SIZE"); n != nullptr && std::atoi(n) > 1)
    return FailedPreconditionError("started by mpirun with " + std::string(n) +
                                   " ranks, but this ctrain was built without MPI (-DCTRAIN_MPI=OFF or no "
                                   "libopenmpi-dev): the ranks would train separate models");
#endif
  o.parallel = job.parallel;
  if (job.progress == "auto") o.progress = train::ProgressMode::kAuto;
  else if (job.progress == "bar") o.progress = train::ProgressMode::kTerminal;
  else if (job.progress == "log") o.progress = train::ProgressMode::kLog;
  else if (job.progress == "none") o.progress = train::ProgressMode::kNone;
  else return InvalidArgumentError("--progress must be auto|bar|log|none, got '" + job.progress + "'");

  std::string mode = job.input_mode;
  if (mode == "auto") mode = job.train.empty() || spec || job.ps.enabled() ? "memory" : "stream";
  if (spec && (job.train.empty() || mode != "memory" || !job.data_service.address.empty()))
    return InvalidArgumentError("--feature-spec reads --train in memory: give --train, and not --input-mode stream "
                                "or --data-service (they read the seed layout only)");
  if (job.ps.enabled() && mode != "memory")
    return InvalidArgumentError("--ps: a worker reads its training data in memory (--input-mode memory)");
  if (job.ps.enabled() && !job.data_service.address.empty())
    return InvalidArgumentError("--ps and --data-service cannot be combined yet (docs/parameter-servers.md#limits)");
  if (job.ps.enabled()) CTRAIN_RETURN_IF_ERROR(job.ps.Options({}, nullptr).status());  // before any data is read
  if (job.ps.enabled() && mpi != nullptr)
    return InvalidArgumentError("--ps cannot run under mpirun: start each parameter-server worker as its own "
                                "process with --worker-index and --num-workers");
  if (job.ps.enabled() && job.autotune)
    return InvalidArgumentError("--autotune measures local thread layouts; with --ps give --intra-op-parallelism-threads");
  if (job.ps.enabled() && job.ps.worker_index != 0) o.model_dir.clear();  // the chief (worker 0) checkpoints
  if (mode != "stream" && mode != "memory")
    return InvalidArgumentError("--input-mode must be stream or memory (or auto), got '" + job.input_mode + "'");
  if (mode == "stream" && job.train.empty())
    return InvalidArgumentError("--input-mode stream needs --train (the built-in synthetic data is generated in memory)");
  const bool remote = !job.data_service.address.empty();
  if (remote && (job.train.empty() || mode != "stream"))
    return InvalidArgumentError("--data-service streams --train through the service: give --train, and not "
                                "--input-mode memory");
  if (remote && job.autotune)
    return InvalidArgumentError("--autotune measures on local rows; with --data-service give the thread layout");
  const bool stream = mode == "stream";
  if (!o.model_dir.empty()) {
    // Created now (checkpoints would create it later) so that a --metrics-json
    // inside it passes the up-front check, and an unusable directory fails early.
    std::error_code ec;
    std::filesystem::create_directories(o.model_dir, ec);
    if (ec) return ErrnoError(o.model_dir, "--model-dir: cannot create the directory", ec.value());
  }
  // One writer per model dir, and a read-only one fails now, not after an epoch.
  std::unique_ptr<train::ModelDirLock> model_dir_lock;
  if (!o.model_dir.empty()) {
    CTRAIN_RETURN_IF_ERROR(io::CheckDirWritable("--model-dir", o.model_dir));
    CTRAIN_ASSIGN_OR_RETURN(model_dir_lock, train::ModelDirLock::Acquire(o.model_dir));
  }
  CTRAIN_RETURN_IF_ERROR(io::CheckOutputWritable("--metrics-json", job.metrics_json));
  const bool cache_file = !job.pipeline.cache.empty() && job.pipeline.cache != "memory";
  if (stream && cache_file) CTRAIN_RETURN_IF_ERROR(io::CheckOutputWritable("--cache", job.pipeline.cache));
  {  // No output may overwrite an input (or another output), before any work.
    std::vector<io::FlagPath> in, out;
    for (const std::string& p : job.train) in.push_back({"--train", p});
    for (const std::string& p : job.valid) in.push_back({"--valid", p});
    in.push_back({"--feature-map", job.data.feature_map});
    in.push_back({"--feature-spec", job.data.feature_spec});
    in.push_back({"--config", job.config});
    if (stream && cache_file) out.push_back({"--cache", job.pipeline.cache});
    out.push_back({"--metrics-json", job.metrics_json});
    auto checkpoint_file = [](std::string_view name) {  // train/checkpoint.h, train/model_dir_lock.h
      return name == "checkpoint" || name == train::kModelDirLockName || name.starts_with("ckpt-");
    };
    CTRAIN_RETURN_IF_ERROR(io::CheckOutputsAreNotInputs(in, out, {{"--model-dir", o.model_dir, checkpoint_file}}));
  }
  if (!stream)
    for (const std::string& name : PipelineOptionNames())
      if (job.given.Has(name))
        std::fprintf(stderr, "ctrain: warning: %s is ignored with --input-mode memory\n", FlagName(name).c_str());

  for (const std::string& t : job.train)
    for (const std::string& v : job.valid)
      if (t == "-" && v == "-")
        return InvalidArgumentError("--train - and --valid - both read stdin, which can be read once: give one of "
                                    "them as a file");
  train::Dataset tr, va;
  train::LoadStats tr_stats, va_stats;
  train::StreamInput si;
  train::BatchSourceFactory data_service_factory;
  bool have_valid = false;
  if (stream) {
    si.files = job.train;
    CTRAIN_ASSIGN_OR_RETURN(si.reader, job.data.ReaderOptions());
    si.reader.feature_size = o.model.feature_size;
    si.reader.id_limit = o.model.feature_size;
    si.pipeline = job.pipeline;
    si.pipeline.pipe_timeout_ms = job.data.pipe_timeout_ms;  // --pipe-timeout-ms is a data flag (all commands)
    if (!job.given.Has("num_shards") && !job.given.Has("shard_index") && !per_rank_inputs) {
      CTRAIN_ASSIGN_OR_RETURN(data::ShardSpec shard, data::ShardFromEnvironment());
      si.pipeline.num_shards = shard.num_shards;
      si.pipeline.shard_index = shard.index;
    }
    if (remote) {
      CTRAIN_ASSIGN_OR_RETURN(dataservice::DataServiceClientOptions dso,
                              job.data_service.Options(/*ordered=*/true, AbsolutePath(job.data.feature_map)));
      data_service_factory = dataservice::MakeDataServiceSourceFactory(dso);
      // Received batches are decoded on the stream threads and freed on the
      // trainer's: one malloc arena per core keeps RSS near the byte limits
      // (docs/data-service.md#memory).
      mallopt(M_ARENA_MAX, std::max(2, train::AvailableCpus()));
      if (report)
        std::fprintf(stderr, "ctrain: training data from the data service at %s (%s, job %s)\n",
                     dso.dispatcher.c_str(), job.data_service.processing_mode.c_str(),
                     dso.job_name.empty() ? "by dataset" : dso.job_name.c_str());
    } else if (report)
    std::fprintf(stderr,
                 "ctrain: streaming training data from %zu input(s): reads=%d calls=%d shuffle_buffer=%lld "
                 "prefetch=%d cache=%s shard %d/%d\n",
                 si.files.size(), si.pipeline.num_parallel_reads, si.pipeline.num_parallel_calls,
                 static_cast<long long>(o.shuffle ? si.pipeline.shuffle_buffer_size : 0),
                 si.pipeline.prefetch_buffer_size, si.pipeline.cache.empty() ? "none" : si.pipeline.cache.c_str(),
                 si.pipeline.shard_index, si.pipeline.num_shards);
    if (!job.valid.empty()) {
      CTRAIN_RETURN_IF_ERROR(LoadExamples(job.valid, job.data, o.model.feature_size, &va, "valid", &va_stats));
      have_valid = true;
    }
  } else if (job.train.empty()) {
    if (!job.valid.empty()) return InvalidArgumentError("--valid given without --train");
    if (o.model.field_size != 39)
      return InvalidArgumentError("the built-in synthetic data has field_size 39, got --field-size " +
                                  std::to_string(o.model.field_size));
    std::fprintf(stderr,
                 "ctrain: no --train given: training on built-in synthetic Criteo-like data "
                 "(data/synth.h, seed %llu): %lld train + %lld validation rows, field_size 39, feature_size %lld\n",
                 static_cast<unsigned long long>(o.seed), static_cast<long long>(kSynthTrainRows),
                 static_cast<long long>(kSynthValidRows), static_cast<long long>(o.model.feature_size));
    CTRAIN_ASSIGN_OR_RETURN(tr, train::MakeSynthDataset(o.seed, 0, kSynthTrainRows, o.model.feature_size));
#if CTRAIN_HAVE_MPI
    if (mpi != nullptr && mpi->size() > 1) tr = dist::ShardRows(tr, mpi->size(), mpi->rank());
#endif
    CTRAIN_ASSIGN_OR_RETURN(va, train::MakeSynthDataset(o.seed, kSynthTrainRows, kSynthValidRows, o.model.feature_size));
    have_valid = true;
  } else {
    if (spec)
      CTRAIN_RETURN_IF_ERROR(LoadSpecExamples(job.train, *spec, &tr, "train", &tr_stats));
    else
      CTRAIN_RETURN_IF_ERROR(LoadExamples(job.train, job.data, o.model.feature_size, &tr, "train", &tr_stats));
#if CTRAIN_HAVE_MPI
    if (mpi != nullptr && mpi->size() > 1 && !per_rank_inputs) {  // memory mode shards its rows too
      tr = dist::ShardRows(tr, mpi->size(), mpi->rank());
      std::fprintf(stderr, "ctrain: %s: memory mode: %lld training rows (every %d-th row from %d)\n",
                   mpi->RankName(mpi->rank()).c_str(), static_cast<long long>(tr.size()), mpi->size(), mpi->rank());
    }
#endif
    if (!job.valid.empty()) {
      if (spec)
        CTRAIN_RETURN_IF_ERROR(LoadSpecExamples(job.valid, *spec, &va, "valid", &va_stats));
      else
        CTRAIN_RETURN_IF_ERROR(LoadExamples(job.valid, job.data, o.model.feature_size, &va, "valid", &va_stats));
      have_valid = true;
    }
  }
  if (spec) {  // recorded in checkpoints with the spec itself: eval/predict read through it
    o.data = train::MakeSpecDataSource(*spec, tr_stats);
  } else if (!job.train.empty()) {
    // Recorded in checkpoints: the format actually read (never auto), id base,
    // sizes, hashing or vocabulary (train/data_source.h).
    CTRAIN_ASSIGN_OR_RETURN(data::ExampleReaderOptions ro, job.data.ReaderOptions());
    ro.feature_size = o.model.feature_size;
    std::vector<train::InputFormat> formats;
    if (remote) {  // the files are read on the workers' hosts: the format is known once read
      for (const std::string& f : job.train) formats.push_back({f, job.data.format == "auto" ? "" : job.data.format, ""});
    } else if (stream) {
      CTRAIN_ASSIGN_OR_RETURN(formats, train::DetectInputFormats(job.train, ro));
    } else {
      formats = train::InputFormatsRead(tr_stats);
    }
    CTRAIN_ASSIGN_OR_RETURN(o.data, train::DescribeTrainingData(formats, ro, AbsolutePath(job.data.feature_map)));
    // --valid must be encoded like --train (the check eval makes against a checkpoint).
    if (have_valid)
      CTRAIN_RETURN_IF_ERROR(train::CheckValidMatchesTraining(o.data, job.train, train::InputFormatsRead(va_stats), ro,
                                                              AbsolutePath(job.data.feature_map)));
  }
  CTRAIN_RETURN_IF_ERROR(o.Validate());
  if ((!o.early_stopping_metric.empty() || o.keep_best || o.group_field >= 0) && !have_valid && report)
    return InvalidArgumentError(std::string(!o.early_stopping_metric.empty() ? "--early-stopping-metric"
                                            : o.keep_best                    ? "--keep-best"
                                                                             : "--gauc-field") +
                                " needs --valid (the validation data it measures)");

  if (job.autotune && stream) {
    // Autotune measures on in-memory rows: a sample read through the pipeline.
    for (const std::string& f : si.files)
      if (f == "-" || f.rfind("pipe:", 0) == 0)
        return FailedPreconditionError("--autotune cannot sample a stream input (" + f +
                                       "): it would consume the training data; give the thread layout instead");
    const int64_t want = (job.autotune_steps + 1) * o.batch_size * std::max(2, train::AvailableCpus());
    data::PipelineOptions po = si.pipeline;
    po.epochs = 1;
    po.batch_size = o.batch_size;
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<data::Pipeline> p, data::Pipeline::Create(si.files, si.reader, po));
    tr = train::Dataset(o.model.field_size);
    data::Batch b;
    while (tr.size() < want) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, p->Next(&b));
      if (!more) break;
      if (b.field_size != o.model.field_size || !b.row_splits.empty())
        return InvalidArgumentError("training data has field_size " + std::to_string(b.field_size) +
                                    " or variable-length rows; the model needs " +
                                    std::to_string(o.model.field_size) + " fields per example");
      for (int64_t r = 0; r < b.size(); ++r)
        tr.Append(b.labels[r], b.ids.data() + r * b.field_size, b.values.data() + r * b.field_size);
    }
  }
  if (job.autotune) {
    std::fprintf(stderr, "ctrain: autotune: measuring thread layouts on %d cores (%lld steps each)...\n",
                 train::AvailableCpus(), static_cast<long long>(job.autotune_steps));
    train::AutotuneOptions ao;
    ao.steps = job.autotune_steps;
    ao.try_bf16 = job.mixed_precision == "auto";
    if (job.given.Has("intra_op_parallelism_threads")) ao.fixed_intra_op_threads = job.parallel.intra_op_threads;
    if (job.given.Has("towers")) ao.fixed_towers = job.parallel.towers;
    if (job.given.Has("hogwild")) ao.fixed_hogwild = job.parallel.hogwild;
    CTRAIN_ASSIGN_OR_RETURN(train::AutotuneResult at, train::Autotune(o, tr, ao));
    std::fprintf(stderr, "%s", train::FormatAutotuneTable(at).c_str());
    train::ApplyAutotune(at, &o);
  }
  const int32_t replicas = o.parallel.replicas();
  const int32_t intra = o.parallel.intra_op_threads > 0 ? o.parallel.intra_op_threads
                                                        : std::max(1, train::AvailableCpus() / replicas);
  if (report)
  std::fprintf(stderr,
               "ctrain: DeepFM F=%d K=%d deep=%s dropout=%g%s l2=%g gemm=%s | %s lr=%g batch=%lld epochs=%d | "
               "threads: intra_op=%d towers=%d hogwild=%d%s\n",
               o.model.field_size, o.model.embedding_size, job.deep_layers.c_str(), o.model.dropout,
               o.model.batch_norm ? " bn" : "", o.model.l2_reg, model::DataTypeName(o.model.gemm_dtype),
               o.optimizer.name.c_str(), o.optimizer.learning_rate,
               static_cast<long long>(o.batch_size), o.epochs, intra, o.parallel.towers, o.parallel.hogwild,
               o.parallel.affinity ? " affinity" : "");
  // --ps: this process is worker job.ps.worker_index of a parameter-server job: the
  // same trainer, its parameters on the servers (ps/ps_parameters.h).
  std::unique_ptr<ps::PsParameters> ps_params;
  if (job.ps.enabled()) {
    CTRAIN_ASSIGN_OR_RETURN(service::ChannelConfig channel, job.data_service.security.Channel());
    CTRAIN_ASSIGN_OR_RETURN(ps::PsTrainOptions po, job.ps.Options(channel, PendingInterruptFlag()));
    CTRAIN_ASSIGN_OR_RETURN(ps_params, ps::PsParameters::Connect(o, po));
    std::string servers;
    for (const std::string& a : job.ps.addresses) servers += (servers.empty() ? "" : ",") + a;
    std::fprintf(stderr, "ctrain: %s, parameter servers %s\n", ps_params->Describe().c_str(), servers.c_str());
    if (job.ps.worker_index != 0) have_valid = false;  // the chief validates
  }
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> trainer, train::Trainer::Create(o, ps_params.get()));
  bool restored = false;
  CTRAIN_RETURN_IF_ERROR(trainer->Restore(&restored));
  if (restored && !ps_params)
    std::fprintf(stderr, "ctrain: resumed from %s at step %lld\n", o.model_dir.c_str(),
                 static_cast<long long>(trainer->global_step()));
#if CTRAIN_HAVE_MPI
  if (mpi != nullptr) {
    trainer->set_gradient_exchange(mpi);
    mpi->set_check_replicas_every(job.check_replicas_every);
    if (mpi->is_chief()) std::fprintf(stderr, "ctrain: %s\n", job_line.c_str());
  }
#endif
  train::TrainResult r;
  trainer->set_stop_flag(PendingInterruptFlag());
  std::unique_ptr<monitor::Monitor> mon;
  std::unique_ptr<monitor::TrainMonitor> train_mon;
  if (!job.monitor_dir.empty()) {
    monitor::MonitorOptions mo;
    mo.dir = monitor::RankDir(job.monitor_dir);
    mo.role = "trainer";
    mo.interval_ms = job.monitor_interval_ms;
    CTRAIN_ASSIGN_OR_RETURN(mon, monitor::Monitor::Start(mo));
    train_mon = std::make_unique<monitor::TrainMonitor>(mon.get(), 1);
    trainer->set_observer(train_mon.get());
  }
  if (have_valid && !job.valid.empty()) trainer->set_valid_formats(train::InputFormatsRead(va_stats));
  if (data_service_factory) trainer->set_batch_source_factory(data_service_factory);
#if CTRAIN_HAVE_MPI
  std::vector<int64_t> bytes0;  // traffic before training, by kind
  if (mpi != nullptr)
    for (int k = 0; k < dist::MpiExchange::kTrafficKinds; ++k)
      bytes0.push_back(mpi->payload_bytes(static_cast<dist::MpiExchange::Traffic>(k)));
  const int64_t mpi_colls0 = mpi != nullptr ? mpi->collectives() : 0;
  const double mpi_secs0 = mpi != nullptr ? mpi->collective_seconds() : 0;
  const int64_t wchar0 = mpi != nullptr ? dist::ProcessBytesWritten() : 0;
#endif
  {
    InterruptDeferral defer;  // SIGINT/SIGTERM: checkpoint at the current step, then exit 130/143
    if (stream)
      CTRAIN_RETURN_IF_ERROR(trainer->TrainStream(si, have_valid ? &va : nullptr, &r));
    else
      CTRAIN_RETURN_IF_ERROR(trainer->Train(tr, have_valid ? &va : nullptr, &r));
  }
  if (!report) {
    // The other ranks' lines would repeat rank 0's (docs/distributed.md).
  } else if (r.steps_this_run == 0) {
    std::fprintf(stderr, "ctrain: nothing to do: already at step %lld (%lld examples, %.2f epochs)",
                 static_cast<long long>(r.steps), static_cast<long long>(r.examples), r.epochs);
  } else if (!r.epoch_size_known) {
    std::fprintf(stderr,
                 "ctrain: done: %lld steps, %lld examples (%lld epochs completed; epoch size unknown until the "
                 "first epoch ends), %.0f examples/s",
                 static_cast<long long>(r.steps), static_cast<long long>(r.examples),
                 static_cast<long long>(r.epochs), r.examples_per_sec);
  } else {
    std::fprintf(stderr, "ctrain: done: %lld steps, %lld examples (%.2f epochs), %.0f examples/s",
                 static_cast<long long>(r.steps), static_cast<long long>(r.examples), r.epochs, r.examples_per_sec);
  }
  if (report) {
    if (r.evaluated) std::fprintf(stderr, ", valid auc %.5f logloss %.5f", r.eval.auc, r.eval.logloss);
    if (r.streamed && r.steps_this_run > 0 && remote)
      std::fprintf(stderr, ", input wait %.1f%% (data service)", 100.0 * r.input_wait_fraction);
    else if (r.streamed && r.steps_this_run > 0)
      std::fprintf(stderr, ", input wait %.1f%%, pipeline %.0f records/s", 100.0 * r.input_wait_fraction,
                   r.pipeline.records_per_second);
    std::fprintf(stderr, "\n");
    if (r.streamed && r.input_wait_fraction > 0.1 && !r.input_suggestion.empty())
      std::fprintf(stderr, "ctrain: %s\n", r.input_suggestion.c_str());
  }
  nlohmann::json mpi_json;
#if CTRAIN_HAVE_MPI
  if (mpi != nullptr && r.steps_this_run > 0) {  // traffic per step of this rank (docs/distributed.md#traffic)
    const double steps = static_cast<double>(r.steps_this_run);
    const int64_t wchar1 = dist::ProcessBytesWritten();
    auto per_step = [&](dist::MpiExchange::Traffic k) {
      return static_cast<double>(mpi->payload_bytes(k) - bytes0[k]) / steps;
    };
    mpi_json = {{"ranks", mpi->size()},
                {"collectives_per_step", static_cast<double>(mpi->collectives() - mpi_colls0) / steps},
                {"dense_bytes_per_step", per_step(dist::MpiExchange::kDense)},
                {"sparse_bytes_per_step", per_step(dist::MpiExchange::kSparse)},
                {"control_bytes_per_step", per_step(dist::MpiExchange::kControl)},
                {"broadcast_bytes", mpi->payload_bytes(dist::MpiExchange::kBroadcast) - bytes0[dist::MpiExchange::kBroadcast]},
                {"collective_seconds_per_step", (mpi->collective_seconds() - mpi_secs0) / steps},
                {"written_bytes_per_step", wchar0 >= 0 && wchar1 >= 0 ? (wchar1 - wchar0) / steps : -1.0},
                {"examples_left_over", trainer->examples_left_over()}};
    if (mpi->is_chief())
      std::fprintf(stderr,
                   "ctrain: mpirun: rank 0 per step: %.1f collectives, payload %.0f dense + %.0f sparse + %.0f control "
                   "bytes; %.0f bytes written to sockets (/proc/self/io, counting the initial broadcast of %lld "
                   "bytes spread over the steps; ~0 when Open MPI moves the data through shared memory)\n",
                   mpi_json["collectives_per_step"].get<double>(), mpi_json["dense_bytes_per_step"].get<double>(),
                   mpi_json["sparse_bytes_per_step"].get<double>(), mpi_json["control_bytes_per_step"].get<double>(),
                   mpi_json["written_bytes_per_step"].get<double>(),
                   static_cast<long long>(mpi_json["broadcast_bytes"].get<int64_t>()));
  }
#endif
  nlohmann::json ps_json;  // docs/parameter-servers.md#metrics
  if (ps_params) {
    ps::PsTrainResult pr;
    pr.train = r;
    ps::FinishPsResult(*ps_params, *trainer, &pr);
    ps_json = ps::PsMetricsJson(pr, job.ps.worker_index, job.ps.num_workers, job.ps.sync_replicas);
    std::fprintf(stderr, "ctrain: %s\n", ps::PsMetricsLine(ps_json).c_str());
  }
  if (!job.metrics_json.empty()) {
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
                     {"intra_op_parallelism_threads", intra},
                     {"towers", o.parallel.towers},
                     {"hogwild", o.parallel.hogwild},
                     {"input_mode", stream ? "stream" : "memory"},
                     {"input_wait_fraction", r.input_wait_fraction},
                     {"input_wait_seconds", r.input_wait_seconds},
                     {"compute_seconds", r.compute_seconds},
                     {"warnings", r.warnings},
                     {"warm_started", trainer->warm_started()}};
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
    if (!mpi_json.is_null()) j["mpi"] = mpi_json;
    if (!ps_json.is_null()) j["ps"] = ps_json;
    if (r.streamed) {
      j["pipeline_records_per_sec"] = r.pipeline.records_per_second;
      j["input_suggestion"] = r.input_suggestion;
      nlohmann::json pj = nlohmann::json::parse(r.pipeline.ToJson(), nullptr, false);
      j["pipeline"] = pj.is_discarded() ? nlohmann::json(r.pipeline.ToJson()) : pj;
      if (!r.source_metrics.is_null()) j["data_service"] = r.source_metrics;
    }
    CTRAIN_RETURN_IF_ERROR(WriteMetricsJson(job.metrics_json, j));
  }
  if (result != nullptr) *result = r;
  return Status::OK();
}

}  // namespace

const std::vector<std::string>& PipelineOptionNames() {
  static const std::vector<std::string> names{
      "num_parallel_reads", "num_parallel_calls", "shuffle_buffer_size", "reshuffle_each_iteration",
      "prefetch_buffer_size", "cache", "cache_max_bytes", "num_shards", "shard_index", "drop_remainder"};
  return names;
}

Status RunTrain(TrainJobOptions& options, train::TrainResult* result) {
#if CTRAIN_HAVE_MPI
  if (dist::LaunchedByMpirun()) {
    dist::DistOptions d;
    d.stall_warning_secs = options.stall_warning_secs;
    d.stall_shutdown_secs = options.stall_shutdown_secs;
    d.check_replicas_every = options.check_replicas_every;
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<dist::MpiExchange> mpi, dist::MpiExchange::Create(d));
    mpi->set_stop_flag(PendingInterruptFlag());
    Status s = RunTrainJob(options, mpi.get(), result);
    if (!s.ok() && s.code() != StatusCode::kCancelled && mpi->size() > 1) mpi->Abort(s.ToString(), 1);
    return s;
  }
#endif
  return RunTrainJob(options, nullptr, result);
}

}  // namespace ctrain::job
