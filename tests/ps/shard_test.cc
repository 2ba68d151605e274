// ParameterShard (ps/shard.h) on malformed requests, without RPC: the inputs
// fuzz/ps_request_fuzz.cc found crashing the server. Each must get an error
// status (never an exception or a crash) and leave the shard as it was.
#include "ctrain/ps/shard.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "ps_testing.h"
#include "testing/temp_dir.h"

namespace ctrain::ps {
namespace {

using testing::SmallModel;
using testing::Spec;

std::unique_ptr<ParameterShard> InitialisedShard() {
  ShardOptions o;
  o.shard = 0;
  o.num_shards = 2;
  o.log = [](const std::string&) {};
  auto s = ParameterShard::Create(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  proto::InitRequest init;
  *init.mutable_spec() = Spec(SmallModel(50, 4), "adam");
  proto::InitResponse resp;
  EXPECT_TRUE((*s)->Init(init, &resp).ok());
  return std::move(*s);
}

TEST(PsShardTest, InitWithJsonThatIsNotAnObjectIsRefusedOnAnInitialisedShard) {
  auto s = InitialisedShard();
  const proto::ModelSpec good = Spec(SmallModel(50, 4), "adam");
  struct Case {
    std::string model_json, optimizer_json, message;
  };
  const Case cases[] = {
      {"[1, 2]", good.optimizer_json(), "Init: model JSON is not an object"},
      {"5", good.optimizer_json(), "Init: model JSON is not an object"},
      {good.model_json(), "\"adam\"", "Init: optimizer JSON is not an object"},
      {good.model_json(), R"({"name": 3})", "Init: optimizer JSON: 'name' is not a string"},
  };
  for (const Case& c : cases) {
    proto::InitRequest req;
    *req.mutable_spec() = good;
    req.mutable_spec()->set_model_json(c.model_json);
    req.mutable_spec()->set_optimizer_json(c.optimizer_json);
    proto::InitResponse resp;
    Status st = s->Init(req, &resp);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.model_json << " / " << c.optimizer_json;
    EXPECT_EQ(st.message(), c.message);
  }
  proto::InitRequest req;  // the shard still takes its trainers
  *req.mutable_spec() = good;
  proto::InitResponse resp;
  EXPECT_TRUE(s->Init(req, &resp).ok());
}

// Found by the fuzzer: 2^61 x 100 overflowed int64 (undefined behaviour) before the size check.
TEST(PsShardTest, SaveRefusesStateShapesThatOverflowOrAreNegative) {
  ShardOptions o;
  o.model_dir = ctrain::testing::TestTempDir("ps_shard_test", "save_state");
  o.log = [](const std::string&) {};
  auto s = ParameterShard::Create(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  proto::InitRequest init;
  *init.mutable_spec() = Spec(SmallModel(50, 4), "sgd");
  proto::InitResponse ir;
  ASSERT_TRUE((*s)->Init(init, &ir).ok());
  struct Case {
    std::vector<int64_t> shape;
    std::string message;
  };
  const Case cases[] = {
      {{int64_t{1} << 61, 100}, "Save: state tensor 'bn/mean' has more than 2^40 elements"},
      {{-2, -2}, "Save: state tensor 'bn/mean' has a negative dimension -2"},  // -2 x -2 = 4 floats: 16 bytes given
  };
  for (const Case& c : cases) {
    proto::SaveRequest req;
    proto::DenseTensor* t = req.add_state();
    t->set_name("bn/mean");
    for (int64_t d : c.shape) t->add_shape(d);
    t->set_values(std::string(16, '\0'));
    proto::SaveResponse resp;
    Status st = (*s)->Save(req, &resp);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message(), c.message);
  }
  proto::SaveRequest ok;  // a valid one still saves
  proto::DenseTensor* t = ok.add_state();
  t->set_name("bn/mean");
  t->add_shape(4);
  t->set_values(std::string(16, '\0'));
  proto::SaveResponse resp;
  EXPECT_TRUE((*s)->Save(ok, &resp).ok());
  EXPECT_EQ(resp.global_step(), 0);
}

TEST(PsShardTest, InitRefusesDenseShapesThatOverflowOrAreNegative) {
  ShardOptions o;
  o.log = [](const std::string&) {};
  auto s = ParameterShard::Create(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  proto::InitRequest req;
  *req.mutable_spec() = Spec(SmallModel(50, 4), "sgd");
  proto::DenseTensor* d = req.mutable_spec()->mutable_dense(0);
  d->clear_shape();
  d->add_shape(int64_t{1} << 62);
  d->add_shape(4);
  proto::InitResponse resp;
  Status st = (*s)->Init(req, &resp);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "Init: dense parameter '" + d->name() + "' has more than 2^40 elements");
  d->clear_shape();
  d->add_shape(-1);
  d->add_shape(-1);  // -1 x -1 = 1 float, as many as fm_bias has
  st = (*s)->Init(req, &resp);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "Init: dense parameter '" + d->name() + "' has a negative dimension -1");
  proto::InitRequest good;  // the shard is still uninitialised and takes a valid spec
  *good.mutable_spec() = Spec(SmallModel(50, 4), "sgd");
  EXPECT_TRUE((*s)->Init(good, &resp).ok());
}

}  // namespace
}  // namespace ctrain::ps

namespace ctrain::ps {
namespace {

// A trainer whose configuration differs from the one the servers hold is refused naming
// the setting (issue #21 item 4): the servers run the optimizer, so another learning rate
// would otherwise be ignored in silence; another model names the key and both values.
TEST(PsShardTest, ATrainerWithAnotherConfigurationIsRefusedNamingTheSetting) {
  auto s = InitialisedShard();  // adam, learning rate 0.05, SmallModel(50, 4)
  proto::InitResponse resp;
  proto::InitRequest lr;
  *lr.mutable_spec() = Spec(SmallModel(50, 4), "adam");
  nlohmann::json oj = nlohmann::json::parse(lr.spec().optimizer_json());
  oj["learning_rate"] = 0.1;
  lr.mutable_spec()->set_optimizer_json(oj.dump());
  Status st = s->Init(lr, &resp);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("holds a model with optimizer setting learning_rate 0.05"), std::string::npos)
      << st.ToString();
  EXPECT_NE(st.message().find("this trainer asks for 0.1"), std::string::npos) << st.ToString();
  proto::InitRequest model;
  *model.mutable_spec() = Spec(SmallModel(60, 4), "adam");
  st = s->Init(model, &resp);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("50, this trainer asks for 60"), std::string::npos) << st.ToString();
  proto::InitRequest same;  // the same configuration still joins
  *same.mutable_spec() = Spec(SmallModel(50, 4), "adam");
  EXPECT_TRUE(s->Init(same, &resp).ok());
}

}  // namespace
}  // namespace ctrain::ps
