// Prediction on unlabelled examples (labels NaN, io/label_mode.h): the same
// probabilities as for the labelled rows; the label output column is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "ctrain/train/prediction_output.h"
#include "ctrain/train/trainer.h"

namespace ctrain::train {
namespace {

TEST(UnlabelledPredict, SameProbabilitiesAsWithLabels) {
  TrainOptions o;
  o.model.feature_size = 2000;
  o.model.field_size = 39;
  o.model.embedding_size = 4;
  o.model.deep_layers = {8};
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  o.max_steps = 3;
  const Dataset labelled = *MakeSynthDataset(3, 0, 300, 2000);
  Dataset unlabelled(labelled.field_size());
  for (int64_t r = 0; r < labelled.size(); ++r)
    unlabelled.Append(std::numeric_limits<float>::quiet_NaN(), labelled.ids() + r * labelled.field_size(),
                      labelled.values() + r * labelled.field_size());
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  TrainResult res;
  Status trained = (*t)->Train(labelled, nullptr, &res);
  ASSERT_TRUE(trained.ok()) << trained.ToString();
  std::vector<float> a, b;
  ASSERT_TRUE((*t)->Predict(labelled, &a).ok());
  ASSERT_TRUE((*t)->Predict(unlabelled, &b).ok());
  EXPECT_EQ(a, b);
  EXPECT_TRUE(HasLabels(labelled));
  EXPECT_FALSE(HasLabels(unlabelled));
  // eval needs labels: the metrics name the bad label.
  EXPECT_NE((*t)->Evaluate(unlabelled).status().message().find("label nan at index 0 is not 0 or 1"),
            std::string::npos);

  auto cols = ParsePredictColumns("id,prediction");
  ASSERT_TRUE(cols.ok());
  EXPECT_EQ(*cols, (std::vector<PredictColumn>{PredictColumn::kIndex, PredictColumn::kPrediction}));
  EXPECT_TRUE(CheckPredictColumns(*cols, unlabelled).ok());
  auto with_label = ParsePredictColumns("id,label,prediction");
  ASSERT_TRUE(with_label.ok());
  EXPECT_TRUE(CheckPredictColumns(*with_label, labelled).ok());
  EXPECT_EQ(CheckPredictColumns(*with_label, unlabelled).code(), StatusCode::kInvalidArgument);
  const std::string text = FormatPredictions(*cols, unlabelled, b, {});
  EXPECT_EQ(text.substr(0, 2), "0\t");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 300);
}

}  // namespace
}  // namespace ctrain::train
