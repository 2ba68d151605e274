// Training as one of N mpirun ranks (docs/distributed.md): the fused
// allreduce of the dense gradients, the allgather of sparse rows, rank 0's
// state broadcast, the per-step vote and the replica hash check; with a keyed
// table, the per-step allgather of keys and the broadcast of rank 0's index.
#include "ctrain/base/log.h"
#include "ctrain/train/trainer_impl.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "ctrain/train/gradient_exchange.h"
#include "ctrain/train/rank_agreement.h"

namespace ctrain::train {

Status Trainer::Impl::ExchangeStep(int64_t step, int64_t n, model::SparseGrad* w, model::SparseGrad* v, std::vector<model::DenseParam>& dense, std::vector<model::DenseParam>& state, double* loss, int64_t* examples) {
  const std::string at = "step " + std::to_string(step);
  const float fn = static_cast<float>(n);
  size_t total = 2;
  for (const auto& d : dense) total += d.grad.size();
  for (const auto& s : state) total += s.value.size();
  fused.resize(total);
  size_t o = 0;
  for (const auto& d : dense)
    for (float g : d.grad) fused[o++] = g * fn;
  for (const auto& s : state)
    for (float x : s.value) fused[o++] = x * fn;
  fused[o++] = static_cast<float>(*loss) * fn;
  fused[o++] = fn;
  CTRAIN_RETURN_IF_ERROR(exch->AllreduceSum(fused, at + ": dense gradients"));
  const float all = fused[total - 1];
  o = 0;
  for (auto& d : dense)
    for (float& g : d.grad) g = fused[o++] / all;
  for (auto& s : state)
    for (float& x : s.value) x = fused[o++] / all;
  *loss = fused[o] / all;
  *examples = static_cast<int64_t>(std::llround(all));
  if (w->ids == v->ids && w->dim == 1 && !w->ids.empty()) {
    // The usual case (both tables touched on the same rows): one exchange of [w | V] rows.
    const int32_t K = v->dim;
    joint.dim = 1 + K;
    joint.ids = w->ids;
    joint.grad.resize(w->ids.size() * (1 + K));
    for (size_t i = 0; i < w->ids.size(); ++i) {
      joint.grad[i * (1 + K)] = w->grad[i];
      std::memcpy(&joint.grad[i * (1 + K) + 1], &v->grad[i * K], K * sizeof(float));
    }
    CTRAIN_RETURN_IF_ERROR(ExchangeSparse(n, all, &joint, at + ": sparse gradients (w and V rows)"));
    w->ids = joint.ids;
    v->ids = joint.ids;
    w->grad.resize(joint.ids.size());
    v->grad.resize(joint.ids.size() * K);
    for (size_t i = 0; i < joint.ids.size(); ++i) {
      w->grad[i] = joint.grad[i * (1 + K)];
      std::memcpy(&v->grad[i * K], &joint.grad[i * (1 + K) + 1], K * sizeof(float));
    }
    return Status::OK();
  }
  CTRAIN_RETURN_IF_ERROR(ExchangeSparse(n, all, w, at + ": sparse gradients " + std::string(w_table->name())));
  return ExchangeSparse(n, all, v, at + ": sparse gradients " + std::string(v_table->name()));
}

Status Trainer::Impl::ExchangeSparse(int64_t n, float all, model::SparseGrad* g, const std::string& what) {
  const int32_t dim = g->dim > 0 ? g->dim : 1;
  const float fn = static_cast<float>(n);
  packed.resize(g->grad.size());
  for (size_t i = 0; i < packed.size(); ++i) packed[i] = g->grad[i] * fn;
  CTRAIN_RETURN_IF_ERROR(
      exch->AllgatherRows(g->ids, packed, dim, &gathered_ids, &gathered_rows, &gathered_counts, what));
  g->dim = dim;
  g->ids = gathered_ids;
  std::sort(g->ids.begin(), g->ids.end());
  g->ids.erase(std::unique(g->ids.begin(), g->ids.end()), g->ids.end());
  g->grad.assign(g->ids.size() * dim, 0.0f);
  size_t at = 0;
  for (int64_t c : gathered_counts) {  // rank order: the same sums on every rank, every run
    size_t j = 0;
    for (int64_t i = 0; i < c; ++i, ++at) {
      while (g->ids[j] != gathered_ids[at]) ++j;
      const float* src = gathered_rows.data() + at * dim;
      float* dst = g->grad.data() + j * dim;
      for (int32_t k = 0; k < dim; ++k) dst[k] += src[k];
    }
  }
  for (float& x : g->grad) x /= all;
  return Status::OK();
}

Status Trainer::Impl::BroadcastState() {
  CheckpointTensors t = Tensors();
  // Before any broadcast: every rank's parameters have the same names and shapes (shared/cases/B42).
  nlohmann::ordered_json shapes = nlohmann::ordered_json::object();
  for (const auto& r : t.refs) shapes[r.name] = r.shape;
  CTRAIN_RETURN_IF_ERROR(CheckSameOnEveryRank(*exch, shapes, "the shapes of the parameters"));
  for (const auto& r : t.refs)
    CTRAIN_RETURN_IF_ERROR(exch->Broadcast(std::as_writable_bytes(std::span<float>(r.data, r.count)),
                                           "initial parameters: " + r.name));
  int64_t p[4] = {pos.global_step, pos.epoch, pos.batch_in_epoch, pos.examples};
  CTRAIN_RETURN_IF_ERROR(exch->Broadcast(std::as_writable_bytes(std::span<int64_t>(p, 4)), "initial position"));
  pos.global_step = p[0];
  pos.epoch = p[1];
  pos.batch_in_epoch = p[2];
  pos.examples = p[3];
  if (keys != nullptr) CTRAIN_RETURN_IF_ERROR(BroadcastKeyed());
  SyncReplicas();
  if (options.lr_plateau()) CTRAIN_RETURN_IF_ERROR(BroadcastPlateau());  // rank 0 restored it; the others start afresh
  return Status::OK();
}

Status Trainer::Impl::BroadcastKeyed() {
  // Rank 0 packs its keyed tensors as a checkpoint holds them (AddKeyedTensors): a JSON head naming each
  // tensor, then their bytes; the other ranks restore from that as from a checkpoint (RestoreKeyed).
  std::string bytes;
  if (exch->is_chief()) {
    CheckpointTensors t;
    AddKeyedTensors(&t);
    nlohmann::json head = {{"keyed_table", keys->counters().ToJson()},
                           {"seed", key_init_seed},
                           {"tensors", nlohmann::json::array()}};
    size_t body = 0;
    for (const TensorRef& r : t.i64) {
      head["tensors"].push_back({{"name", r.name}, {"dtype", static_cast<int>(r.dtype)}, {"shape", r.shape}});
      size_t n = DTypeSize(r.dtype);
      for (int64_t d : r.shape) n *= static_cast<size_t>(d);
      body += n;
    }
    const std::string h = head.dump();
    const uint64_t hn = h.size();
    bytes.reserve(sizeof hn + h.size() + body);  // one buffer: the tensors' bytes go straight in
    bytes.append(reinterpret_cast<const char*>(&hn), sizeof hn).append(h);
    for (const TensorRef& r : t.i64)
      CTRAIN_RETURN_IF_ERROR(ForEachTensorChunk(r, [&](std::string_view c) {
        bytes.append(c);
        return Status::OK();
      }));
  }
  uint64_t len = bytes.size();
  CTRAIN_RETURN_IF_ERROR(exch->Broadcast(std::as_writable_bytes(std::span<uint64_t>(&len, 1)), "the keyed table's size"));
  bytes.resize(len);
  CTRAIN_RETURN_IF_ERROR(exch->Broadcast(std::as_writable_bytes(std::span<char>(bytes.data(), bytes.size())),
                                         "initial parameters: the keyed table"));
  if (exch->is_chief()) return Status::OK();
  uint64_t hn = 0;
  if (len < sizeof hn) return DataLossError("rank 0's keyed table: " + std::to_string(len) + " bytes");
  std::memcpy(&hn, bytes.data(), sizeof hn);
  if (hn > len - sizeof hn) return DataLossError("rank 0's keyed table: a head of " + std::to_string(hn) + " bytes");
  const nlohmann::json head = nlohmann::json::parse(bytes.substr(sizeof hn, hn), nullptr, /*allow_exceptions=*/false);
  if (!head.is_object() || !head.contains("tensors"))
    return DataLossError("rank 0's keyed table: its head is not the JSON sent");
  key_init_seed = head.value("seed", key_init_seed);  // rows admitted from now on start as rank 0's do
  Checkpoint ck;
  ck.path = "rank 0's keyed table";
  ck.step = pos.global_step;
  ck.meta["keyed_table"] = head.value("keyed_table", nlohmann::json::object());
  size_t at = sizeof hn + hn;
  for (const auto& d : head["tensors"]) {
    NamedTensor x;
    x.name = d.value("name", "");
    x.dtype = static_cast<DType>(d.value("dtype", 0));
    x.shape = d.value("shape", std::vector<int64_t>());
    const size_t n = static_cast<size_t>(x.num_elements()), nb = n * DTypeSize(x.dtype);
    if (nb > len - at) return DataLossError("rank 0's keyed table: tensor '" + x.name + "' runs past the bytes sent");
    if (x.dtype == DType::kI64) x.i64.resize(n); else x.f32.resize(n);
    std::memcpy(x.dtype == DType::kI64 ? static_cast<void*>(x.i64.data()) : static_cast<void*>(x.f32.data()),
                bytes.data() + at, nb);
    at += nb;
    ck.tensors.push_back(std::move(x));
  }
  return RestoreKeyed(ck, /*slots=*/true, /*warm=*/false);
}

Status Trainer::Impl::TranslateAcrossRanks(std::span<data::Batch* const> batches, int64_t step) {
  step_keys.clear();
  for (const data::Batch* b : batches) {
    // The same data definition on every rank: every rank stops here alike.
    CTRAIN_RETURN_IF_ERROR(CheckKeyedBatch(*b));
    step_keys.insert(step_keys.end(), b->ids.begin(), b->ids.end());
  }
  CTRAIN_RETURN_IF_ERROR(exch->AllgatherRows(step_keys, {}, 0, &gathered_ids, &gathered_rows, &gathered_counts,
                                             "step " + std::to_string(step) + ": the batches' keys"));
  const int32_t F = options.model.field_size;
  keys->Translate(gathered_ids, F, keyed_first_field(), /*train=*/true, step);
  size_t at = 0;
  for (int32_t r = 0; r < exch->rank(); ++r) at += static_cast<size_t>(gathered_counts[r]);
  for (data::Batch* b : batches) {
    std::copy_n(gathered_ids.begin() + static_cast<std::ptrdiff_t>(at), b->ids.size(), b->ids.begin());
    at += b->ids.size();
  }
  return Status::OK();
}

Status Trainer::Impl::BroadcastPlateau() {
  double d[2] = {plateau.lr, plateau.best};
  int32_t n[3] = {plateau.num_bad, plateau.cooldown_counter, plateau.reductions};
  const std::string what = "step " + std::to_string(pos.global_step) + ": the plateau's learning rate";
  CTRAIN_RETURN_IF_ERROR(exch->Broadcast(std::as_writable_bytes(std::span<double>(d, 2)), what));
  CTRAIN_RETURN_IF_ERROR(exch->Broadcast(std::as_writable_bytes(std::span<int32_t>(n, 3)), what));
  plateau.lr = d[0];
  plateau.best = d[1];
  plateau.num_bad = n[0];
  plateau.cooldown_counter = n[1];
  plateau.reductions = n[2];
  return Status::OK();
}

Status Trainer::Impl::CheckReplicas() {
  uint64_t h = 1469598103934665603ULL;
  CheckpointTensors t = Tensors();
  auto hash = [&h](std::string_view c) {
    for (unsigned char b : c) h = (h ^ b) * 1099511628211ULL;
    return Status::OK();
  };
  for (const auto& r : t.refs) (void)hash(std::string_view(reinterpret_cast<const char*>(r.data), r.count * sizeof(float)));
  for (const TensorRef& r : t.i64) (void)ForEachTensorChunk(r, hash);  // a keyed table: its index and live rows
  std::vector<uint64_t> all;
  CTRAIN_RETURN_IF_ERROR(exch->AllgatherU64(h, &all, "step " + std::to_string(pos.global_step) + ": replica hashes"));
  std::string bad;
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0]) bad += (bad.empty() ? "" : ", ") + exch->RankName(static_cast<int32_t>(r));
  if (!bad.empty())
    return InternalError("step " + std::to_string(pos.global_step) + ": --check-replicas-every: the parameters of " +
                         bad + " differ from rank 0's (parameter hashes differ): the replicas diverged");
  return Status::OK();
}

Status Trainer::Impl::Vote(bool have, bool* go, int* sig) {
  *go = have;
  *sig = 0;
  if (exch == nullptr) return Status::OK();
  return exch->AgreeStep(have, StopSignal(), go, sig);
}

void Trainer::Impl::ReportLeftOver(int64_t n) {
  if (n <= 0) return;
  left_over += n;
  Logf("%s: epoch %lld ended at step %lld with another rank's shard: %lld examples of this "
               "rank's shard were not used in this epoch\n", exch->RankName(exch->rank()).c_str(),
               static_cast<long long>(pos.epoch + 1), static_cast<long long>(pos.global_step),
               static_cast<long long>(n));
}

}  // namespace ctrain::train
