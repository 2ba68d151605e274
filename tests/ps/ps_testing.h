// Test helpers for the parameter servers: in-process servers on loopback
// (port 0) and a small model spec.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ctrain/model/deepfm.h"
#include "ctrain/ps/client.h"
#include "ctrain/ps/server.h"
#include "ctrain/train/train_config.h"

namespace ctrain::ps::testing {

// S in-process servers (shard order); empty on failure (the test fails).
inline std::vector<std::unique_ptr<ParameterServer>> StartServers(int32_t S, const std::string& partitioner,
                                                                  const std::string& model_dir = "",
                                                                  const std::string& token = "",
                                                                  int64_t max_message_bytes = kDefaultMaxMessageBytes) {
  std::vector<std::unique_ptr<ParameterServer>> out;
  for (int32_t s = 0; s < S; ++s) {
    ServerOptions o;
    o.server.port = 0;
    o.server.token = token;
    o.shard.shard = s;
    o.shard.num_shards = S;
    o.shard.partitioner = partitioner;
    o.shard.model_dir = model_dir;
    o.shard.max_message_bytes = max_message_bytes;
    o.shard.log = [](const std::string&) {};
    StatusOr<std::unique_ptr<ParameterServer>> p = ParameterServer::Start(o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return {};
    out.push_back(std::move(*p));
  }
  return out;
}

inline std::vector<std::string> Addresses(const std::vector<std::unique_ptr<ParameterServer>>& servers) {
  std::vector<std::string> a;
  for (const auto& s : servers) a.push_back(s->address());
  return a;
}

inline model::DeepFMConfig SmallModel(int64_t feature_size = 50, int32_t K = 4) {
  model::DeepFMConfig m;
  m.feature_size = feature_size;
  m.field_size = 3;
  m.embedding_size = K;
  m.deep_layers = {8};
  return m;
}

inline proto::ModelSpec Spec(const model::DeepFMConfig& m, const std::string& optimizer, int32_t workers = 1,
                             bool sync = false, int64_t max_staleness = 0, uint64_t seed = 7) {
  optim::OptimizerConfig oc;
  oc.name = optimizer;
  oc.learning_rate = 0.05f;
  proto::ModelSpec spec;
  spec.set_model_json(train::ModelConfigToJson(m).dump());
  spec.set_optimizer_json(train::OptimizerConfigToJson(oc).dump());
  spec.set_seed(seed);
  spec.set_num_workers(workers);
  spec.set_sync_replicas(sync);
  spec.set_max_staleness(max_staleness);
  model::DeepFM d(m);
  d.InitDense(seed);
  for (const auto& p : d.dense_params()) {
    proto::DenseTensor* t = spec.add_dense();
    t->set_name(p.name);
    for (int64_t x : p.shape) t->add_shape(x);
    t->set_values(reinterpret_cast<const char*>(p.value.data()), p.value.size() * 4);
  }
  return spec;
}

inline std::unique_ptr<PsClient> Connect(const std::vector<std::string>& addresses, int32_t worker = 0,
                                         const std::string& token = "",
                                         int64_t max_message_bytes = kDefaultMaxMessageBytes) {
  ClientOptions o;
  o.addresses = addresses;
  o.max_message_bytes = max_message_bytes;
  o.worker_index = worker;
  o.channel.token = token;
  o.max_wait = std::chrono::milliseconds(3000);
  o.log = [](const std::string&) {};
  StatusOr<std::unique_ptr<PsClient>> c = PsClient::Connect(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

}  // namespace ctrain::ps::testing
