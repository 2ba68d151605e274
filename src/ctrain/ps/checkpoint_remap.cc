#include "ctrain/ps/checkpoint_remap.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include "ctrain/optim/optimizer.h"
#include "ctrain/ps/dense_placement.h"
#include "ctrain/train/partitioner.h"
#include "ctrain/train/train_config.h"

namespace ctrain::ps {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string Layout(int32_t num_shards, const std::string& partitioner) {
  return std::to_string(num_shards) + (num_shards == 1 ? " shard (" : " shards (") + partitioner + ")";
}

// "checkpoint has 2 shards (fixed_size), this job has 3 shards (fixed_size)".
std::string BothLayouts(const train::ShardedManifest& m, const ShardLayout& to) {
  return "checkpoint has " + Layout(m.num_shards, m.partitioner) + ", this job has " +
         Layout(to.num_shards, to.partitioner);
}

// "<file> (shard 1 of 3, named by <manifest>) does not exist[, nor does its directory <dir>]".
std::string MissingShardFile(const train::ShardedManifest& m, int32_t s) {
  const std::string& file = m.shard_files[s];
  const std::string dir = std::filesystem::path(file).parent_path().string();
  return file + " (shard " + std::to_string(s) + " of " + std::to_string(m.num_shards) + ", named by " + m.path +
         ") does not exist" + (!dir.empty() && !Exists(dir) ? ", nor does its directory " + dir : "");
}

// Shard directories of model_dir with a checkpoint index and another shard count than num_shards.
std::vector<std::string> OtherLayoutDirs(const std::string& model_dir, int32_t num_shards) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(model_dir, ec)) {
    const std::string name = e.path().filename().string();
    int shard = -1, count = -1;
    char tail = 0;
    if (std::sscanf(name.c_str(), "ps-shard-%5d-of-%5d%c", &shard, &count, &tail) != 2) continue;
    if (name != train::ShardDirName(shard, count) || count == num_shards) continue;
    if (Exists(e.path().string() + "/checkpoint")) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

StatusOr<std::optional<train::Checkpoint>> LoadOrRefuse(const std::string& model_dir, const ShardLayout& layout,
                                                        const std::function<void(const std::string&)>& log) {
  const std::string own_dir = model_dir + "/" + train::ShardDirName(layout.shard, layout.num_shards);
  CTRAIN_ASSIGN_OR_RETURN(std::optional<train::ShardedManifest> man, train::ReadShardedManifest(model_dir));
  if (man.has_value() && (man->num_shards != layout.num_shards || man->partitioner != layout.partitioner)) {
    CTRAIN_ASSIGN_OR_RETURN(train::Checkpoint ck, RemapShardCheckpoint(*man, layout));
    if (log)
      log("remapped the rows of shard " + std::to_string(layout.shard) + " by id from " + man->path + " (" +
          BothLayouts(*man, layout) + "), global step " + std::to_string(ck.step));
    return std::optional<train::Checkpoint>(std::move(ck));
  }
  if (man.has_value()) {  // the same layout: the file the manifest names for this shard
    const std::string& file = man->shard_files[layout.shard];
    if (!Exists(file)) return RefuseToStartFresh(MissingShardFile(*man, layout.shard));
    CTRAIN_ASSIGN_OR_RETURN(train::Checkpoint ck, train::LoadCheckpoint(file));
    if (ck.meta.value("feature_size", int64_t{-1}) != man->feature_size ||
        (layout.shard == 0 && ck.meta.value("global_step", int64_t{-1}) != man->step))
      return DataLossError(file + ": feature_size " + std::to_string(ck.meta.value("feature_size", int64_t{-1})) +
                           ", global step " + std::to_string(ck.meta.value("global_step", int64_t{-1})) +
                           "; the manifest " + man->path + " says feature_size " + std::to_string(man->feature_size) +
                           (layout.shard == 0 ? ", step " + std::to_string(man->step) : std::string()));
    if (StatusOr<std::string> latest = train::LatestCheckpointPath(own_dir);
        log && latest.ok() && std::filesystem::path(*latest).filename() != std::filesystem::path(file).filename())
      log("restoring " + file + ", the file " + man->path + " names; the newer " + *latest +
          " is in no manifest (the chief did not finish that checkpoint)");
    return std::optional<train::Checkpoint>(std::move(ck));
  }
  // No manifest: the newest checkpoint of the server's own directory.
  StatusOr<std::string> latest = train::LatestCheckpointPath(own_dir);
  if (latest.ok()) {
    CTRAIN_ASSIGN_OR_RETURN(train::Checkpoint ck, train::LoadLatestCheckpoint(own_dir));
    return std::optional<train::Checkpoint>(std::move(ck));
  }
  if (latest.status().code() != StatusCode::kNotFound) return latest.status();
  const std::vector<std::string> others = OtherLayoutDirs(model_dir, layout.num_shards);
  if (!others.empty()) {
    std::string list;
    for (const std::string& o : others) list += (list.empty() ? "" : ", ") + o;
    return RefuseToStartFresh(model_dir + " holds parameter-server checkpoints of another shard count (" + list +
                              ") but no manifest " + train::kShardedManifestName +
                              " saying which files belong together; this job has " +
                              Layout(layout.num_shards, layout.partitioner));
  }
  return std::optional<train::Checkpoint>();
}

}  // namespace

Status RefuseToStartFresh(const std::string& why) {
  return FailedPreconditionError(why + ": a parameter server does not start fresh over an existing checkpoint " +
                                 "(restore the missing files, restart with the checkpoint's layout, give an " +
                                 "empty --model-dir, or pass --force to every server to start fresh and replace it)");
}

StatusOr<std::optional<train::Checkpoint>> LoadStartCheckpoint(const std::string& model_dir,
                                                               const ShardLayout& layout,
                                                               const std::function<void(const std::string&)>& log,
                                                               bool force) {
  StatusOr<std::optional<train::Checkpoint>> r = LoadOrRefuse(model_dir, layout, force ? nullptr : log);
  if (!force || (r.ok() && !r->has_value())) return r;
  // --force: every server given it starts fresh alike (a restoring shard beside a fresh one would mix
  // trained and new rows); say what is set aside.
  std::string what;
  if (!r.ok())
    what = "the checkpoint it would refuse: " + r.status().ToString();
  else
    what = (*r)->path + " (global step " + std::to_string((*r)->meta.value("global_step", (*r)->step)) + ")";
  if (log)
    log("--force: starting fresh; not restoring " + what + "; this job's checkpoints replace it in " + model_dir);
  return std::optional<train::Checkpoint>();
}

StatusOr<train::Checkpoint> RemapShardCheckpoint(const train::ShardedManifest& m, const ShardLayout& to) {
  CTRAIN_ASSIGN_OR_RETURN(train::Partitioner from_part,
                          train::Partitioner::Create(m.partitioner, m.feature_size, m.num_shards));
  CTRAIN_ASSIGN_OR_RETURN(train::Partitioner to_part,
                          train::Partitioner::Create(to.partitioner, m.feature_size, to.num_shards));
  const std::string layouts = BothLayouts(m, to);
  for (int32_t s = 0; s < m.num_shards; ++s)
    if (!Exists(m.shard_files[s]))
      return RefuseToStartFresh(m.path + ": " + layouts + ", and the rows cannot be remapped: " +
                                MissingShardFile(m, s));
  const int64_t rows = to_part.ShardRows(to.shard);
  train::Checkpoint out;
  out.path = m.path;
  std::map<std::string, size_t> table_at;  // table tensor -> index in out.tensors
  std::map<std::string, int64_t> filled;   // table tensor -> rows copied
  std::set<std::string> wanted;            // this server's dense parameters, their slots; shard 0: the state
  nlohmann::json meta0;
  for (int32_t s = 0; s < m.num_shards; ++s) {
    const std::string& file = m.shard_files[s];
    CTRAIN_ASSIGN_OR_RETURN(train::Checkpoint ck, train::LoadCheckpoint(file));
    const nlohmann::json& meta = ck.meta;
    if (!meta.is_object() || meta.value("format", "") != train::kShardFormat || meta.value("shard", -1) != s ||
        meta.value("num_shards", -1) != m.num_shards || meta.value("partitioner", "") != m.partitioner ||
        meta.value("feature_size", int64_t{-1}) != m.feature_size || !meta.contains("spec") ||
        !meta["spec"].is_object())
      return DataLossError(file + ": not shard " + std::to_string(s) + " of " + Layout(m.num_shards, m.partitioner) +
                           " with feature_size " + std::to_string(m.feature_size) + " as the manifest " + m.path +
                           " says");
    const int64_t step = meta.value("global_step", int64_t{-1});
    if (s == 0) {
      meta0 = meta;
      if (step != m.step)
        return DataLossError(file + ": global step " + std::to_string(step) + ", the manifest " + m.path +
                             " says step " + std::to_string(m.step));
      const nlohmann::json& spec = meta["spec"];
      CTRAIN_ASSIGN_OR_RETURN(optim::OptimizerConfig oc,
                              train::OptimizerConfigFromJson(spec.value("optimizer", nlohmann::json())));
      CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<optim::Optimizer> opt, optim::MakeOptimizer(oc));
      std::vector<std::string> names;
      std::vector<int64_t> sizes;
      for (const auto& d : spec.value("dense", nlohmann::json::array())) {
        int64_t n = 1;
        for (int64_t x : d.value("shape", std::vector<int64_t>())) n *= x;
        names.push_back(d.value("name", ""));
        sizes.push_back(n);
      }
      const std::vector<int32_t> place = PlaceDense(sizes, to.num_shards);
      for (size_t i = 0; i < names.size(); ++i) {
        if (place[i] != to.shard) continue;
        wanted.insert(names[i]);
        for (int k = 0; k < opt->num_slots(); ++k) wanted.insert(names[i] + "/" + std::string(opt->SlotName(k)));
      }
      if (to.shard == 0)
        for (const auto& st : meta.value("state", nlohmann::json::array())) wanted.insert(st.value("name", ""));
    } else {
      if (meta["spec"] != meta0["spec"])
        return DataLossError(file + ": its model spec differs from shard 0's (" + m.shard_files[0] + ")");
      if (step != m.step)
        return RefuseToStartFresh(m.path + ": " + layouts + ", and the rows cannot be remapped: the shards saved " +
                                  "different global steps (shard 0 at " + std::to_string(m.step) + ", shard " +
                                  std::to_string(s) + " at " + std::to_string(step) +
                                  "; asynchronous training saves each shard at its own step)");
    }
    const int64_t n = from_part.ShardRows(s);
    for (train::NamedTensor& t : ck.tensors) {
      if (!train::IsShardTableTensor(t.name)) {
        if (wanted.count(t.name) == 0) continue;
        if (out.Find(t.name) != nullptr)
          return DataLossError(file + ": tensor '" + t.name + "' is in another shard file of " + m.path + " too");
        out.tensors.push_back(std::move(t));
        continue;
      }
      if (t.dtype != train::DType::kF32 || t.shape.empty() || t.shape.size() > 2 || t.shape[0] != n)
        return DataLossError(file + ": tensor '" + t.name + "' should be f32 with " + std::to_string(n) +
                             " rows (shard " + std::to_string(s) + " of " + Layout(m.num_shards, m.partitioner) +
                             ")");
      const int64_t dim = t.shape.size() == 2 ? t.shape[1] : 1;
      auto it = table_at.find(t.name);
      if (it == table_at.end()) {
        if (s != 0) return DataLossError(file + ": tensor '" + t.name + "' is not in shard 0");
        train::NamedTensor mine;
        mine.name = t.name;
        mine.shape = t.shape;
        mine.shape[0] = rows;
        mine.f32.assign(static_cast<size_t>(rows * dim), 0.0f);
        it = table_at.emplace(t.name, out.tensors.size()).first;
        out.tensors.push_back(std::move(mine));
      }
      train::NamedTensor& mine = out.tensors[it->second];
      if (mine.shape.size() != t.shape.size() || (t.shape.size() == 2 && mine.shape[1] != dim))
        return DataLossError(file + ": tensor '" + t.name + "' has another width than in shard 0");
      int64_t& copied = filled[t.name];
      for (int64_t r = 0; r < n; ++r) {
        const int64_t id = from_part.GlobalId(s, r);
        if (to_part.ShardOf(id) != to.shard) continue;
        std::memcpy(&mine.f32[to_part.LocalRow(id) * dim], &t.f32[r * dim], dim * sizeof(float));
        ++copied;
      }
    }
  }
  for (const auto& [name, copied] : filled)
    if (copied != rows)
      return DataLossError(m.path + ": tensor '" + name + "': its shard files hold " + std::to_string(copied) +
                           " of the " + std::to_string(rows) + " rows shard " + std::to_string(to.shard) + " of " +
                           Layout(to.num_shards, to.partitioner) + " owns");
  for (const std::string& name : wanted)
    if (out.Find(name) == nullptr) return DataLossError(m.path + ": tensor '" + name + "' is in none of its shard files");
  out.step = m.step;
  out.meta = meta0;
  out.meta["shard"] = to.shard;
  out.meta["num_shards"] = to.num_shards;
  out.meta["partitioner"] = to.partitioner;
  if (to.shard != 0) out.meta["state"] = nlohmann::json::array();
  return out;
}

}  // namespace ctrain::ps
