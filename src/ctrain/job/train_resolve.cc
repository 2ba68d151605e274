// The training job's flags onto train::TrainOptions (job/train_steps.h).
#include <cstdio>
#include <string>
#include <utility>

#include "ctrain/base/log.h"
#include "ctrain/data/feature_spec.h"
#include "ctrain/job/train_steps.h"
#include "ctrain/model/layers/bf16.h"
#include "ctrain/model/model.h"

namespace ctrain::job {

Status ResolveModelOptions(TrainRun& run) {
  TrainJobOptions& job = run.job;
  train::TrainOptions& o = run.o;
  {
    const Status kind = model::CheckModelKind(job.model);
    if (!kind.ok()) return kind.WithContext("--model");
  }
  o.model.kind = job.model;
  CTRAIN_ASSIGN_OR_RETURN(o.model.deep_layers, train::ParseLayerList(job.deep_layers));
  o.model.cross_layers = job.cross_layers;
  o.model.low_rank = job.low_rank;
  o.model.num_experts = job.num_experts;
  o.model.model_structure = job.model_structure;
  CTRAIN_ASSIGN_OR_RETURN(o.model.cin_layer_units, train::ParseLayerList(job.cin_layer_units, "cin_layer_units"));
  CTRAIN_ASSIGN_OR_RETURN(o.model.bottom_mlp, train::ParseLayerList(job.bottom_mlp, "bottom_mlp"));
  CTRAIN_ASSIGN_OR_RETURN(o.model.top_mlp, train::ParseLayerList(job.top_mlp, "top_mlp"));
  o.model.num_dense_fields = job.num_dense_fields;
  o.model.embedding_initializer = job.embedding_initializer;
  o.model.numeric_embedding_initializer = job.numeric_embedding_initializer;
  CTRAIN_RETURN_IF_ERROR(model::EmbeddingInitOf(o.model).status());
  o.model.embedding_size = job.embedding_size;
  o.model.dropout = job.dropout;
  o.model.batch_norm = job.batch_norm;
  o.model.l2_reg = job.l2_reg;
  // Mixed precision is a runtime choice, not part of the model: checkpoints stay f32
  // and a run may resume with the other setting.
  if (job.mixed_precision == "bf16" || job.mixed_precision == "mixed_bfloat16") {
    CTRAIN_RETURN_IF_ERROR(model::Bf16GemmSupported());
    o.model.gemm_dtype = model::DataType::kBF16;
  } else if (job.mixed_precision == "f32" || job.mixed_precision == "float32") {
    o.model.gemm_dtype = model::DataType::kF32;
  } else if (job.mixed_precision == "auto") {  // --autotune measures both (train/autotune.h)
    const Status bf16 = model::Bf16GemmSupported();
    o.model.gemm_dtype = bf16.ok() ? model::DataType::kBF16 : model::DataType::kF32;
    if (!bf16.ok() && !job.autotune)
      Logf("--mixed-precision auto: f32 (%s)\n", std::string(bf16.message()).c_str());
  } else {
    return InvalidArgumentError("--mixed-precision: expected f32, bf16 or auto, got '" + job.mixed_precision + "'");
  }
  o.model.field_size = job.data.field_size;
  // A keyed table has no rows to size: --feature-size is only the id space, by default every key
  // (Criteo categories then hash into 62 bits; LibSVM/TFRecord ids are taken as written).
  if (o.table.keyed() && !job.given.Has("feature_size") && !job.train.empty()) job.data.feature_size = train::kKeySpace;
  o.model.feature_size = job.data.feature_size;
  if (!job.data.feature_spec.empty()) {  // it decides F and the id space
    StatusOr<data::FeatureSpec> s = data::LoadFeatureSpec(job.data.feature_spec);
    if (!s.ok()) return s.status().WithContext("--feature-spec");
    run.spec = std::move(s).value();
    o.model.field_size = run.spec->field_size;
    o.model.feature_size = run.spec->feature_size;
  }
  if (job.data.oov == "bucket") {  // one out-of-vocabulary row per field, after the vocabulary
    if (o.table.keyed())
      return InvalidArgumentError("--oov bucket: a keyed table (--embedding-table keyed) has no vocabulary to fall "
                                  "out of (an unseen key reads the shared default row, counted as unknown_lookups); "
                                  "leave --oov out");
    if (run.spec)
      return InvalidArgumentError("--oov bucket: a feature spec maps its own ids (a vocabulary's id 0 is its "
                                  "out-of-vocabulary id; hashing never leaves its buckets); leave --oov out");
    o.model.oov_buckets = true;
    o.model.feature_size += o.model.field_size;
  } else if (job.data.oov != "error") {
    return InvalidArgumentError("--oov: expected error or bucket, got '" + job.data.oov + "'");
  }
  o.optimizer.name = job.optimizer;
  o.optimizer.learning_rate = job.learning_rate;
  // The schedule (optim/lr_schedule.h): alone the warm-up starts from 0, under mpirun SetUpRank sets lr / N.
  if (job.lr_warmup_steps != 0) o.lr_warmup_steps = job.lr_warmup_steps;
  if (job.lr_decay != "none") {
    CTRAIN_ASSIGN_OR_RETURN(o.lr_decay, optim::ParseLrDecay(job.lr_decay));
  }
  return Status::OK();
}

Status ResolveRunOptions(TrainRun& run) {
  const TrainJobOptions& job = run.job;
  train::TrainOptions& o = run.o;
  o.parallel = job.parallel;
  if (job.progress == "auto") o.progress = train::ProgressMode::kAuto;
  else if (job.progress == "bar") o.progress = train::ProgressMode::kTerminal;
  else if (job.progress == "log") o.progress = train::ProgressMode::kLog;
  else if (job.progress == "none") o.progress = train::ProgressMode::kNone;
  else return InvalidArgumentError("--progress must be auto|bar|log|none, got '" + job.progress + "'");
  return Status::OK();
}

}  // namespace ctrain::job
