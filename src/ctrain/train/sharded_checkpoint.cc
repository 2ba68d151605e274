#include "ctrain/train/sharded_checkpoint.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "ctrain/io/file.h"
#include "ctrain/train/partitioner.h"

namespace ctrain::train {

std::string ShardDirName(int32_t shard, int32_t num_shards) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "ps-shard-%05d-of-%05d", shard, num_shards);
  return buf;
}

std::string ShardManifestEntry(const std::string& model_dir, const std::string& shard_file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::absolute(fs::path(model_dir.empty() ? "." : model_dir), ec).lexically_normal();
  const fs::path file = fs::absolute(fs::path(shard_file), ec).lexically_normal();
  const fs::path rel = file.lexically_relative(dir);
  if (!rel.empty() && *rel.begin() != ".." && rel.is_relative()) return rel.string();
  return file.string();
}

Status WriteShardedManifest(const std::string& model_dir, const nlohmann::json& manifest) {
  return io::WriteStringToFileAtomic(model_dir + "/" + kShardedManifestName, manifest.dump(2) + "\n");
}

bool IsShardTableTensor(const std::string& name) {
  return name == "embeddings/w" || name == "embeddings/V" || name.rfind("embeddings/w/", 0) == 0 ||
         name.rfind("embeddings/V/", 0) == 0;
}

StatusOr<std::optional<ShardedManifest>> ReadShardedManifest(const std::string& model_dir) {
  const std::string mpath = model_dir + "/" + kShardedManifestName;
  struct stat st;
  if (::stat(mpath.c_str(), &st) != 0) return std::optional<ShardedManifest>();
  CTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString(mpath));
  nlohmann::json m = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& what) { return DataLossError(mpath + ": " + what); };
  if (!m.is_object() || m.value("format", "") != kShardedManifestFormat)
    return bad("not a ctrain parameter-server checkpoint manifest (format " + std::string(kShardedManifestFormat) + ")");
  if (!m.contains("shards") || !m["shards"].is_array() || !m.contains("meta") || !m["meta"].is_object() ||
      !m.contains("num_shards") || !m["num_shards"].is_number_integer() || !m.contains("feature_size") ||
      !m["feature_size"].is_number_integer() || !m.contains("partitioner") || !m["partitioner"].is_string())
    return bad("missing or mistyped key (shards, meta, num_shards, feature_size, partitioner)");
  ShardedManifest out;
  out.path = mpath;
  out.num_shards = m["num_shards"].get<int32_t>();
  out.feature_size = m["feature_size"].get<int64_t>();
  out.partitioner = m["partitioner"].get<std::string>();
  out.step = m.value("step", int64_t{0});
  out.meta = m["meta"];
  if (static_cast<int64_t>(m["shards"].size()) != out.num_shards)
    return bad("lists " + std::to_string(m["shards"].size()) + " shard files for num_shards " +
               std::to_string(out.num_shards));
  StatusOr<Partitioner> part = Partitioner::Create(out.partitioner, out.feature_size, out.num_shards);
  if (!part.ok()) return bad(std::string(part.status().message()));
  for (int32_t s = 0; s < out.num_shards; ++s) {
    if (!m["shards"][s].is_string()) return bad("shards[" + std::to_string(s) + "] is not a path");
    std::string path = m["shards"][s].get<std::string>();
    if (!path.empty() && path[0] != '/') {
      path = model_dir + "/" + path;
    } else if (path.rfind("/ps-shard-", 0) == 0 && ::stat(path.c_str(), &st) != 0) {
      // Manifests written before ShardManifestEntry by a job whose --model-dir ended in '/'
      // hold "/ps-shard-.../ckpt-N.bin": the relative path with a stray leading slash.
      path = model_dir + path;
    }
    out.shard_files.push_back(std::move(path));
  }
  return std::optional<ShardedManifest>(std::move(out));
}

StatusOr<std::optional<LoadedCheckpoint>> ReadShardedCheckpoint(const std::string& model_dir) {
  CTRAIN_ASSIGN_OR_RETURN(std::optional<ShardedManifest> man, ReadShardedManifest(model_dir));
  if (!man.has_value()) return std::optional<LoadedCheckpoint>();
  const std::string& mpath = man->path;
  const int32_t S = man->num_shards;
  const int64_t rows = man->feature_size;
  CTRAIN_ASSIGN_OR_RETURN(Partitioner part_value, Partitioner::Create(man->partitioner, rows, S));
  const Partitioner* part = &part_value;

  LoadedCheckpoint out;
  out.path = mpath;
  out.step = man->step;
  out.meta = man->meta;
  out.ckpt.path = mpath;
  out.ckpt.step = out.step;
  out.ckpt.meta = out.meta;
  std::map<std::string, size_t> table_at;  // assembled table tensor -> index in out.ckpt.tensors
  std::map<std::string, int32_t> shards_of;  // table tensor -> the shards that held it so far (0..s)
  for (int32_t s = 0; s < S; ++s) {
    const std::string& path = man->shard_files[s];
    CTRAIN_ASSIGN_OR_RETURN(Checkpoint ck, LoadCheckpoint(path));
    if (ck.meta.value("format", "") != kShardFormat || ck.meta.value("shard", -1) != s ||
        ck.meta.value("num_shards", -1) != S || ck.meta.value("partitioner", "") != part->name() ||
        ck.meta.value("feature_size", int64_t{-1}) != rows)
      return DataLossError(path + ": not shard " + std::to_string(s) + " of " + std::to_string(S) + " (" +
                           std::string(part->name()) + ", feature_size " + std::to_string(rows) +
                           ") as the manifest " + mpath + " says");
    const int64_t n = part->ShardRows(s);
    for (NamedTensor& t : ck.tensors) {
      if (!IsShardTableTensor(t.name)) {  // dense parameters and slots (spread over the shards), BN state
        if (out.ckpt.Find(t.name) != nullptr)
          return DataLossError(path + ": tensor '" + t.name + "' is in another shard too");
        out.ckpt.tensors.push_back(std::move(t));
        continue;
      }
      if (t.dtype != DType::kF32 || t.shape.empty() || t.shape[0] != n || t.shape.size() > 2)
        return InvalidArgumentError(path + ": tensor '" + t.name + "' should be f32 with " + std::to_string(n) +
                                    " rows (shard " + std::to_string(s) + " of the " + std::string(part->name()) +
                                    " partitioner)");
      const int64_t dim = t.shape.size() == 2 ? t.shape[1] : 1;
      auto it = table_at.find(t.name);
      if (it == table_at.end()) {
        if (s != 0) return DataLossError(path + ": tensor '" + t.name + "' is not in shard 0");
        NamedTensor full;
        full.name = t.name;
        full.shape = t.shape;
        full.shape[0] = rows;
        full.f32.assign(static_cast<size_t>(rows * dim), 0.0f);
        it = table_at.emplace(t.name, out.ckpt.tensors.size()).first;
        out.ckpt.tensors.push_back(std::move(full));
      }
      if (shards_of[t.name]++ != s) return DataLossError(path + ": tensor '" + t.name + "' is in this shard twice");
      NamedTensor& full = out.ckpt.tensors[it->second];
      if (full.shape.size() != t.shape.size() || (dim != (full.shape.size() == 2 ? full.shape[1] : 1)))
        return DataLossError(path + ": tensor '" + t.name + "' has another width than in shard 0");
      for (int64_t r = 0; r < n; ++r)
        std::memcpy(&full.f32[part->GlobalId(s, r) * dim], &t.f32[r * dim], dim * sizeof(float));
    }
    for (const auto& [name, held] : shards_of)  // every shard holds its rows of every table of shard 0
      if (held != s + 1)
        return DataLossError(path + ": tensor '" + name + "' is missing (shard 0 has it; every shard holds its " +
                             "rows of each table), named by the manifest " + mpath);
  }
  return std::optional<LoadedCheckpoint>(std::move(out));
}

}  // namespace ctrain::train
