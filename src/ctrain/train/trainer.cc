#include "ctrain/train/trainer.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>

#include "ctrain/train/gradient_exchange.h"
#include "ctrain/train/memory_budget.h"
#include "ctrain/train/remote_parameters.h"
#include "ctrain/train/threads.h"
#include "ctrain/train/trainer_impl.h"

namespace ctrain::train {

Status Trainer::Impl::CheckRemoteOptions() const {
  const std::string ps = "--ps (" + remote->Describe() + ")";
  if (options.parallel.towers > 1 || options.parallel.hogwild > 0)
    return InvalidArgumentError(ps + ": a worker runs one replica (no --towers / --hogwild); start more workers "
                                "instead");
  if (!options.warm_start_from.empty())
    return InvalidArgumentError("--warm-start-from is not supported with " + ps +
                                ": the servers initialise or restore the parameters themselves (warm-start a "
                                "local run, or restart the servers from its sharded checkpoint)");
  if (options.table.keyed())
    return InvalidArgumentError("--embedding-table keyed is not supported with " + ps +
                                ": the servers hold positional shards (keys partitioned by hash across servers are "
                                "not built yet); train keyed tables in one process (--towers, --hogwild, the data "
                                "service)");
  if (options.keep_best)
    return InvalidArgumentError("--keep-best is not supported with " + ps +
                                ": the parameters live on the servers, which save into --model-dir only");
  if (options.lr_plateau() && remote->num_workers() > 1)
    return InvalidArgumentError("--lr-decay plateau is not supported with " + ps +
                                " and more than one worker: the chief alone validates, the other workers would push "
                                "gradients at the old learning rate");
  if (!options.early_stopping_metric.empty() && remote->num_workers() > 1)
    return InvalidArgumentError("--early-stopping-metric is not supported with " + ps +
                                " and more than one worker: the chief alone validates, the other workers could not "
                                "stop at its step");
  return Status::OK();
}

Status Trainer::Impl::Init() {
  CTRAIN_RETURN_IF_ERROR(options.Validate());
  if (remote != nullptr) CTRAIN_RETURN_IF_ERROR(CheckRemoteOptions());
  if (options.table.keyed() && options.model.field_size > 0 && options.model.num_dense_fields >= options.model.field_size)
    return InvalidArgumentError("--embedding-table keyed: every field is numeric (--num-dense-fields " +
                                std::to_string(options.model.num_dense_fields) + " of " +
                                std::to_string(options.model.field_size) + "): there are no keys");
  CTRAIN_ASSIGN_OR_RETURN(optimizer, optim::MakeOptimizer(options.optimizer));
  current_lr = options.optimizer.learning_rate;
  if (options.lr_plateau()) plateau = optim::PlateauState::Start(options.plateau_config(), options.optimizer.learning_rate);
  const ParallelOptions& par = options.parallel;
  const int32_t R = par.replicas();
  intra = par.intra_op_threads > 0 ? par.intra_op_threads : std::max(1, AvailableCpus() / R);
  replicas.resize(R);
  for (auto& r : replicas) {
    CTRAIN_ASSIGN_OR_RETURN(r.model, model::MakeModel(options.model));
    CTRAIN_RETURN_IF_ERROR(r.model->status());
    r.model->InitDense(options.seed);
  }
  auto& dense = replicas[0].model->dense_params();
  if (remote == nullptr) {  // a --feature-size too large for this machine: refused here, not OOM-killed while filling the tables
    int64_t dense_floats = 0;
    for (const auto& d : dense) dense_floats += static_cast<int64_t>(d.value.size());
    // A keyed table holds at most its live-row bound (+ the numeric and default rows) after each eviction.
    const int64_t table_rows = options.table.keyed()
                                   ? options.table.live_bound() + options.model.num_dense_fields + 1
                                   : options.model.feature_size;
    const MemoryAvailable avail = ReadMemoryAvailable();
    const Status mem = CheckParameterMemory(table_rows, options.model.embedding_size, optimizer->num_slots(),
                                            options.optimizer.name, dense_floats, avail);
    if (!mem.ok() && options.table.keyed())
      return ResourceExhaustedError(std::string(mem.message()) + ". A keyed table's rows are --max-rows (" +
                                    std::to_string(options.table.live_bound()) + ") plus " +
                                    std::to_string(table_rows - options.table.live_bound()) +
                                    " numeric and default rows: lower --max-rows");
    CTRAIN_RETURN_IF_ERROR(mem);
    // The counting Bloom filter is one byte a counter, committed as keys hash into it: all of it, over time.
    const KeyedTableOptions& t = options.table;
    if (t.keyed() && t.admission == "bloom" && t.min_count > 1 && avail.bytes().has_value() &&
        t.bloom_counters > *avail.bytes() / 2)
      return ResourceExhaustedError("--bloom-counters " + std::to_string(t.bloom_counters) + " needs " +
                                    std::to_string(t.bloom_counters >> 20) + " MiB, more than half of what this "
                                    "process may use (" + avail.Describe() + "): lower --bloom-counters");
  }
  // The dense optimizer's slots: here, unless the servers run the dense optimizer (--ps-dense servers).
  if (remote == nullptr || remote->keeps_dense()) {
    dense_slots.resize(dense.size());
    for (size_t i = 0; i < dense.size(); ++i) {
      dense_slots[i].resize(optimizer->num_slots());
      for (int k = 0; k < optimizer->num_slots(); ++k)
        dense_slots[i][k].assign(dense[i].value.size(), optimizer->SlotInit(k));
    }
  }
  if (remote == nullptr) CTRAIN_RETURN_IF_ERROR(InitTables());  // else the servers hold the tables and their slots
  if (par.hogwild > 0) {
    hog_master.resize(dense.size());
    for (size_t i = 0; i < dense.size(); ++i) hog_master[i] = dense[i].value;
  }
  pool = std::make_unique<WorkerPool>(R, intra, par.affinity);
  eval_metric_options.negative_downsampling_rate = options.negative_downsampling_rate;
  switch (options.progress) {
    case ProgressMode::kAuto: terminal = isatty(STDERR_FILENO) != 0; break;
    case ProgressMode::kTerminal: terminal = true; break;
    default: terminal = false;
  }
  return Status::OK();
}

Status Trainer::Impl::InitTables() {
  optim::OptimizerConfig cfg = options.optimizer;
  if (options.parallel.hogwild > 0) cfg.parallel_min_floats = std::numeric_limits<int64_t>::max();
  LocalTableOptions to;
  to.concurrency = TableConcurrency::kHogwild;
  const int64_t rows = options.model.feature_size;
  const int32_t K = options.model.embedding_size;
  if (options.table.keyed()) return InitKeyedTables(cfg, to);
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<optim::Optimizer> wopt, optim::MakeOptimizer(cfg));
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<optim::Optimizer> vopt, optim::MakeOptimizer(cfg));
  CTRAIN_ASSIGN_OR_RETURN(w_table, LocalParameterTable::Create("embeddings/w", rows, 1, std::move(wopt), to));
  CTRAIN_ASSIGN_OR_RETURN(v_table, LocalParameterTable::Create("embeddings/V", rows, K, std::move(vopt), to));
  CTRAIN_ASSIGN_OR_RETURN(const model::EmbeddingInit init, model::EmbeddingInitOf(options.model));
  model::InitEmbeddings(options.seed, rows, K, w_table->data(), v_table->data(), init);
  return Status::OK();
}

double EvalResult::Metric(const std::string& name) const {
  if (name == "auc") return auc;
  if (name == "gauc") return gauc;
  if (name == "pr_auc") return pr_auc;
  if (name == "logloss") return logloss;
  if (name == "normalized_entropy") return normalized_entropy;
  return std::numeric_limits<double>::quiet_NaN();
}

Trainer::Trainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Trainer::~Trainer() = default;

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainOptions& options, RemoteParameters* remote) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->remote = remote;
  CTRAIN_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Trainer>(new Trainer(std::move(impl)));
}

Status Trainer::Train(const Dataset& train, const Dataset* valid, TrainResult* result) {
  return impl_->Train(train, valid, result);
}

Status Trainer::TrainStream(const StreamInput& train, const Dataset* valid, TrainResult* result) {
  return impl_->TrainStream(train, valid, result);
}

StatusOr<double> Trainer::MeasureThroughput(const Dataset& train, int64_t steps) {
  Impl& m = *impl_;
  TrainOptions saved = m.options;
  m.options.model_dir.clear();
  m.options.eval_every_steps = 0;
  m.options.save_checkpoints_steps = 0;
  m.options.progress = ProgressMode::kNone;
  m.terminal = false;
  const bool warned = m.input_warned;
  m.input_warned = true;  // a measurement, not a run: no input warnings
  const int32_t R = m.options.parallel.hogwild > 0 ? m.options.parallel.hogwild : 1;
  // One warm-up step (oneDNN primitive creation, first-touch), then the timed ones.
  TrainResult r;
  m.options.max_steps = m.pos.global_step + R;
  m.options.epochs = std::numeric_limits<int32_t>::max() / 2;
  Status st = m.Train(train, nullptr, &r);
  if (st.ok()) {
    m.options.max_steps = m.pos.global_step + steps * R;
    st = m.Train(train, nullptr, &r);
  }
  m.options = saved;
  m.finished = false;
  m.terminal = false;
  m.input_warned = warned;
  CTRAIN_RETURN_IF_ERROR(st);
  return r.examples_per_sec;
}

Status Trainer::Predict(const Dataset& data, std::vector<float>* probs) {
  CTRAIN_RETURN_IF_ERROR(impl_->CheckData(data, "input"));
  probs->clear();
  probs->reserve(data.size());
  impl_->predictions = probs;
  StatusOr<EvalResult> r = impl_->Evaluate(data);
  impl_->predictions = nullptr;
  return r.status();
}

StatusOr<EvalResult> Trainer::Evaluate(const Dataset& data) {
  CTRAIN_RETURN_IF_ERROR(impl_->CheckData(data, "input"));
  return impl_->Evaluate(data);
}

Status Trainer::SaveCheckpoint() { return impl_->Save(); }
Status Trainer::ExportRemoteModel(const std::string& dir) {
  Impl& m = *impl_;
  if (m.remote == nullptr) return FailedPreconditionError("exporting from parameter servers: this trainer has none");
  CTRAIN_RETURN_IF_ERROR(m.FlushRemoteDense());  // the servers' copy is the one exported
  return m.remote->Export(dir, m.Meta(), m.replicas[0].model->dense_params(), m.replicas[0].model->state());
}
int64_t Trainer::global_step() const { return impl_->pos.global_step; }
const TrainOptions& Trainer::options() const { return impl_->options; }
void Trainer::set_log_sink(std::function<void(const std::string&)> sink) { impl_->sink = std::move(sink); }
void Trainer::set_stop_flag(const std::atomic<int>* flag) { impl_->stop_flag = flag; }
void Trainer::set_observer(TrainObserver* observer) { impl_->observer = observer; }
void Trainer::set_batch_source_factory(BatchSourceFactory factory) { impl_->source_factory = std::move(factory); }
void Trainer::set_gradient_exchange(GradientExchange* exchange) { impl_->exch = exchange; }
int64_t Trainer::examples_left_over() const { return impl_->left_over; }
Status Trainer::set_eval_negative_downsampling(double rate) {
  CTRAIN_RETURN_IF_ERROR(ValidateDownsamplingRate(rate));
  impl_->eval_metric_options.negative_downsampling_rate = rate;
  return Status::OK();
}
void Trainer::set_eval_weights(std::vector<float> weights) { impl_->eval_weights = std::move(weights); }

Status Trainer::set_group_field(int32_t field) {
  if (field < -1 || field >= impl_->options.model.field_size)
    return InvalidArgumentError("--gauc-field must be a field index in [0, " +
                                std::to_string(impl_->options.model.field_size) + "), got " + std::to_string(field));
  impl_->options.group_field = field;
  return Status::OK();
}
void Trainer::set_valid_formats(std::vector<InputFormat> formats) { impl_->valid_formats = std::move(formats); }

StatusOr<model::DeepFMConfig> ReadCheckpointModelConfig(const std::string& model_dir) {
  CTRAIN_ASSIGN_OR_RETURN(std::optional<LoadedCheckpoint> ck, ReadTrainerCheckpoint(model_dir));
  if (!ck.has_value()) return NotFoundError(model_dir + ": no checkpoint");
  return ModelConfigFromJson(ck->meta.value("model", nlohmann::json()));
}

StatusOr<std::unique_ptr<Trainer>> LoadTrainerFromCheckpoint(const std::string& model_dir,
                                                             const ParallelOptions& parallel) {
  CTRAIN_ASSIGN_OR_RETURN(std::optional<LoadedCheckpoint> ck, ReadTrainerCheckpoint(model_dir));
  if (!ck.has_value()) return NotFoundError(model_dir + ": no checkpoint");
  TrainOptions o;
  CTRAIN_ASSIGN_OR_RETURN(o.model, ModelConfigFromJson(ck->meta.value("model", nlohmann::json())));
  CTRAIN_ASSIGN_OR_RETURN(o.optimizer, OptimizerConfigFromJson(ck->meta.value("optimizer", nlohmann::json())));
  o.seed = ck->meta.value("seed", uint64_t{2017});
  o.batch_size = ck->meta.value("batch_size", int64_t{256});
  if (ck->meta.contains("data")) {
    CTRAIN_ASSIGN_OR_RETURN(o.data, DataSourceFromJson(ck->meta["data"]));
  }
  o.negative_downsampling_rate = ck->meta.value("negative_downsampling_rate", 1.0);
  CTRAIN_ASSIGN_OR_RETURN(o.table, KeyedTableOptionsFromJson(ck->meta.value("embedding_table", nlohmann::json())));
  o.model_dir = model_dir;
  o.parallel = parallel;
  o.parallel.towers = 1;
  o.parallel.hogwild = 0;
  o.progress = ProgressMode::kNone;
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> t, Trainer::Create(o));
  bool restored = false;
  CTRAIN_RETURN_IF_ERROR(t->Restore(&restored));
  CTRAIN_RETURN_IF_ERROR(t->set_eval_negative_downsampling(1.0));  // eval data: not downsampled unless told
  return t;
}

}  // namespace ctrain::train
