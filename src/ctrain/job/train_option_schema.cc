// The table of `ctrain train`'s options (job/option_schema.h): each declared
// once, with where it is honoured. docs/training.md#options lists them.
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ctrain/job/option_schema.h"
#include "ctrain/job/train_job.h"
#include "ctrain/train/train_config.h"

namespace ctrain::job {
namespace {

using J = TrainJobOptions;
using M = TrainMode;
using json = nlohmann::json;

// Short names of the mode sets the table uses.
constexpr ModeSet kAll = kAllModes;
constexpr ModeSet kPs = M::kPsAsync | M::kPsSync;
// Reading in memory: every mode but the stream pipeline and the data service.
constexpr ModeSet kMemory = AllModesBut(M::kLocalStream | M::kDataService);
// The local input pipeline (--input-mode stream): replicas and mpirun stream too.
constexpr ModeSet kPipeline = M::kLocalStream | M::kTowers | M::kHogwild | M::kMpirun;
// The data service's trainer side: a stream run that reads through the service.
constexpr ModeSet kService = M::kLocalStream | M::kTowers | M::kHogwild | M::kMpirun | M::kDataService;
constexpr ModeSet kNotPs = AllModesBut(kPs);
constexpr ModeSet kSync = AllModesBut(static_cast<ModeSet>(M::kHogwild));
// Keyed embedding tables: every mode but the parameter servers (their shards are positional).
constexpr ModeSet kKeyed = kNotPs;
// Autotune measures local thread layouts on local rows, on cores no other rank shares.
constexpr ModeSet kLocalLayouts = AllModesBut(kPs | M::kDataService | M::kMpirun);

template <class T>
constexpr OptionType TypeOf() {
  if constexpr (std::is_same_v<T, bool>) return OptionType::kBool;
  else if constexpr (std::is_integral_v<T>) return OptionType::kInt;
  else if constexpr (std::is_floating_point_v<T>) return OptionType::kFloat;
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return OptionType::kStringList;
  else return OptionType::kString;
}

// A field's typed get/set from an accessor `[](J& o) -> auto& { return o.x; }`.
template <class F>
void Bind(OptionSpec& s, F field) {
  using T = std::remove_reference_t<decltype(field(std::declval<J&>()))>;
  if (s.type != OptionType::kIntList) s.type = TypeOf<T>();
  const bool int_list = s.type == OptionType::kIntList;
  s.get = [field, int_list](const J& o) -> json {
    const T& v = field(const_cast<J&>(o));
    if constexpr (std::is_same_v<T, float>) {
      // The float's shortest decimal (0.001f -> 0.001, not 0.0010000000474974513).
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof(buf), v);
      return std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<double>(v);
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!int_list) return json(v);
      json list = json::array();  // "400,400" -> [400, 400] (set() wrote it from a list)
      for (size_t i = 0; i < v.size();) {
        const size_t comma = std::min(v.find(',', i), v.size());
        int64_t n = 0;
        const auto r = std::from_chars(v.data() + i, v.data() + comma, n);
        if (r.ec != std::errc() || r.ptr != v.data() + comma) return json(v);  // set directly, not a list: as is
        list.push_back(n);
        i = comma + 1;
      }
      return list;
    } else {
      return json(v);
    }
  };
  const std::string flag = s.flag();
  s.set = [field, flag](J& o, const json& v) -> Status {
    T& out = field(o);
    if constexpr (std::is_same_v<T, bool>) {
      out = v.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
      // CoerceOptionValue gives an integer; the field's range is checked here.
      const bool neg = v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0;
      if (neg) {
        const int64_t n = v.get<int64_t>();
        if (std::is_unsigned_v<T> || n < static_cast<int64_t>(std::numeric_limits<T>::min()))
          return InvalidArgumentError(flag + ": " + std::to_string(n) + " is out of range");
        out = static_cast<T>(n);
      } else {
        const uint64_t n = v.get<uint64_t>();
        if (n > static_cast<uint64_t>(std::numeric_limits<T>::max()))
          return InvalidArgumentError(flag + ": " + std::to_string(n) + " is out of range");
        out = static_cast<T>(n);
      }
    } else if constexpr (std::is_floating_point_v<T>) {
      out = static_cast<T>(v.get<double>());
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      out = v.get<std::vector<std::string>>();
    } else if (v.is_array()) {  // kIntList kept as its text ("400,400")
      std::string text;
      for (const json& e : v) text += (text.empty() ? "" : ",") + std::to_string(e.get<int64_t>());
      out = text;
    } else {
      out = v.get<std::string>();
    }
    return Status::OK();
  };
}

// One entry: name (then aliases), help, unit, the modes it is honoured in.
struct Entry {
  OptionSpec s;
  Entry(std::string name, std::vector<std::string> aliases, std::string unit, std::string help, ModeSet modes) {
    s.name = std::move(name);
    s.aliases = std::move(aliases);
    s.unit = std::move(unit);
    s.help = std::move(help);
    s.modes = modes;
  }
  Entry& needs(ModeSet m) { return s.needs = m, *this; }
  Entry& why(std::string w) { return s.not_supported_why = std::move(w), *this; }
  Entry& why_in(TrainMode m, std::string w) { return s.not_supported_why_in.emplace_back(m, std::move(w)), *this; }
  Entry& switch_() { return s.is_switch = true, *this; }
  Entry& comma() { return s.comma_list = true, *this; }
  Entry& int_list() { return s.type = OptionType::kIntList, *this; }
  Entry& launch(std::string from) { return s.set_by_launch = std::move(from), *this; }
  Entry& models(std::vector<std::string> kinds) { return s.models = std::move(kinds), *this; }
  template <class F>
  OptionSpec bind(F field) {
    Bind(s, field);
    return std::move(s);
  }
};

#define FIELD(expr) [](J& o) -> auto& { return o.expr; }

std::vector<OptionSpec> Build() {
  const std::string ps_why = "the servers hold the parameters and checkpoint into --model-dir (docs/parameter-servers.md#limits)";
  const std::string memory_why = "the options of the input pipeline apply to --input-mode stream; memory mode reads "
                                 "every row first and shuffles them itself (--shuffle, --seed)";
  std::vector<OptionSpec> t;
  auto add = [&t](OptionSpec s) { t.push_back(std::move(s)); };
  // The run's inputs.
  add(Entry("config", {}, "path", "Config file (.toml or .json) with option values; flags win", kAll)
          .launch("the hyperparameters themselves")
          .bind(FIELD(config)));
  add(Entry("train", {}, "paths", "Training files (LibSVM, TFRecord, Criteo TSV/CSV, libFFM; gzip ok); none = the "
                                   "built-in synthetic data", kAll)
          .launch("the \"train\" channel (inputdataconfig.json)")
          .bind(FIELD(train)));
  add(Entry("valid", {}, "paths", "Validation files (evaluated at each epoch end)", kAll)
          .launch("the \"validation\" channel (inputdataconfig.json)")
          .bind(FIELD(valid)));
  add(Entry("format", {}, "", "Input format: auto|libsvm|tfrecord|criteo-tsv|criteo-csv|libffm", kAll)
          .bind(FIELD(data.format)));
  add(Entry("compression", {}, "", "Input compression: auto|none|gzip|zlib", kAll).bind(FIELD(data.compression)));
  add(Entry("field_size", {}, "fields", "Features per example (F)", kAll).bind(FIELD(data.field_size)));
  add(Entry("id_base", {}, "", "LibSVM: ids in the file start at this value (1 for classic LIBSVM files); never "
                              "guessed", kAll)
          .bind(FIELD(data.id_base)));
  add(Entry("feature_map", {}, "path", "Criteo: map categories with this feature map (name id per line) instead of "
                                      "hashing", kAll)
          .bind(FIELD(data.feature_map)));
  add(Entry("skip_corrupt_records", {}, "", "TFRecord: skip records whose CRC does not match (counted, capped)", kAll)
          .switch_()
          .bind(FIELD(data.skip_corrupt_records)));
  add(Entry("max_skipped_records", {}, "records", "Cap for --skip-corrupt-records, per input file; one more is an "
                                                 "error. 0 = no limit", kAll)
          .bind(FIELD(data.max_skipped_records)));
  add(Entry("pipe_timeout_ms", {}, "ms", "FIFOs and pipe:<dir>/<channel>: longest wait for the FIFO to appear, a "
                                        "writer to connect, or the next byte (0 = no limit)",
            AllModesBut(static_cast<ModeSet>(M::kDataService)))
          .why("the data-service workers read files, never the trainer's FIFOs")
          .bind(FIELD(data.pipe_timeout_ms)));
  add(Entry("max_line_bytes", {}, "bytes", "Text formats: longest line accepted; a longer one (or no newline within "
                                          "it) is an error", kAll)
          .bind(FIELD(data.max_line_bytes)));
  add(Entry("criteo_pad_missing_trailing", {}, "", "Criteo text: read a row whose trailing empty cells were stripped "
                                                  "(fewer than 40 cells) with the missing cells empty (counted as "
                                                  "padded_rows)",
            kAll)
          .switch_()
          .bind(FIELD(data.criteo_pad_missing_trailing)));
  add(Entry("feature_size", {}, "rows", "Rows of the embedding tables (the id space; Criteo hash buckets)", kAll)
          .bind(FIELD(data.feature_size)));
  add(Entry("oov", {}, "", "An id at or above --feature-size: error (stop, naming the record) or bucket (read as "
                           "its field's out-of-vocabulary row, one per field after the vocabulary; counted as "
                           "oov_ids)", kAll)
          .bind(FIELD(data.oov)));
  add(Entry("feature_spec", {}, "path", "Feature spec (JSON/TOML, docs/feature-spec.md): tf.Example keys, a LibSVM "
                                       "field map or libFFM fields -> fields, multi-hot too; sets the field and "
                                       "feature sizes", kMemory)
          .why("a feature spec reads --train in memory (--input-mode memory)")
          .bind(FIELD(data.feature_spec)));
  // The model.
  add(Entry("model", {"model_type"}, "", "The model: deepfm|lr|fm|wide_deep|dcn|dcn_v2|dlrm|xdeepfm (docs/model.md)",
            kAll)
          .bind(FIELD(model)));
  add(Entry("embedding_size", {}, "", "K: embedding width", kAll).models({"deepfm", "fm", "wide_deep", "dcn", "dcn_v2", "dlrm", "xdeepfm"})
          .bind(FIELD(embedding_size)));
  add(Entry("deep_layers", {}, "units", "Hidden layer widths of the deep part (deepfm, wide_deep, dcn, dcn_v2, "
                                        "xdeepfm), e.g. 400,400,400", kAll)
          .int_list()
          .models({"deepfm", "wide_deep", "dcn", "dcn_v2", "xdeepfm"})
          .bind(FIELD(deep_layers)));
  add(Entry("cross_layers", {"num_cross_layers"}, "layers", "dcn, dcn_v2: cross layers", kAll)
          .models({"dcn", "dcn_v2"})
          .bind(FIELD(cross_layers)));
  add(Entry("low_rank", {}, "", "dcn_v2: rank of each cross layer's matrix (0 = full rank)", kAll)
          .models({"dcn_v2"})
          .bind(FIELD(low_rank)));
  add(Entry("num_experts", {}, "experts", "dcn_v2: low-rank experts per cross layer, mixed by a gate (needs "
                                         "--low-rank)", kAll)
          .models({"dcn_v2"})
          .bind(FIELD(num_experts)));
  add(Entry("model_structure", {}, "", "dcn, dcn_v2: parallel (cross and deep side by side) or stacked (deep over "
                                       "cross)", kAll)
          .models({"dcn", "dcn_v2"})
          .bind(FIELD(model_structure)));
  add(Entry("cin_layer_units", {}, "feature maps", "xdeepfm: feature maps of each CIN layer, e.g. 16,16,16", kAll)
          .int_list()
          .models({"xdeepfm"})
          .bind(FIELD(cin_layer_units)));
  add(Entry("num_dense_fields", {}, "fields", "The first N fields are numeric, numeric field i with the one id i "
                                             "(Criteo: 13, as ctrain convert writes them). dlrm: their values feed "
                                             "the bottom MLP; other models: their rows start with "
                                             "--numeric-embedding-initializer and each batch's ids are checked", kAll)
          .bind(FIELD(num_dense_fields)));
  add(Entry("bottom_mlp", {}, "units", "dlrm: hidden widths of the bottom MLP (a layer to K follows)", kAll)
          .int_list()
          .models({"dlrm"})
          .bind(FIELD(bottom_mlp)));
  add(Entry("top_mlp", {}, "units", "dlrm: hidden widths of the top MLP (a layer to 1 follows)", kAll)
          .int_list()
          .models({"dlrm"})
          .bind(FIELD(top_mlp)));
  add(Entry("embedding_initializer", {"embeddings_initializer"}, "",
            "How the tables' rows start: glorot_normal (the seed DeepFM's; its spread falls as --feature-size "
            "grows), normal:S (FuxiCTR's and DeepCTR's normal:1e-4), truncated_normal:S or uniform:L", kAll)
          .bind(FIELD(embedding_initializer)));
  add(Entry("numeric_embedding_initializer", {}, "",
            "The numeric fields' rows (ids 0..N-1, --num-dense-fields N) start so instead (same spellings; default: "
            "--embedding-initializer)", kAll)
          .models({"deepfm", "lr", "fm", "wide_deep", "dcn", "dcn_v2", "xdeepfm"})
          .bind(FIELD(numeric_embedding_initializer)));
  const std::vector<std::string> mlp_models = {"deepfm", "wide_deep", "dcn", "dcn_v2", "dlrm", "xdeepfm"};
  add(Entry("dropout", {}, "probability", "Drop probability of each hidden layer", kAll)
          .models(mlp_models)
          .bind(FIELD(dropout)));
  add(Entry("batch_norm", {}, "", "Batch normalisation after each hidden layer", kAll)
          .models(mlp_models)
          .bind(FIELD(batch_norm)));
  add(Entry("l2_reg", {}, "", "L2 on the embedding rows of each batch", kAll).bind(FIELD(l2_reg)));
  add(Entry("mixed_precision", {}, "", "GEMM precision: f32, or bf16 (bf16 operands, f32 accumulation and master "
                                      "weights; needs AVX512_BF16), or auto (bf16 where supported; with --autotune: "
                                      "the faster)", kAll)
          .bind(FIELD(mixed_precision)));
  // The optimisation.
  add(Entry("batch_size", {}, "examples", "Examples per step", kAll).bind(FIELD(train_options.batch_size)));
  add(Entry("epochs", {"num_epochs"}, "epochs", "Passes over the training data", kAll).bind(FIELD(train_options.epochs)));
  add(Entry("max_steps", {}, "steps", "Stop at this global step (0 = no limit)", kAll).bind(FIELD(train_options.max_steps)));
  add(Entry("learning_rate", {}, "", "Step size", kAll).bind(FIELD(learning_rate)));
  add(Entry("optimizer", {}, "", "adam|adagrad|sgd|momentum|ftrl", kAll).bind(FIELD(optimizer)));
  add(Entry("seed", {}, "", "Seed of shuffling and initialisation", kAll).bind(FIELD(train_options.seed)));
  add(Entry("dropout_seed", {}, "", "Seed of the dropout masks", kAll).bind(FIELD(train_options.model.seed)));
  add(Entry("shuffle", {}, "", "Shuffle every epoch", kAll).bind(FIELD(train_options.shuffle)));
  // Checkpoints and outputs.
  add(Entry("model_dir", {}, "path", "Checkpoint directory (resumes from it)", kAll)
          .launch("the checkpoint directory (/opt/ml/checkpoints, or ctrain launch --checkpoint-dir)")
          .bind(FIELD(train_options.model_dir)));
  add(Entry("save_checkpoints_steps", {}, "steps", "Also checkpoint every N steps (0 = only at the end)", kAll)
          .bind(FIELD(train_options.save_checkpoints_steps)));
  add(Entry("keep_checkpoints", {}, "checkpoints", "Checkpoints kept", kNotPs)
          .why("each parameter server keeps its own shard checkpoints: ctrain ps --keep-checkpoints")
          .bind(FIELD(train_options.keep_checkpoints)));
  add(Entry("eval_every_steps", {}, "steps", "Also evaluate on --valid every N steps (0 = epoch ends only)", kAll)
          .bind(FIELD(train_options.eval_every_steps)));
  add(Entry("monitor_dir", {}, "path", "Sample this process (CPU, RSS, GPU via NVML) and the training steps into "
                                      "TensorBoard event files and metrics.jsonl here (docs/launch.md#monitoring)", kAll)
          .launch("output/data/monitor/<host>/<role>")
          .bind(FIELD(monitor_dir)));
  add(Entry("monitor_interval_ms", {}, "ms", "Sampling interval of --monitor-dir", kAll)
          .launch("ctrain launch --monitor-interval-ms")
          .bind(FIELD(monitor_interval_ms)));
  add(Entry("metrics_json", {}, "path", "Write final auc, logloss, examples_per_sec, examples, steps, epochs as JSON",
            kAll)
          .launch("output/data/metrics.json")
          .bind(FIELD(metrics_json)));
  add(Entry("progress", {}, "", "auto|bar|log|none", kAll).bind(FIELD(progress)));
  // The input pipeline (--input-mode stream).
  add(Entry("input_mode", {}, "", "stream (through the input pipeline) or memory (load everything first); auto = "
                                  "stream for --train, memory for the built-in synthetic data and --ps", kAll)
          .bind(FIELD(input_mode)));
  add(Entry("num_parallel_reads", {}, "files", "Files read concurrently", kService).why(memory_why)
          .bind(FIELD(pipeline.num_parallel_reads)));
  add(Entry("num_parallel_calls", {}, "threads", "Parse threads (each parses a whole batch)", kPipeline)
          .why("memory mode parses every row first; the data service's workers parse with their own threads "
               "(ctrain data-service worker --threads)")
          .bind(FIELD(pipeline.num_parallel_calls)));
  add(Entry("shuffle_buffer_size", {}, "records", "Records in the shuffle buffer (0 = no shuffling)", kService)
          .why(memory_why)
          .bind(FIELD(pipeline.shuffle_buffer_size)));
  add(Entry("reshuffle_each_iteration", {}, "", "A new shuffle order every epoch", kService).why(memory_why)
          .bind(FIELD(pipeline.reshuffle_each_iteration)));
  add(Entry("prefetch_buffer_size", {"prefetch"}, "batches", "Batches prepared ahead of the trainer (0 = none)",
            kPipeline)
          .why("the data service's client buffers by bytes: --data-service-buffer-bytes")
          .bind(FIELD(pipeline.prefetch_buffer_size)));
  add(Entry("cache", {}, "", "Cache the first epoch: memory or a file path (later epochs replay it)", kPipeline)
          .why("data-service workers stream each split once")
          .bind(FIELD(pipeline.cache)));
  add(Entry("cache_max_bytes", {}, "bytes", "Memory cache limit", kPipeline)
          .why("data-service workers stream each split once")
          .bind(FIELD(pipeline.cache_max_bytes)));
  add(Entry("num_shards", {}, "shards", "Shards of the input (default: OMPI_COMM_WORLD_SIZE or 1)", kPipeline)
          .why("the data service splits the input itself (--num-splits, --processing-mode)")
          .bind(FIELD(pipeline.num_shards)));
  add(Entry("shard_index", {}, "", "This process's shard (default: OMPI_COMM_WORLD_RANK or 0)", kPipeline)
          .why("the data service splits the input itself (--num-splits, --processing-mode)")
          .bind(FIELD(pipeline.shard_index)));
  add(Entry("drop_remainder", {}, "", "Drop the last partial batch of each epoch", kPipeline)
          .why("the data service batches each split on its workers: there is no one last batch of the epoch to drop")
          .bind(FIELD(pipeline.drop_remainder)));
  // The data service's client (docs/data-service.md).
  add(Entry("data_service", {}, "HOST:PORT", "Read the training data through the data service whose dispatcher is "
                                           "HOST:PORT", kService)
          .why("--data-service streams --train (not --input-mode memory)")
          .launch("the data_group's first host")
          .bind(FIELD(data_service.address)));
  add(Entry("processing_mode", {}, "", "distributed_epoch (each example once per epoch across workers) or "
                                      "parallel_epochs (each worker the whole dataset)", kService)
          .needs(static_cast<ModeSet>(M::kDataService))
          .bind(FIELD(data_service.processing_mode)));
  add(Entry("job_name", {}, "", "Data-service job to join or create (default: job-<dataset fingerprint>-<mode>); "
                               "trainers sharing it split each epoch, a restarted trainer resumes it", kService)
          .needs(static_cast<ModeSet>(M::kDataService))
          .bind(FIELD(data_service.job_name)));
  add(Entry("num_splits", {}, "splits", "distributed_epoch: splits per epoch", kService)
          .needs(static_cast<ModeSet>(M::kDataService))
          .bind(FIELD(data_service.num_splits)));
  {
    Entry e("consumer_index", {}, "", "This trainer's index within the job (default: the MPI rank under mpirun, "
                                      "else 0)", kService);
    e.needs(static_cast<ModeSet>(M::kDataService));
    OptionSpec s = e.bind(FIELD(data_service.consumer_index));
    s.set = [set = s.set](J& o, const json& v) {  // given: mpirun keeps it instead of the rank
      o.data_service.consumer_index_given = true;
      return set(o, v);
    };
    add(std::move(s));
  }
  add(Entry("data_service_compression", {}, "", "Batch compression on the wire: none, zstd, or auto (zstd unless the "
                                               "worker is on loopback)", kService)
          .needs(static_cast<ModeSet>(M::kDataService))
          .bind(FIELD(data_service.compression)));
  add(Entry("data_service_buffer_bytes", {}, "bytes", "Bytes of received batches buffered ahead of the trainer",
            kService)
          .needs(static_cast<ModeSet>(M::kDataService))
          .bind(FIELD(data_service.buffer_bytes)));
  add(Entry("data_service_max_open_splits", {}, "splits", "Splits streamed at once", kService)
          .needs(static_cast<ModeSet>(M::kDataService))
          .bind(FIELD(data_service.max_open_splits)));
  add(Entry("data_service_wait_seconds", {}, "seconds", "The longest wait for the dispatcher, a live worker or the "
                                                        "next batch before failing (0 = no limit)", kService)
          .needs(static_cast<ModeSet>(M::kDataService))
          .bind(FIELD(data_service.wait_seconds)));
  const ModeSet remote = M::kDataService | kPs;
  add(Entry("token_file", {}, "path", "File holding the service token (default: $CTRAIN_SERVICE_TOKEN; none = no "
                                     "authentication)", kAll)
          .needs(remote)
          .bind(FIELD(data_service.security.token_file)));
  add(Entry("tls_cert", {}, "path", "TLS: this client's certificate chain (PEM), for servers that require one", kAll)
          .needs(remote)
          .bind(FIELD(data_service.security.tls_cert)));
  add(Entry("tls_key", {}, "path", "TLS: the private key of --tls-cert (PEM)", kAll)
          .needs(remote)
          .bind(FIELD(data_service.security.tls_key)));
  add(Entry("training_job_name", {}, "", "The training job this trainer belongs to, sent on every call to the data "
                                         "service or the parameter servers: a server of another job refuses it "
                                         "(\"\" = none)", kAll)
          .needs(remote)
          .launch("TRAINING_JOB_NAME, or a fingerprint of the job's contract")
          .bind(FIELD(data_service.security.training_job_name)));
  add(Entry("tls_ca", {}, "path", "TLS: CA certificates (PEM) to verify the servers this process calls", kAll)
          .needs(remote)
          .bind(FIELD(data_service.security.tls_ca)));
  // Parameter servers (docs/parameter-servers.md).
  // A parameter-server worker: memory mode, one process (no replicas, no mpirun).
  const ModeSet ps_worker = M::kLocalMemory | kPs;
  add(Entry("ps", {}, "HOST:PORT,...", "Train as one worker of a parameter-server job: the servers' addresses in "
                                     "shard order", ps_worker)
          .why("a parameter-server worker reads its data in memory, alone (not under mpirun)")
          .comma()
          .bind(FIELD(ps.addresses)));
  add(Entry("worker_index", {}, "", "--ps: this worker (0 = the chief)", ps_worker)
          .needs(kPs)
          .bind(FIELD(ps.worker_index)));
  add(Entry("num_workers", {}, "workers", "--ps: workers in the job", ps_worker)
          .needs(kPs)
          .bind(FIELD(ps.num_workers)));
  add(Entry("sync_replicas", {}, "", "--ps: synchronous rounds over all workers (TF's SyncReplicasOptimizer); default "
                                    "asynchronous", ps_worker)
          .needs(kPs)
          .switch_()
          .bind(FIELD(ps.sync_replicas)));
  add(Entry("max_staleness", {}, "updates", "--ps, async: servers drop gradients computed on parameters more than N "
                                           "updates old (0 = keep all)", ps_worker)
          .needs(static_cast<ModeSet>(M::kPsAsync))
          .why("synchronous rounds have no stale gradients")
          .bind(FIELD(ps.max_staleness)));
  add(Entry("ps_wait_seconds", {}, "seconds", "--ps: how long an unavailable parameter server is waited for", ps_worker)
          .needs(kPs)
          .bind(FIELD(ps.wait_seconds)));
  add(Entry("ps_max_message_bytes", {}, "bytes", "--ps: the largest message to a parameter server (the smaller of "
                                               "this and each server's --max-message-bytes is used); larger pulls "
                                               "and pushes travel in chunks", ps_worker)
          .why("an option of parameter-server workers: give --ps")
          .needs(kPs)
          .bind(FIELD(ps.max_message_bytes)));
  add(Entry("ps_dense", {}, "", "--ps: where the dense parameters and their optimizer live: servers (pulled and "
                                "pushed every step), workers (kept by each worker; with several, averaged through "
                                "the servers every --ps-dense-sync-steps steps) or auto (workers with one worker, "
                                "servers with more)", ps_worker)
          .needs(kPs)
          .bind(FIELD(ps.dense)));
  add(Entry("ps_dense_sync_steps", {}, "steps", "--ps-dense workers with several workers: steps between the "
                                                "averagings of the dense parameters (a worker's are at most this "
                                                "many of its steps from the servers' copy)", ps_worker)
          .needs(kPs)
          .bind(FIELD(ps.dense_sync_steps)));
  add(Entry("ps_export_dir", {}, "dir", "--ps, the chief: after training, write the whole model (every row, dense "
                                        "parameter and optimizer slot, from the servers) to DIR as one local "
                                        "checkpoint, for ctrain predict/eval/export", ps_worker)
          .why("an option of parameter-server workers: give --ps")
          .needs(kPs)
          .bind(FIELD(ps.export_dir)));
  // Threads and replicas (docs/training.md#parallelism).
  const std::string towers_or_hogwild =
      "--towers and --hogwild are two ways to run replicas in one process: towers split each batch and step "
      "together (deterministic), hogwild replicas take their own batches and update the tables without locks; "
      "give one of them";
  add(Entry("intra_op_parallelism_threads", {"intra_op_threads"}, "threads",
            "OpenMP threads per replica (0 = cores / replicas)", kAll)
          .bind(FIELD(parallel.intra_op_threads)));
  add(Entry("inter_op_parallelism_threads", {"inter_op_threads"}, "threads",
            "Threads preparing batches ahead of compute (0 = inline)", kAll)
          .bind(FIELD(parallel.inter_op_threads)));
  add(Entry("towers", {}, "replicas", "Synchronous replicas splitting each batch (deterministic)",
            AllModesBut(kPs | M::kHogwild))
          .why(ps_why)
          .why_in(M::kHogwild, towers_or_hogwild)
          .bind(FIELD(parallel.towers)));
  add(Entry("hogwild", {}, "replicas", "Asynchronous lock-free replicas (0 = off; not deterministic)",
            AllModesBut(kPs | M::kTowers | M::kMpirun))
          .why("hogwild replicas race on one process's tables")
          .why_in(M::kTowers, towers_or_hogwild)
          .bind(FIELD(parallel.hogwild)));
  add(Entry("affinity", {}, "", "Pin replica and OpenMP threads to cores", kAll).bind(FIELD(parallel.affinity)));
  add(Entry("autotune", {}, "", "Measure the thread layouts (with --mixed-precision auto: also bf16) for a few steps "
                               "and train with the fastest; thread options given explicitly are kept",
            kLocalLayouts)
          .why("autotune measures local thread layouts on local rows, on cores no other rank shares; give "
               "--intra-op-parallelism-threads")
          .switch_()
          .bind(FIELD(autotune)));
  add(Entry("deterministic", {}, "", "Refuse settings whose results differ from run to run (hogwild); --autotune "
                                    "then measures only deterministic layouts",
            AllModesBut(static_cast<ModeSet>(M::kHogwild)))
          .why("hogwild replicas race on the embedding tables: use --towers for deterministic replicas")
          .bind(FIELD(parallel.deterministic)));
  add(Entry("autotune_steps", {}, "steps", "Timed steps per autotune candidate", kLocalLayouts)
          .why("autotune measures local thread layouts on local rows, on cores no other rank shares")
          .bind(FIELD(autotune_steps)));
  // mpirun (docs/distributed.md).
  add(Entry("lr_scaling", {}, "", "Under mpirun: scale --learning-rate with the N ranks: none, linear (x N) or sqrt "
                                 "(x sqrt N)", kAll)
          .needs(static_cast<ModeSet>(M::kMpirun))
          .bind(FIELD(lr_scaling)));
  add(Entry("stall_warning_secs", {}, "seconds", "Under mpirun: name the ranks a collective has waited for this long "
                                                "(0 = never)", kAll)
          .needs(static_cast<ModeSet>(M::kMpirun))
          .bind(FIELD(stall_warning_secs)));
  add(Entry("stall_shutdown_secs", {}, "seconds", "Under mpirun: abort the job when a collective waited this long (0 "
                                                 "= never)", kAll)
          .needs(static_cast<ModeSet>(M::kMpirun))
          .bind(FIELD(stall_shutdown_secs)));
  add(Entry("check_replicas_every", {}, "steps", "Under mpirun: compare parameter hashes across ranks every K steps "
                                                "(0 = never; debug)", kAll)
          .needs(static_cast<ModeSet>(M::kMpirun))
          .bind(FIELD(check_replicas_every)));
  // The learning-rate schedule (optim/lr_schedule.h).
  const std::string sync_why = "a schedule needs synchronous steps";
  add(Entry("lr_warmup_steps", {}, "steps", "Ramp the learning rate linearly to lr over this many steps, from 0 "
                                           "(under mpirun from lr / N, Horovod's warmup; 0 = none)", kSync)
          .why(sync_why)
          .bind(FIELD(lr_warmup_steps)));
  add(Entry("lr_decay", {"lr_schedule"}, "", "Learning-rate decay after the warm-up: none, exponential, cosine or "
                                             "plateau (reduce on a validation plateau, --lr-plateau-*)", kSync)
          .why(sync_why)
          .bind(FIELD(lr_decay)));
  add(Entry("lr_decay_steps", {}, "steps", "exponential: steps per factor --lr-decay-rate; cosine: steps to reach "
                                          "--lr-decay-alpha * lr", kSync)
          .why(sync_why)
          .bind(FIELD(train_options.lr_decay_steps)));
  add(Entry("lr_decay_rate", {}, "", "exponential: factor per --lr-decay-steps", kSync).why(sync_why)
          .bind(FIELD(train_options.lr_decay_rate)));
  add(Entry("lr_decay_staircase", {}, "", "exponential: decay in whole periods of --lr-decay-steps", kSync)
          .why(sync_why)
          .switch_()
          .bind(FIELD(train_options.lr_decay_staircase)));
  add(Entry("lr_decay_alpha", {}, "", "cosine: the final rate as a fraction of lr", kSync).why(sync_why)
          .bind(FIELD(train_options.lr_decay_alpha)));
  // --lr-decay plateau (optim/lr_plateau.h: PyTorch's ReduceLROnPlateau, threshold_mode abs). Parameter servers
  // with more than one worker refuse it (the chief alone validates: train/trainer.cc CheckRemoteOptions).
  add(Entry("lr_plateau_metric", {}, "", "plateau: the validation metric watched (auc, gauc, pr_auc: higher is "
                                        "better; logloss, normalized_entropy: lower; default: "
                                        "--early-stopping-metric if set, else logloss)", kSync)
          .why(sync_why)
          .bind(FIELD(train_options.lr_plateau_metric)));
  add(Entry("lr_plateau_factor", {}, "", "plateau: multiply the learning rate by this at a plateau, in (0, 1)", kSync)
          .why(sync_why)
          .bind(FIELD(train_options.lr_plateau_factor)));
  add(Entry("lr_plateau_patience", {}, "evaluations", "plateau: evaluations without improvement tolerated; the "
                                                     "rate drops at the next one (0 = at the first)", kSync)
          .why(sync_why)
          .bind(FIELD(train_options.lr_plateau_patience)));
  add(Entry("lr_plateau_cooldown", {}, "evaluations", "plateau: evaluations after a drop that do not count", kSync)
          .why(sync_why)
          .bind(FIELD(train_options.lr_plateau_cooldown)));
  add(Entry("lr_plateau_min_lr", {}, "", "plateau: the learning rate never drops below this", kSync)
          .why(sync_why)
          .bind(FIELD(train_options.lr_plateau_min_lr)));
  add(Entry("lr_plateau_min_delta", {}, "", "plateau: the least absolute change of the metric that counts as an "
                                           "improvement", kSync)
          .why(sync_why)
          .bind(FIELD(train_options.lr_plateau_min_delta)));
  // Warm start, early stopping, best checkpoint, metrics.
  add(Entry("warm_start_from", {}, "path", "Start a new run from the parameters of this model dir's latest "
                                          "checkpoint (incremental training; may be --model-dir itself)", kNotPs)
          .why(ps_why)
          .bind(FIELD(train_options.warm_start_from)));
  add(Entry("warm_start_optimizer", {}, "", "With --warm-start-from: also take the optimizer slots (the same "
                                           "--optimizer)", kNotPs)
          .why(ps_why)
          .switch_()
          .bind(FIELD(train_options.warm_start_optimizer)));
  add(Entry("force", {}, "", "Train even when --model-dir already holds a finished run on the same inputs and "
                           "settings (without it such a rerun prints \"nothing to do\" and exits 0)", kNotPs)
          .why("the parameter servers keep the checkpoint; a worker cannot tell a finished job from a new one "
               "(restart the servers from the checkpoint, or start them with `ctrain ps --force` to train afresh)")
          .switch_()
          .bind(FIELD(force)));
  // Early stopping: every rank must stop at the same step, and under mpirun rank 0 alone validates.
  const ModeSet stopping = AllModesBut(static_cast<ModeSet>(M::kMpirun));
  const std::string stopping_why = "rank 0 alone validates, so the other ranks could not stop at its step (--keep-best works)";
  add(Entry("early_stopping_metric", {}, "", "Stop when this validation metric stops improving: auc, gauc, pr_auc, "
                                            "logloss, normalized_entropy", stopping)
          .why(stopping_why)
          .bind(FIELD(train_options.early_stopping_metric)));
  add(Entry("early_stopping_patience", {}, "evaluations", "Evaluations without improvement before stopping", stopping)
          .why(stopping_why)
          .bind(FIELD(train_options.early_stopping_patience)));
  add(Entry("early_stopping_min_delta", {}, "", "The least change that counts as an improvement", stopping)
          .why(stopping_why)
          .bind(FIELD(train_options.early_stopping_min_delta)));
  add(Entry("keep_best", {}, "", "Also save the checkpoint with the best validation metric to --model-dir/best",
            kNotPs)
          .why(ps_why)
          .switch_()
          .bind(FIELD(train_options.keep_best)));
  add(Entry("gauc_field", {}, "field", "GAUC: group validation examples by their id in this field (0-based, e.g. the "
                                      "user id; -1 = none)", kAll)
          .bind(FIELD(train_options.group_field)));
  add(Entry("negative_downsampling", {}, "rate", "The training (and --valid) data kept negatives at this rate: "
                                                "predictions and validation metrics are corrected; recorded in "
                                                "checkpoints", kAll)
          .bind(FIELD(train_options.negative_downsampling_rate)));
  // Keyed embeddings (train/key_index.h, docs/training.md#keyed-embeddings).
  const std::string keyed_why = "the parameter servers hold positional shards (keys partitioned by hash across "
                                "servers are not built yet); train keyed tables locally, under mpirun or with the "
                                "data service";
  add(Entry("embedding_table", {}, "", "fixed (rows [0, --feature-size), ids are rows) | keyed (ids are 64-bit keys, "
                                      "rows made on admission and evicted at checkpoints)", kKeyed)
          .why(keyed_why)
          .bind(FIELD(train_options.table.embedding_table)));
  add(Entry("max_rows", {}, "rows", "Keyed table: live rows kept after each eviction (least recently seen go "
                                    "first); 0 = 16777216", kKeyed)
          .why(keyed_why)
          .bind(FIELD(train_options.table.max_rows)));
  add(Entry("min_count", {}, "sightings", "Keyed table: a key gets a row at its Nth sighting in training (before: "
                                          "the shared zero row, counted as filtered)", kKeyed)
          .why(keyed_why)
          .bind(FIELD(train_options.table.min_count)));
  add(Entry("admission", {}, "", "Keyed table: how --min-count counts: exact (a counter per pending key) | bloom (a "
                                 "counting Bloom filter of --bloom-counters bytes)", kKeyed)
          .why(keyed_why)
          .bind(FIELD(train_options.table.admission)));
  add(Entry("bloom_counters", {}, "counters", "Keyed table, --admission bloom: the filter's 8-bit counters", kKeyed)
          .why(keyed_why)
          .bind(FIELD(train_options.table.bloom_counters)));
  add(Entry("steps_to_live", {}, "steps", "Keyed table: at each checkpoint, evict rows not seen for more than this "
                                          "many steps (0 = never)", kKeyed)
          .why(keyed_why)
          .bind(FIELD(train_options.table.steps_to_live)));
  add(Entry("l2_weight_threshold", {}, "", "Keyed table: at each checkpoint, evict rows whose embedding's L2 norm is "
                                          "below this (0 = never)", kKeyed)
          .why(keyed_why)
          .bind(FIELD(train_options.table.l2_weight_threshold)));
  add(Entry("incremental_checkpoints", {}, "checkpoints", "Keyed table: after each full checkpoint, this many "
                                                          "incremental ones (only the rows changed and the keys "
                                                          "evicted since it); 0 = every checkpoint full", kKeyed)
          .why(keyed_why)
          .bind(FIELD(train_options.incremental_checkpoints)));
  // The options every rank of one mpirun job must agree on (OptionSpec::same_on_every_rank).
  for (const char* name :
       {"format", "field_size", "id_base", "feature_size", "embedding_size", "deep_layers", "dropout", "batch_norm",
        "l2_reg", "mixed_precision", "batch_size", "epochs", "max_steps", "learning_rate", "optimizer", "input_mode",
        "drop_remainder", "data_service", "processing_mode", "job_name", "num_splits", "lr_scaling",
        "check_replicas_every", "lr_warmup_steps", "lr_decay", "lr_decay_steps", "lr_decay_rate",
        "lr_decay_staircase", "lr_decay_alpha", "negative_downsampling", "model", "cross_layers", "low_rank",
        "num_experts", "model_structure", "cin_layer_units", "num_dense_fields", "bottom_mlp", "top_mlp",
        "embedding_initializer", "numeric_embedding_initializer", "oov", "embedding_table", "max_rows", "min_count",
        "admission", "bloom_counters", "steps_to_live", "l2_weight_threshold"}) {
    auto it = std::find_if(t.begin(), t.end(), [&](const OptionSpec& s) { return s.name == name; });
    if (it != t.end()) it->same_on_every_rank = it->defines_result = true;  // all 49 are in the table
  }                                                                          // (tests/job/train_job_test.cc)
  // And the per-rank options that still decide the trained model (OptionSpec::defines_result).
  for (const char* name :
       {"seed", "dropout_seed", "shuffle", "warm_start_from", "warm_start_optimizer", "early_stopping_metric",
        "early_stopping_patience", "early_stopping_min_delta", "lr_plateau_metric", "lr_plateau_factor",
        "lr_plateau_patience", "lr_plateau_cooldown", "lr_plateau_min_lr", "lr_plateau_min_delta", "gauc_field"}) {
    auto it = std::find_if(t.begin(), t.end(), [&](const OptionSpec& s) { return s.name == name; });
    if (it != t.end()) it->defines_result = true;
  }
  return t;
}

#undef FIELD

}  // namespace

const std::vector<OptionSpec>& TrainOptionSchema() {
  static const std::vector<OptionSpec>* schema = new std::vector<OptionSpec>(Build());
  return *schema;
}

}  // namespace ctrain::job
