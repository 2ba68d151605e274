#include "ctrain/base/path.h"
#include "ctrain/dataservice/dataset_def.h"

#include <algorithm>
#include <filesystem>

#include "ctrain/data/file_list.h"
#include "ctrain/io/feature_hash.h"
#include "ctrain/train/dataset.h"

namespace ctrain::dataservice {

StatusOr<proto::DatasetDef> MakeDatasetDef(const train::StreamInput& input, const std::string& feature_map,
                                           int64_t batch_size, uint64_t seed, bool shuffle,
                                           const std::string& feature_spec) {
  const data::PipelineOptions& p = input.pipeline;
  if (!p.cache.empty())
    return InvalidArgumentError("--cache cannot be used with --data-service: the workers stream each split once");
  auto refuse_stream = [](const std::string& f) {
    return InvalidArgumentError(train::InputDisplayName(f) +
                                ": a stream cannot be read through the data service (the workers read the files "
                                "themselves); give regular files");
  };
  proto::DatasetDef def;
  for (const std::string& pattern : input.files) {
    if (pattern == "-" || pattern.rfind("pipe:", 0) == 0) return refuse_stream(pattern);
    StatusOr<std::vector<std::string>> here = data::ExpandFileList({pattern});
    std::vector<std::string> files;
    if (here.ok()) {
      files = std::move(*here);
    } else if (here.status().code() == StatusCode::kNotFound) {
      files = {pattern};  // nothing here: the dispatcher expands it on its host (a data host's channel)
    } else {
      return here.status();
    }
    for (const std::string& f : files) {
      if (f == "-" || data::IsStreamPath(f) || f.rfind("pipe:", 0) == 0) return refuse_stream(f);
      const std::string abs = AbsolutePath(f);  // base/path.h
      if (abs.empty() || abs[0] != '/') return InvalidArgumentError(f + ": cannot make the path absolute");
      def.add_files(abs);
    }
  }
  const data::ExampleReaderOptions& r = input.reader;
  def.set_format(std::string(data::RecordFormatName(r.format)));
  def.set_compression(std::string(io::CompressionName(r.compression)));
  def.set_field_size(r.field_size);
  def.set_id_base(r.id_base);
  def.set_feature_size(r.feature_size);
  def.set_id_limit(r.id_limit);
  def.set_oov_buckets(r.oov_buckets);
  def.set_criteo_pad_missing_trailing(r.criteo_pad_missing_trailing);
  if (!feature_map.empty()) {
    std::error_code ec;
    def.set_feature_map(std::filesystem::absolute(feature_map, ec).lexically_normal().string());
  }
  def.set_label_key(r.schema.label_key);
  def.set_ids_key(r.schema.ids_key);
  def.set_values_key(r.schema.values_key);
  def.set_skip_corrupt_records(r.skip_corrupt_records);
  def.set_max_skipped_records(r.max_skipped_records);
  def.set_max_line_bytes(r.max_line_bytes);
  def.set_num_parallel_reads(p.num_parallel_reads);
  def.set_shuffle_buffer_size(shuffle ? p.shuffle_buffer_size : 0);
  def.set_seed(seed);
  def.set_reshuffle_each_iteration(p.reshuffle_each_iteration);
  def.set_batch_size(batch_size);
  def.set_drop_remainder(p.drop_remainder);
  def.set_order(p.order);
  def.set_read_chunk_records(p.read_chunk_records);
  if (!feature_spec.empty()) {
    def.set_feature_spec(feature_spec);
    CTRAIN_ASSIGN_OR_RETURN(data::FeatureSpec spec, ParseDatasetSpec(def));
    def.set_field_size(spec.field_size);  // the batches' F
    def.set_feature_size(std::max<int64_t>(1, spec.feature_size));
  }
  CTRAIN_RETURN_IF_ERROR(ValidateDatasetDef(def));
  return def;
}

Status ValidateDatasetDef(const proto::DatasetDef& def) {
  auto bad = [](const std::string& what) { return InvalidArgumentError("dataset definition: " + what); };
  if (def.files_size() == 0) return bad("no files");
  for (const std::string& f : def.files())
    if (f.empty() || f[0] != '/') return bad("file \"" + f + "\" is not an absolute path");
  if (!data::ParseRecordFormat(def.format()).ok()) return bad("unknown format \"" + def.format() + "\"");
  if (!io::ParseCompression(def.compression()).ok())
    return bad("unknown compression \"" + def.compression() + "\"");
  if (def.field_size() < 1 || def.field_size() > (1 << 20))
    return bad("field_size " + std::to_string(def.field_size()) + " is outside [1, 2^20]");
  if (def.id_base() < 0) return bad("id_base must be >= 0");
  if (def.feature_size() < 1) return bad("feature_size must be >= 1");
  if (def.id_limit() < 0) return bad("id_limit must be >= 0");
  if (def.oov_buckets() && def.id_limit() == 0) return bad("oov_buckets needs an id_limit");
  if (!def.feature_map().empty() && def.feature_map()[0] != '/')
    return bad("feature_map \"" + def.feature_map() + "\" is not an absolute path");
  if (def.max_line_bytes() < 1 || def.max_line_bytes() > (uint64_t{1} << 40))
    return bad("max_line_bytes is outside [1, 2^40]");
  if (def.num_parallel_reads() < 1 || def.num_parallel_reads() > 1024)
    return bad("num_parallel_reads " + std::to_string(def.num_parallel_reads()) + " is outside [1, 1024]");
  if (def.shuffle_buffer_size() < 0 || def.shuffle_buffer_size() > (int64_t{1} << 32))
    return bad("shuffle_buffer_size is outside [0, 2^32]");
  if (def.batch_size() < 1 || def.batch_size() > kMaxBatchSize)
    return bad("batch_size " + std::to_string(def.batch_size()) + " is outside [1, " + std::to_string(kMaxBatchSize) +
               "]");
  if (def.read_chunk_records() < 1 || def.read_chunk_records() > (1 << 20))
    return bad("read_chunk_records is outside [1, 2^20]");
  if (!def.feature_spec().empty()) {  // split_source.h: what a spec read does not do is refused by name
    CTRAIN_RETURN_IF_ERROR(ParseDatasetSpec(def).status());
    const data::ExampleReaderOptions defaults;
    auto refuse = [&](const std::string& what) {
      return bad(what + " does not apply with a feature spec (the spec decides the layout and the rows are read in "
                 "file order): leave it out");
    };
    if (def.format() != "auto") return refuse("format \"" + def.format() + "\"");
    if (!def.feature_map().empty()) return refuse("a feature map");
    if (def.oov_buckets()) return refuse("oov_buckets");
    if (def.criteo_pad_missing_trailing()) return refuse("criteo_pad_missing_trailing");
    if (def.skip_corrupt_records()) return refuse("skip_corrupt_records");
    if (def.id_limit() != 0) return refuse("id_limit");
    if (def.id_base() != defaults.id_base) return refuse("id_base");
    if (def.shuffle_buffer_size() != 0) return refuse("shuffle_buffer_size");
    if (def.num_parallel_reads() != 1) return refuse("num_parallel_reads " + std::to_string(def.num_parallel_reads()));
    if (def.order() != data::kDefaultPipelineOrder) return refuse("order \"" + def.order() + "\"");
  }
  data::PipelineOptions p;
  p.order = def.order();
  p.batch_size = def.batch_size();
  p.shuffle_buffer_size = def.shuffle_buffer_size();
  if (Status s = data::ValidatePipelineOptions(p); !s.ok()) return bad(std::string(s.message()));
  return Status::OK();
}

Status ValidateSplit(const proto::SplitId& split) {
  if (split.num_splits() < 1 || split.num_splits() > kMaxSplits)
    return InvalidArgumentError("split: num_splits " + std::to_string(split.num_splits()) + " is outside [1, " +
                                std::to_string(kMaxSplits) + "]");
  if (split.split_index() < 0 || split.split_index() >= split.num_splits())
    return InvalidArgumentError("split: split_index " + std::to_string(split.split_index()) + " is outside [0, " +
                                std::to_string(split.num_splits()) + ")");
  if (split.epoch() < 0) return InvalidArgumentError("split: epoch must be >= 0");
  if (split.copy() < 0 || split.copy() > kMaxSplits) return InvalidArgumentError("split: copy is out of range");
  return Status::OK();
}

std::string DatasetFingerprint(const proto::DatasetDef& def) {
  // Field by field in a fixed order (not the proto bytes: their encoding of
  // maps and unknown fields is not canonical).
  uint64_t h = 0x6374726169ull;
  auto add = [&h](std::string_view s) { h = io::Hash64(s, h ^ s.size()); };
  auto num = [&add](int64_t v) { add(std::to_string(v)); };
  for (const std::string& f : def.files()) add(f);
  add("|");
  add(def.format()), add(def.compression()), num(def.field_size()), num(def.id_base()), num(def.feature_size());
  num(def.id_limit()), add(def.feature_map()), add(def.label_key()), add(def.ids_key()), add(def.values_key());
  num(def.skip_corrupt_records()), num(static_cast<int64_t>(def.max_skipped_records()));
  num(static_cast<int64_t>(def.max_line_bytes())), num(def.num_parallel_reads()), num(def.shuffle_buffer_size());
  num(static_cast<int64_t>(def.seed())), num(def.reshuffle_each_iteration()), num(def.batch_size());
  num(def.drop_remainder()), add(def.order()), num(def.read_chunk_records());
  if (def.oov_buckets()) add("oov_buckets");  // older definitions keep their fingerprint
  if (def.criteo_pad_missing_trailing()) add("criteo_pad_missing_trailing");
  if (!def.feature_spec().empty()) add("feature_spec"), add(def.feature_spec());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

StatusOr<data::FeatureSpec> ParseDatasetSpec(const proto::DatasetDef& def) {
  const std::string& text = def.feature_spec();
  auto bad = [](const std::string& why) { return InvalidArgumentError("dataset definition: feature_spec: " + why); };
  // A client sends FeatureSpec::ToJson (vocabularies inline): a worker never opens a path named in a
  // spec it received (a JSON string value cannot hold the key's unescaped quotes, so this finds keys only).
  if (text.find("\"vocabulary_file\"") != std::string::npos)
    return bad("\"vocabulary_file\" is not accepted in a dataset definition: send the spec's canonical form "
               "(vocabularies inline; ctrain's clients do)");
  StatusOr<data::FeatureSpec> spec = data::ParseFeatureSpec(text, "feature_spec.json", /*base_dir=*/"/nonexistent");
  if (!spec.ok()) return bad(std::string(spec.status().message()));
  if (spec->ToJson() != text)
    return bad("not in canonical form (FeatureSpec::ToJson, which ctrain's clients send): the fingerprint of a "
               "dataset must not depend on how its spec was written");
  return spec;
}

uint64_t EpochShuffleSeed(uint64_t seed, int64_t epoch) {
  return seed ^ io::Mix64(static_cast<uint64_t>(epoch) + 1) ^ io::Mix64(1);
}

StatusOr<SplitReadPlan> PlanSplitRead(const proto::DatasetDef& def, const proto::SplitId& split,
                                      int32_t parse_threads) {
  CTRAIN_RETURN_IF_ERROR(ValidateDatasetDef(def));
  CTRAIN_RETURN_IF_ERROR(ValidateSplit(split));
  SplitReadPlan plan;
  data::ExampleReaderOptions& r = plan.reader;
  CTRAIN_ASSIGN_OR_RETURN(r.format, data::ParseRecordFormat(def.format()));
  CTRAIN_ASSIGN_OR_RETURN(r.compression, io::ParseCompression(def.compression()));
  r.field_size = def.field_size();
  r.id_base = def.id_base();
  r.feature_size = def.feature_size();
  r.id_limit = def.id_limit();
  r.oov_buckets = def.oov_buckets();
  r.criteo_pad_missing_trailing = def.criteo_pad_missing_trailing();
  r.schema.label_key = def.label_key();
  r.schema.ids_key = def.ids_key();
  r.schema.values_key = def.values_key();
  r.schema.field_size = def.field_size();
  r.skip_corrupt_records = def.skip_corrupt_records();
  r.max_skipped_records = def.max_skipped_records();
  r.max_line_bytes = def.max_line_bytes();
  if (!def.feature_map().empty()) {
    CTRAIN_ASSIGN_OR_RETURN(auto v, io::CriteoVocabulary::LoadFeatureMap(def.feature_map()));
    plan.vocabulary = std::make_unique<io::CriteoVocabulary>(std::move(v));
    r.vocabulary = plan.vocabulary.get();
  }
  data::PipelineOptions& p = plan.pipeline;
  p.num_parallel_reads = def.num_parallel_reads();
  p.deterministic = true;
  p.num_parallel_calls = std::max(1, parse_threads);
  p.shuffle_buffer_size = def.shuffle_buffer_size();
  // As the local trainer runs it (train/stream_input.cc): the pipeline's own
  // pass seed depends on this flag too, so leaving it at its default made
  // reshuffle_each_iteration = false read in another order than locally.
  p.reshuffle_each_iteration = def.reshuffle_each_iteration();
  p.shuffle_seed = (def.reshuffle_each_iteration() ? EpochShuffleSeed(def.seed(), split.epoch()) : def.seed()) ^
                   (split.copy() > 0 ? io::Mix64(split.copy()) : 0);
  p.batch_size = def.batch_size();
  p.drop_remainder = def.drop_remainder();
  p.order = def.order();
  p.read_chunk_records = def.read_chunk_records();
  p.num_shards = split.num_splits();
  p.shard_index = split.split_index();
  p.shard_byte_ranges = true;  // fewer files than splits: each split reads its byte range of each file
  p.epochs = 1;
  p.print_warnings = false;
  return plan;
}

std::string SplitName(const proto::SplitId& split) {
  std::string s = "epoch " + std::to_string(split.epoch()) + " split " + std::to_string(split.split_index()) + "/" +
                  std::to_string(split.num_splits());
  if (split.copy() > 0) s += " copy " + std::to_string(split.copy());
  return s;
}

}  // namespace ctrain::dataservice
