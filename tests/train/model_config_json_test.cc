// The model config's JSON (train/train_config.h), as checkpoints and the
// parameter servers' specs record it: the kind travels with it; configs
// written before the kind was recorded read as DeepFM's; an unknown kind is
// named.
#include <gtest/gtest.h>

#include "ctrain/model/model.h"
#include "ctrain/train/train_config.h"

namespace ctrain::train {
namespace {

model::ModelConfig Config() {
  model::ModelConfig c;
  c.feature_size = 50;
  c.field_size = 3;
  c.embedding_size = 4;
  c.deep_layers = {8};
  return c;
}

// Checkpoints record the kind; those written before it was recorded read as DeepFM's; another kind is named.
TEST(ModelConfigJsonTest, TheKindTravelsWithTheConfig) {
  const nlohmann::json j = ModelConfigToJson(Config());
  EXPECT_EQ(j["kind"], "deepfm");
  nlohmann::json old = j;
  old.erase("kind");
  StatusOr<model::ModelConfig> c = ModelConfigFromJson(old);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->kind, "deepfm");
  nlohmann::json other = j;
  other["kind"] = "xdeepfm_v9";
  c = ModelConfigFromJson(other);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unknown model 'xdeepfm_v9'"), std::string::npos) << c.status().ToString();
}

}  // namespace
}  // namespace ctrain::train
