// The trainer's keyed embedding tables (train/key_index.h,
// docs/training.md#keyed-embeddings): the tables over the index's rows, key
// translation of each batch, eviction at checkpoints, and their checkpoint
// tensors (docs/checkpoint.md#keyed-tables).
#include <cmath>
#include <cstring>
#include <filesystem>

#include "ctrain/train/keyed_checkpoint.h"
#include "ctrain/train/trainer_impl.h"

namespace ctrain::train {
namespace {

constexpr char kKeys[] = "embeddings/keys";
constexpr char kKeyRows[] = "embeddings/key_rows";
constexpr char kLastStep[] = "embeddings/key_last_step";
constexpr char kPendingKeys[] = "embeddings/pending_keys";
constexpr char kPendingCounts[] = "embeddings/pending_counts";
constexpr char kBloom[] = "embeddings/bloom";

// The i64 tensor `name` of `ck` (a missing optional one reads empty).
StatusOr<std::vector<int64_t>> I64Tensor(const Checkpoint& ck, const char* name, bool required) {
  if (const std::vector<int64_t>* v = FindI64Tensor(ck, name)) return *v;
  if (ck.Find(name) != nullptr)
    return InvalidArgumentError(ck.path + ": tensor '" + std::string(name) + "' is not a 1-D int64 tensor");
  if (!required) return std::vector<int64_t>();
  return NotFoundError(ck.path + ": no tensor '" + std::string(name) +
                       "': not a keyed-table checkpoint (trained with --embedding-table fixed?)");
}

}  // namespace

Status Trainer::Impl::InitKeyedTables(optim::OptimizerConfig cfg, const LocalTableOptions& to_in) {
  const int64_t D = keyed_first_field();
  const int32_t K = options.model.embedding_size;
  CTRAIN_ASSIGN_OR_RETURN(const model::EmbeddingInit init, model::EmbeddingInitOf(options.model));
  // glorot_normal's n is the table's rows: here the live-row bound.
  const int64_t glorot_rows = options.table.live_bound();
  model::EmbeddingInit key_init = init;
  key_init.numeric_rows = 0;
  key_init_seed = options.seed;
  CTRAIN_ASSIGN_OR_RETURN(
      keys, KeyIndex::Create(options.table, D, [this, K, glorot_rows, key_init](int64_t row, int64_t key) {
        thread_local std::vector<float> v;
        v.resize(static_cast<size_t>(K));
        float w = 0;
        model::InitEmbeddingRows(key_init_seed, glorot_rows, K, key, 1, &w, v.data(), key_init);
        w_table->ResetRow(row, &w);
        v_table->ResetRow(row, v.data());
      }));
  LocalTableOptions to = to_in;
  to.lazy = true;
  const int64_t rows = keys->capacity();
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<optim::Optimizer> wopt, optim::MakeOptimizer(cfg));
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<optim::Optimizer> vopt, optim::MakeOptimizer(cfg));
  CTRAIN_ASSIGN_OR_RETURN(w_table, LocalParameterTable::Create("embeddings/w", rows, 1, std::move(wopt), to));
  CTRAIN_ASSIGN_OR_RETURN(v_table, LocalParameterTable::Create("embeddings/V", rows, K, std::move(vopt), to));
  // The numeric fields' rows [0, D) start as in a positional table of live_bound rows; the default row D stays zero.
  std::vector<float> w(static_cast<size_t>(D)), v(static_cast<size_t>(D * K));
  model::InitEmbeddingRows(options.seed, glorot_rows, K, 0, D, w.data(), v.data(), init);
  for (int64_t r = 0; r < D; ++r) {
    w_table->ResetRow(r, &w[r]);
    v_table->ResetRow(r, &v[r * K]);
  }
  w_table->ResetRow(D, nullptr);
  v_table->ResetRow(D, nullptr);
  return Status::OK();
}

Status Trainer::Impl::CheckKeyedBatch(const data::Batch& b) {
  if (b.multi_hot() || b.variable_length())
    return InvalidArgumentError("--embedding-table keyed: this batch is multi-hot or variable-length (a feature "
                                "spec's multi-hot fields); keyed tables take one id per field so far");
  return Status::OK();
}

Status Trainer::Impl::TranslateKeys(data::Batch& b, bool train, int64_t step) {
  CTRAIN_RETURN_IF_ERROR(CheckKeyedBatch(b));
  keys->Translate(b.ids, b.field_size, keyed_first_field(), train, step);
  return Status::OK();
}

int64_t Trainer::Impl::EvictKeys() {
  const int32_t K = v_table->dim();
  const std::vector<int64_t> freed = keys->Evict(pos.global_step, [this, K](int64_t row) {
    const float* v = v_table->data() + row * K;
    double s = 0;
    for (int32_t k = 0; k < K; ++k) s += static_cast<double>(v[k]) * v[k];
    return std::sqrt(s);
  });
  for (int64_t r : freed) {
    w_table->ResetRow(r, nullptr);
    v_table->ResetRow(r, nullptr);
  }
  if (!freed.empty())
    Log("ctrain: keyed table at step " + std::to_string(pos.global_step) + ": evicted " +
        std::to_string(freed.size()) + " rows; " + keys->counters().Summary());
  return static_cast<int64_t>(freed.size());
}

void Trainer::Impl::AddKeyedTensors(CheckpointTensors* t, bool delta) {
  KeyedSave& s = keyed_save;
  s.snap = keys->Snapshot(/*changed_only=*/delta);
  const int64_t D = keyed_first_field(), n = static_cast<int64_t>(s.snap.keys.size());
  const int32_t K = v_table->dim();
  // Rows: the numeric rows [0, D), then keys[i]'s row at D + i, written from the tables as they are
  // (TensorRef::rows: no copy of the table).
  s.rows.resize(static_cast<size_t>(D + n));
  for (int64_t r = 0; r < D; ++r) s.rows[r] = r;
  std::copy(s.snap.rows.begin(), s.snap.rows.end(), s.rows.begin() + D);
  auto rows = [&](const std::string& name, int32_t dim, const float* table) {
    TensorRef ref = TensorRef::F32(name, dim == 1 ? std::vector<int64_t>{D + n} : std::vector<int64_t>{D + n, dim},
                                   table);
    ref.rows = &s.rows;
    t->i64.push_back(std::move(ref));
  };
  rows(w_table->name(), 1, w_table->data());
  rows(v_table->name(), K, v_table->data());
  for (int k = 0; k < w_table->num_slots(); ++k) {
    const std::string slot(w_table->optimizer().SlotName(k));
    rows(w_table->name() + "/" + slot, 1, w_table->slot(k));
    rows(v_table->name() + "/" + slot, K, v_table->slot(k));
  }
  auto i64 = [t](const char* name, const std::vector<int64_t>& v) {
    t->i64.push_back(TensorRef::I64(name, {static_cast<int64_t>(v.size())}, v.data()));
  };
  i64(kKeys, s.snap.keys);
  i64(kKeyRows, s.snap.rows);
  i64(kLastStep, s.snap.last_step);
  i64(kPendingKeys, s.snap.pending_keys);
  i64(kPendingCounts, s.snap.pending_counts);
  i64(kBloom, s.snap.bloom);
  if (delta) i64(kEvictedKeysTensor, s.snap.evicted_keys);
}

Status Trainer::Impl::RestoreKeyed(const Checkpoint& ck, bool slots, bool warm) {
  KeyIndexSnapshot s;
  CTRAIN_ASSIGN_OR_RETURN(s.keys, I64Tensor(ck, kKeys, true));
  CTRAIN_ASSIGN_OR_RETURN(s.rows, I64Tensor(ck, kKeyRows, true));
  CTRAIN_ASSIGN_OR_RETURN(s.last_step, I64Tensor(ck, kLastStep, true));
  CTRAIN_ASSIGN_OR_RETURN(s.pending_keys, I64Tensor(ck, kPendingKeys, false));
  CTRAIN_ASSIGN_OR_RETURN(s.pending_counts, I64Tensor(ck, kPendingCounts, false));
  CTRAIN_ASSIGN_OR_RETURN(s.bloom, I64Tensor(ck, kBloom, false));
  const int64_t D = keyed_first_field(), n = static_cast<int64_t>(s.keys.size());
  const int32_t K = v_table->dim();
  if (warm) {
    // A new run: rows renumbered from the first keyed row (any --max-rows that holds them), counters from zero.
    if (n > keys->capacity() - D - 1)
      return FailedPreconditionError(ck.path + ": warm start: the checkpoint holds " + std::to_string(n) +
                                     " keyed rows, more than this run's table can hold (" +
                                     std::to_string(keys->capacity() - D - 1) + "): raise --max-rows");
    for (int64_t i = 0; i < n; ++i) s.rows[i] = D + 1 + i;
    const KeyedTableOptions& o = keys->options();
    const size_t words = o.admission == "bloom" && o.min_count > 1 ? static_cast<size_t>((o.bloom_counters + 7) / 8) : 0;
    if (s.bloom.size() != words) s.bloom.assign(words, 0);  // another filter: counting starts afresh
    if (keys->options().admission != "exact" || keys->options().min_count <= 1) {
      s.pending_keys.clear();
      s.pending_counts.clear();
    }
  } else {
    s.counters = KeyCounters::FromJson(ck.meta.value("keyed_table", nlohmann::json()));
  }
  // The rows' tensors, checked before anything changes.
  std::vector<std::pair<std::string, int32_t>> names = {{w_table->name(), 1}, {v_table->name(), K}};
  if (slots)
    for (int k = 0; k < w_table->num_slots(); ++k) {
      const std::string slot(w_table->optimizer().SlotName(k));
      names.emplace_back(w_table->name() + "/" + slot, 1);
      names.emplace_back(v_table->name() + "/" + slot, K);
    }
  std::vector<const NamedTensor*> src;
  for (const auto& [name, dim] : names) {
    const NamedTensor* x = ck.Find(name);
    if (x == nullptr) return NotFoundError(ck.path + ": no tensor '" + name + "'");
    const std::vector<int64_t> want = dim == 1 ? std::vector<int64_t>{D + n} : std::vector<int64_t>{D + n, K};
    if (x->dtype != DType::kF32 || x->shape != want)
      return InvalidArgumentError(ck.path + ": tensor '" + name + "' has " + std::to_string(x->f32.size()) +
                                  " float values, the keyed table expects " + std::to_string((D + n) * dim) + " (" +
                                  std::to_string(D) + " numeric rows + " + std::to_string(n) + " keys)");
    src.push_back(x);
  }
  CTRAIN_RETURN_IF_ERROR(keys->Restore(s).WithContext(ck.path));
  // The incremental chain this model dir continues (a warm start begins its own with a full checkpoint).
  keyed_base.clear();
  keyed_base_step = -1;
  deltas_since_full = 0;
  keyed_delta_step = -1;
  if (!warm && IsKeyedDelta(ck.meta)) {
    keyed_delta_step = ck.step;
    const nlohmann::json& kd = ck.meta["keyed_delta"];
    keyed_base = kd.value("base", "");
    keyed_base_step = kd.value("base_step", int64_t{-1});
    deltas_since_full = kd.value("index", 0);
    CTRAIN_ASSIGN_OR_RETURN(const std::vector<int64_t> changed, I64Tensor(ck, kDeltaKeysTensor, true));
    CTRAIN_ASSIGN_OR_RETURN(const std::vector<int64_t> evicted, I64Tensor(ck, kEvictedKeysTensor, true));
    keys->MarkChanged(changed, evicted);
  } else if (!warm) {
    keyed_base = std::filesystem::path(ck.path).filename().string();
    keyed_base_step = ck.step;
  }
  auto scatter = [&](const NamedTensor* x, int32_t dim, float* dst) {
    std::memcpy(dst, x->f32.data(), static_cast<size_t>(D * dim) * sizeof(float));
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(dst + s.rows[i] * dim, x->f32.data() + (D + i) * dim, static_cast<size_t>(dim) * sizeof(float));
  };
  for (int64_t r = 0; r < D; ++r) {  // fresh slots where they are not restored
    w_table->ResetRow(r, nullptr);
    v_table->ResetRow(r, nullptr);
  }
  for (int64_t i = 0; i < n; ++i) {
    w_table->ResetRow(s.rows[i], nullptr);
    v_table->ResetRow(s.rows[i], nullptr);
  }
  scatter(src[0], 1, w_table->data());
  scatter(src[1], K, v_table->data());
  for (size_t j = 2; j < src.size(); j += 2) {
    const int k = static_cast<int>((j - 2) / 2);
    scatter(src[j], 1, w_table->slot(k));
    scatter(src[j + 1], K, v_table->slot(k));
  }
  return Status::OK();
}

}  // namespace ctrain::train
