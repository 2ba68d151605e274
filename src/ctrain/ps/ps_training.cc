#include "ctrain/ps/ps_training.h"

#include <omp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "ctrain/model/deepfm.h"
#include "ctrain/model/random.h"
#include "ctrain/ps/admin.h"
#include "ctrain/train/metrics.h"
#include "ctrain/train/sharded_checkpoint.h"
#include "ctrain/train/threads.h"

namespace ctrain::ps {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Local training's epoch order (train/trainer.cc EpochOrder): a pure function of (seed, epoch).
void EpochOrder(const train::TrainOptions& o, int64_t n, int64_t epoch, std::vector<int64_t>* order) {
  order->resize(n);
  std::iota(order->begin(), order->end(), int64_t{0});
  if (!o.shuffle) return;
  std::mt19937_64 rng(model::StreamKey(o.seed, 0x5eed0000ULL + static_cast<uint64_t>(epoch)));
  for (int64_t i = n - 1; i > 0; --i) {
    const uint64_t j = rng() % static_cast<uint64_t>(i + 1);
    std::swap((*order)[i], (*order)[j]);
  }
}

// Local training's warmup (train/trainer.cc SetWarmupRate).
float LearningRate(const train::TrainOptions& o, int64_t step) {
  if (o.lr_warmup_steps <= 0) return o.optimizer.learning_rate;
  const float to = o.optimizer.learning_rate;
  const float from = o.lr_warmup_from > 0 ? o.lr_warmup_from : to;
  const double f = std::min(1.0, static_cast<double>(step) / static_cast<double>(o.lr_warmup_steps));
  return static_cast<float>(from + (static_cast<double>(to) - from) * f);
}

proto::DenseTensor ToTensor(const model::DenseParam& p, bool with_values) {
  proto::DenseTensor t;
  t.set_name(p.name);
  for (int64_t d : p.shape) t.add_shape(d);
  if (with_values) t.set_values(reinterpret_cast<const char*>(p.value.data()), p.value.size() * sizeof(float));
  return t;
}

struct Worker {
  Worker(const train::TrainOptions& options, const PsTrainOptions& ps_options) : o(options), ps(ps_options) {}
  const train::TrainOptions& o;
  const PsTrainOptions& ps;
  std::unique_ptr<PsClient> client;
  std::unique_ptr<model::DeepFM> model;
  data::Batch batch;
  std::vector<int64_t> rows, unique_ids;
  std::vector<int32_t> index;
  std::vector<float> w_rows, v_rows;
  std::vector<std::vector<float>> dense_values;
  model::SparseGrad w_grad, v_grad;
  model::LossTerms loss;
  bool chief = false;

  void Log(const std::string& line) const {
    if (o.progress == train::ProgressMode::kNone) return;
    if (ps.client.log)
      ps.client.log(line);
    else
      std::fprintf(stderr, "ctrain: worker %d: %s\n", ps.client.worker_index, line.c_str());
  }

  // Pulls the rows of unique_ids and the dense parameters into the model.
  Status PullInto() {
    const size_t U = unique_ids.size();
    w_rows.resize(U);
    v_rows.resize(U * o.model.embedding_size);
    CTRAIN_RETURN_IF_ERROR(client->Pull(unique_ids, w_rows.data(), v_rows.data(), &dense_values));
    auto& dense = model->dense_params();
    for (size_t i = 0; i < dense.size(); ++i) dense[i].value = dense_values[i];
    return Status::OK();
  }

  // One step on `rows` (empty: a sync round without a batch for this worker).
  Status Step(const train::Dataset& train, int64_t dropout_key, int64_t lr_step, double* loss_out) {
    const float lr = LearningRate(o, lr_step);
    if (rows.empty()) return client->Push({}, nullptr, nullptr, nullptr, lr, 0);
    train.Gather(rows, &batch);
    model::DeepFM::UniqueIds(batch, &unique_ids, &index);
    CTRAIN_RETURN_IF_ERROR(PullInto());
    CTRAIN_RETURN_IF_ERROR(model->TrainStep(batch, unique_ids, index, w_rows.data(), v_rows.data(), dropout_key,
                                            &w_grad, &v_grad, &loss));
    *loss_out = loss.loss;
    const bool has_w = !w_grad.ids.empty(), has_v = !v_grad.ids.empty();
    if (has_w && has_v && w_grad.ids != v_grad.ids)
      return InternalError("TrainStep returned different ids for w and V");
    const std::vector<int64_t>& ids = has_v ? v_grad.ids : w_grad.ids;
    std::vector<const float*> dense;
    for (const auto& d : model->dense_params()) dense.push_back(d.grad.data());
    return client->Push(ids, has_w ? w_grad.grad.data() : nullptr, has_v ? v_grad.grad.data() : nullptr, &dense, lr,
                        batch.size());
  }

  StatusOr<train::EvalResult> Evaluate(const train::Dataset& data) {
    train::MetricAccumulator acc;
    std::vector<float> probs;
    constexpr int64_t kChunk = 8192;
    for (int64_t b = 0; b < data.size(); b += kChunk) {
      const int64_t e = std::min(data.size(), b + kChunk);
      data.Slice(b, e, &batch);
      model::DeepFM::UniqueIds(batch, &unique_ids, &index);
      CTRAIN_RETURN_IF_ERROR(PullInto());
      probs.resize(e - b);
      CTRAIN_RETURN_IF_ERROR(
          model->Predict(batch, unique_ids, index, w_rows.data(), v_rows.data(), probs.data()));
      for (int64_t i = 0; i < e - b; ++i)
        if (!std::isfinite(probs[i]))
          return InvalidArgumentError("validation row " + std::to_string(b + i) + ": the prediction is not finite");
      CTRAIN_RETURN_IF_ERROR(acc.Add(probs, batch.labels));
    }
    train::EvalResult r;
    r.auc = acc.auc();
    r.logloss = acc.logloss();
    r.examples = acc.count();
    r.label_mean = acc.label_mean();
    r.prediction_mean = acc.prediction_mean();
    return r;
  }

  // Chief: every shard saves, then the manifest names the files.
  Status Save(int64_t epoch, int64_t examples, int64_t train_rows, PsTrainResult* result) {
    if (!chief || o.model_dir.empty()) return Status::OK();
    nlohmann::json meta;
    meta["format"] = "ctrain-deepfm-checkpoint-v1";
    meta["model"] = train::ModelConfigToJson(o.model);
    meta["optimizer"] = train::OptimizerConfigToJson(o.optimizer);
    meta["seed"] = o.seed;
    meta["batch_size"] = o.batch_size;
    meta["shuffle"] = o.shuffle;
    meta["epoch"] = epoch;
    meta["batch_in_epoch"] = 0;
    meta["examples"] = examples;
    meta["train_rows"] = train_rows;
    if (o.data.recorded()) meta["data"] = train::DataSourceToJson(o.data, o.model.field_size);
    meta["parameter_servers"] = {{"num_workers", ps.num_workers}, {"sync_replicas", ps.sync_replicas},
                                 {"addresses", ps.client.addresses}};
    std::vector<proto::DenseTensor> state;
    for (const auto& s : model->state()) state.push_back(ToTensor(s, true));
    std::vector<std::string> paths;
    int64_t step = 0;
    CTRAIN_RETURN_IF_ERROR(client->Save(meta, state, &paths, &step));
    meta["global_step"] = step;
    nlohmann::json files = nlohmann::json::array();
    for (const std::string& p : paths) files.push_back(train::ShardManifestEntry(o.model_dir, p));
    nlohmann::json manifest{{"format", train::kShardedManifestFormat},
                            {"step", step},
                            {"partitioner", std::string(client->partitioner().name())},
                            {"num_shards", client->num_shards()},
                            {"feature_size", o.model.feature_size},
                            {"shards", files},
                            {"meta", meta}};
    CTRAIN_RETURN_IF_ERROR(train::WriteShardedManifest(o.model_dir, manifest));
    result->manifest = o.model_dir + "/" + train::kShardedManifestName;
    return Status::OK();
  }
};

}  // namespace

StatusOr<PsTrainOptions> PsWorkerSettings::Options(const service::ChannelConfig& channel,
                                                   const std::atomic<int>* stop) const {
  if (num_workers < 1) return InvalidArgumentError("--num-workers must be >= 1");
  if (worker_index < 0 || worker_index >= num_workers)
    return InvalidArgumentError("--worker-index " + std::to_string(worker_index) + " not in [0, " +
                                std::to_string(num_workers) + ") (--num-workers " + std::to_string(num_workers) + ")");
  if (!(wait_seconds > 0)) return InvalidArgumentError("--ps-wait-seconds must be > 0");
  if (max_staleness < 0) return InvalidArgumentError("--max-staleness must be >= 0");
  PsTrainOptions o;
  o.client.addresses = addresses;
  o.client.channel = channel;
  o.client.worker_index = worker_index;
  o.client.max_wait = std::chrono::milliseconds(static_cast<int64_t>(wait_seconds * 1000));
  o.client.stop = stop;
  o.num_workers = num_workers;
  o.sync_replicas = sync_replicas;
  o.max_staleness = max_staleness;
  return o;
}

Status RunPsTraining(const train::TrainOptions& options, const PsTrainOptions& ps, const train::Dataset& train,
                     const train::Dataset* valid, PsTrainResult* result) {
  *result = PsTrainResult();
  CTRAIN_RETURN_IF_ERROR(options.Validate());
  const int32_t W = ps.num_workers, k = ps.client.worker_index;
  if (W < 1) return InvalidArgumentError("--num-workers must be >= 1");
  if (k < 0 || k >= W)
    return InvalidArgumentError("--worker-index " + std::to_string(k) + " not in [0, " + std::to_string(W) + ")");
  if (options.parallel.towers > 1 || options.parallel.hogwild > 0)
    return InvalidArgumentError("--ps: a worker runs one replica (no --towers / --hogwild); start more workers instead");
  if (ps.sync_replicas && ps.max_staleness > 0)
    return InvalidArgumentError("--max-staleness bounds asynchronous training; --sync-replicas has no stale gradients");
  if (ps.max_staleness < 0) return InvalidArgumentError("--max-staleness must be >= 0");
  if (train.field_size() != options.model.field_size)
    return InvalidArgumentError("training data has field_size " + std::to_string(train.field_size()) + ", the model " +
                                std::to_string(options.model.field_size));
  if (train.MaxIdPlusOne() > options.model.feature_size)
    return InvalidArgumentError("training data has id " + std::to_string(train.MaxIdPlusOne() - 1) +
                                " >= feature_size " + std::to_string(options.model.feature_size));
  if (train.empty()) return InvalidArgumentError("training data is empty");

  Worker w(options, ps);
  w.chief = k == 0;
  omp_set_num_threads(options.parallel.intra_op_threads > 0 ? options.parallel.intra_op_threads
                                                            : train::AvailableCpus());
  w.model = std::make_unique<model::DeepFM>(options.model);
  CTRAIN_RETURN_IF_ERROR(w.model->status());
  w.model->InitDense(options.seed);
  proto::ModelSpec spec;
  spec.set_model_json(train::ModelConfigToJson(options.model).dump());
  spec.set_optimizer_json(train::OptimizerConfigToJson(options.optimizer).dump());
  spec.set_seed(options.seed);
  spec.set_num_workers(W);
  spec.set_sync_replicas(ps.sync_replicas);
  spec.set_max_staleness(ps.max_staleness);
  for (const auto& d : w.model->dense_params()) *spec.add_dense() = ToTensor(d, true);
  CTRAIN_ASSIGN_OR_RETURN(w.client, PsClient::Connect(ps.client));
  CTRAIN_RETURN_IF_ERROR(w.client->Init(spec));
  int64_t start_epoch = 0;
  if (!w.client->restored_meta().empty()) {
    const nlohmann::json m = nlohmann::json::parse(w.client->restored_meta(), nullptr, false);
    if (m.is_object()) start_epoch = m.value("epoch", int64_t{0});
    w.Log("the parameter servers restored a checkpoint at global step " +
          std::to_string(w.client->initial_global_step()) + "; continuing at epoch " + std::to_string(start_epoch + 1));
  }
  const bool is_chief = w.chief;
  const train::Dataset* eval_on = is_chief ? valid : nullptr;

  const int64_t N = train.size(), B = options.batch_size;
  const int64_t steps_per_epoch = (N + B - 1) / B;
  std::vector<int64_t> order;
  int64_t local_steps = 0, examples = 0;
  int64_t round = ps.sync_replicas ? w.client->initial_global_step() : 0;  // sync: the global step
  double seconds = 0, loss_sum = 0;
  int64_t loss_n = 0;
  const auto stop_requested = [&] { return ps.client.stop != nullptr && ps.client.stop->load() != 0; };
  for (int64_t epoch = start_epoch; epoch < options.epochs; ++epoch) {
    EpochOrder(options, N, epoch, &order);
    double epoch_loss = 0;
    int64_t epoch_n = 0;
    const int64_t my_steps = ps.sync_replicas ? (steps_per_epoch + W - 1) / W
                                              : (steps_per_epoch - k + W - 1) / W;
    for (int64_t i = 0; i < my_steps; ++i) {
      if (options.max_steps > 0 && local_steps >= options.max_steps) break;
      if (stop_requested()) {
        CTRAIN_RETURN_IF_ERROR(w.Save(epoch, examples, N, result));
        return CancelledError("interrupted at step " + std::to_string(local_steps) + " of worker " +
                              std::to_string(k) + (is_chief && !options.model_dir.empty()
                                                       ? ": the parameter servers saved their shards"
                                                       : ""));
      }
      const int64_t b = ps.sync_replicas ? i * W + k : k + i * W;
      w.rows.clear();
      if (b < steps_per_epoch) {
        const int64_t lo = b * B, hi = std::min(N, lo + B);
        w.rows.assign(order.begin() + lo, order.begin() + hi);
      }
      ++local_steps;
      ++round;
      const int64_t key = ps.sync_replicas ? round * W + k : local_steps * W + k;
      const int64_t lr_step = ps.sync_replicas ? round : local_steps;
      double loss = 0;
      const auto t0 = Clock::now();
      Status st = w.Step(train, key, lr_step, &loss);
      if (!st.ok()) return st.WithContext("worker " + std::to_string(k) + " step " + std::to_string(local_steps));
      seconds += Seconds(t0, Clock::now());
      if (!w.rows.empty()) {
        examples += static_cast<int64_t>(w.rows.size());
        epoch_loss += loss, ++epoch_n;
        loss_sum += loss, ++loss_n;
      }
      if (options.save_checkpoints_steps > 0 && local_steps % options.save_checkpoints_steps == 0)
        CTRAIN_RETURN_IF_ERROR(w.Save(epoch, examples, N, result));
    }
    result->train.last_loss = epoch_n ? epoch_loss / epoch_n : 0;
    char buf[256];
    std::snprintf(buf, sizeof buf, "epoch %lld/%d: %lld steps, train loss %.5f, %.0f examples/s",
                  static_cast<long long>(epoch + 1), options.epochs, static_cast<long long>(local_steps),
                  result->train.last_loss, seconds > 0 ? examples / seconds : 0.0);
    w.Log(buf);
    if (eval_on != nullptr) {
      CTRAIN_ASSIGN_OR_RETURN(result->train.eval, w.Evaluate(*eval_on));
      result->train.evaluated = true;
      std::snprintf(buf, sizeof buf, "epoch end step %lld: valid auc %.5f logloss %.5f (%lld examples)",
                    static_cast<long long>(local_steps), result->train.eval.auc, result->train.eval.logloss,
                    static_cast<long long>(result->train.eval.examples));
      w.Log(buf);
    }
    CTRAIN_RETURN_IF_ERROR(w.Save(epoch + 1, examples, N, result));
    if (options.max_steps > 0 && local_steps >= options.max_steps) break;
  }
  result->train.steps = local_steps;
  result->train.steps_this_run = local_steps;
  result->train.examples = examples;
  result->train.examples_this_run = examples;
  result->train.seconds = seconds;
  result->train.examples_per_sec = seconds > 0 ? examples / seconds : 0;
  result->train.compute_seconds = seconds;
  result->client = w.client->stats();
  result->global_step = round;
  if (is_chief) {
    StatusOr<nlohmann::json> st = GetPsStatus(ps.client.addresses, ps.client.channel, 5000);
    if (st.ok()) result->servers = std::move(*st);
  }
  return Status::OK();
}

nlohmann::json PsMetricsJson(const PsTrainResult& r, int32_t worker_index, int32_t num_workers, bool sync) {
  const double steps = r.train.steps > 0 ? static_cast<double>(r.train.steps) : 1.0;
  const ClientStats& c = r.client;
  nlohmann::json j{{"worker_index", worker_index},
                   {"num_workers", num_workers},
                   {"sync_replicas", sync},
                   {"steps", r.train.steps},
                   {"pulls_per_step", c.pulls / steps},
                   {"pushes_per_step", c.pushes / steps},
                   {"bytes_sent_per_step", c.bytes_sent / steps},
                   {"bytes_received_per_step", c.bytes_received / steps},
                   {"encode_seconds_per_step", c.encode_seconds / steps},
                   {"rpc_seconds_per_step", c.rpc_seconds / steps},
                   {"protobuf_seconds_per_step", c.protobuf_seconds / steps},
                   {"seconds_per_step", r.train.seconds / steps},
                   {"dropped_stale", c.dropped_stale}};
  if (!r.servers.is_null()) j["servers"] = r.servers;
  return j;
}

std::string PsMetricsLine(const nlohmann::json& m) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "ps: worker %d per step: %.1f pulls + %.1f pushes, %.0f bytes sent, %.0f received; %.2f ms of "
                "%.2f ms in the calls (network + servers), %.2f ms packing; %lld stale pushes dropped",
                m.value("worker_index", 0), m.value("pulls_per_step", 0.0), m.value("pushes_per_step", 0.0),
                m.value("bytes_sent_per_step", 0.0), m.value("bytes_received_per_step", 0.0),
                1e3 * m.value("rpc_seconds_per_step", 0.0), 1e3 * m.value("seconds_per_step", 0.0),
                1e3 * m.value("encode_seconds_per_step", 0.0),
                static_cast<long long>(m.value("dropped_stale", int64_t{0})));
  return buf;
}

}  // namespace ctrain::ps
