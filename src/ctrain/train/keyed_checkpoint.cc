#include "ctrain/train/keyed_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <map>

namespace ctrain::train {
namespace {

bool IsTableTensor(const std::string& name) {
  return name == "embeddings/w" || name == "embeddings/V" || name.starts_with("embeddings/w/") ||
         name.starts_with("embeddings/V/");
}

}  // namespace

const std::vector<int64_t>* FindI64Tensor(const Checkpoint& c, const char* name) {
  const NamedTensor* t = c.Find(name);
  return t != nullptr && t->dtype == DType::kI64 && t->shape.size() == 1 ? &t->i64 : nullptr;
}

bool IsKeyedDelta(const nlohmann::json& meta) { return meta.is_object() && meta.contains("keyed_delta"); }

StatusOr<Checkpoint> ComposeKeyedDelta(const Checkpoint& base, const Checkpoint& delta) {
  const std::string where = delta.path + " (incremental, on " + base.path + ")";
  const nlohmann::json& kd = delta.meta["keyed_delta"];
  if (base.step != kd.value("base_step", int64_t{-1}))
    return DataLossError(where + ": the base is step " + std::to_string(base.step) + ", the delta extends step " +
                         std::to_string(kd.value("base_step", int64_t{-1})));
  if (IsKeyedDelta(base.meta)) return DataLossError(where + ": the base is itself incremental");
  const char* kIdx[] = {"embeddings/keys", "embeddings/key_rows", "embeddings/key_last_step"};
  const std::vector<int64_t>* b[3];
  const std::vector<int64_t>* d[3];
  for (int j = 0; j < 3; ++j) {
    b[j] = FindI64Tensor(base, kIdx[j]);
    d[j] = FindI64Tensor(delta, kIdx[j]);
    if (b[j] == nullptr || d[j] == nullptr) return DataLossError(where + ": no int64 tensor '" + kIdx[j] + "'");
  }
  const std::vector<int64_t>* evicted = FindI64Tensor(delta, kEvictedKeysTensor);
  if (evicted == nullptr) return DataLossError(where + ": no int64 tensor '" + std::string(kEvictedKeysTensor) + "'");
  const size_t nb = b[0]->size(), nd = d[0]->size();
  if (b[1]->size() != nb || b[2]->size() != nb || d[1]->size() != nd || d[2]->size() != nd)
    return DataLossError(where + ": keys, rows and last-seen steps of different lengths");
  // Where each composed key's values come from: (false, i) base index i, (true, i) delta index i.
  std::map<int64_t, std::pair<bool, size_t>> from;
  for (size_t i = 0; i < nb; ++i) from[(*b[0])[i]] = {false, i};
  for (int64_t k : *evicted) from.erase(k);
  for (size_t i = 0; i < nd; ++i) {
    if (i > 0 && (*d[0])[i] <= (*d[0])[i - 1])
      return DataLossError(where + ": changed keys not strictly increasing at index " + std::to_string(i));
    from[(*d[0])[i]] = {true, i};
  }
  const int64_t n = static_cast<int64_t>(from.size());
  Checkpoint out;
  out.path = delta.path;
  out.step = delta.step;
  out.meta = delta.meta;
  for (const NamedTensor& t : delta.tensors) {
    if (t.name == kIdx[0]) {  // the delta's own changed keys, for a trainer that resumes the chain
      NamedTensor c = t;
      c.name = kDeltaKeysTensor;
      out.tensors.push_back(std::move(c));
    }
    if (!IsTableTensor(t.name) && t.name != kIdx[0] && t.name != kIdx[1] && t.name != kIdx[2]) {
      out.tensors.push_back(t);
      continue;
    }
    if (!IsTableTensor(t.name)) continue;  // the index tensors are built below
    const NamedTensor* bt = base.Find(t.name);
    if (bt == nullptr || bt->dtype != DType::kF32 || t.dtype != DType::kF32 || t.shape.empty() ||
        bt->shape.empty() || bt->shape.size() != t.shape.size())
      return DataLossError(where + ": table tensor '" + t.name + "' missing from the base or of another kind");
    const int64_t dim = t.shape.size() == 2 ? t.shape[1] : 1;
    const int64_t D = t.shape[0] - static_cast<int64_t>(nd);
    if (D < 0 || bt->shape[0] - static_cast<int64_t>(nb) != D || (t.shape.size() == 2 && bt->shape[1] != dim))
      return DataLossError(where + ": table tensor '" + t.name + "' has shape [" + std::to_string(t.shape[0]) +
                           "] in the delta and [" + std::to_string(bt->shape[0]) + "] in the base, for " +
                           std::to_string(nd) + " and " + std::to_string(nb) + " keys");
    NamedTensor c;
    c.name = t.name;
    c.dtype = DType::kF32;
    c.shape = t.shape;
    c.shape[0] = D + n;
    c.f32.resize(static_cast<size_t>((D + n) * dim));
    std::copy(t.f32.begin(), t.f32.begin() + D * dim, c.f32.begin());  // the numeric rows: the delta's
    int64_t r = D;
    for (const auto& [key, src] : from) {
      const std::vector<float>& v = src.first ? t.f32 : bt->f32;
      const int64_t at = (D + static_cast<int64_t>(src.second)) * dim;
      std::copy(v.begin() + at, v.begin() + at + dim, c.f32.begin() + r * dim);
      ++r;
    }
    out.tensors.push_back(std::move(c));
  }
  for (int j = 0; j < 3; ++j) {
    NamedTensor c;
    c.name = kIdx[j];
    c.dtype = DType::kI64;
    c.shape = {n};
    for (const auto& [key, src] : from) c.i64.push_back(j == 0 ? key : (*(src.first ? d[j] : b[j]))[src.second]);
    out.tensors.push_back(std::move(c));
  }
  // Two keys on one row would mean base and delta disagree (a row reused without its old key evicted).
  std::vector<int64_t> rows = out.Find(kIdx[1])->i64;
  std::sort(rows.begin(), rows.end());
  if (std::adjacent_find(rows.begin(), rows.end()) != rows.end())
    return DataLossError(where + ": two keys hold the same row after composing");
  return out;
}

StatusOr<Checkpoint> LoadComposedCheckpoint(const std::string& path) {
  CTRAIN_ASSIGN_OR_RETURN(Checkpoint ck, LoadCheckpoint(path));
  return WithKeyedBase(std::move(ck));
}

StatusOr<Checkpoint> WithKeyedBase(Checkpoint ck) {
  if (!IsKeyedDelta(ck.meta)) return ck;
  const std::string& path = ck.path;
  const std::string base_file = ck.meta["keyed_delta"].value("base", "");
  if (base_file.empty() || base_file.find('/') != std::string::npos)
    return DataLossError(path + ": incremental checkpoint with an unreadable base name '" + base_file + "'");
  const std::string base_path = (std::filesystem::path(path).parent_path() / base_file).string();
  StatusOr<Checkpoint> base = LoadCheckpoint(base_path);
  if (!base.ok())
    return DataLossError(path + ": its base checkpoint " + base_path + " cannot be read (" +
                         std::string(base.status().message()) + "): an incremental checkpoint needs its full one");
  return ComposeKeyedDelta(*base, ck);
}

}  // namespace ctrain::train
