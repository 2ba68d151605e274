#include "ctrain/train/data_source.h"

#include <cstdio>

#include "ctrain/data/file_list.h"
#include "ctrain/data/pipe_mode.h"
#include "ctrain/io/criteo_vocab_extend.h"
#include "ctrain/io/feature_hash.h"

namespace ctrain::train {
namespace {

bool IsCriteo(const std::string& f) { return f == "criteo-tsv" || f == "criteo-csv"; }

// "ids" (libsvm, tfrecord: ids as written) or "criteo" (ids made from raw rows).
std::string Family(const std::string& f) { return IsCriteo(f) ? "criteo" : "ids"; }

}  // namespace

std::string CompressionText(io::Compression c) {
  return c == io::Compression::kAuto ? std::string() : std::string(io::CompressionName(c));
}

std::string DescribeDataSource(const DataSourceOptions& d) {
  if (d.format.empty()) return "an unknown format";
  if (!d.feature_spec.empty())
    return d.format + " through a feature spec (" + std::to_string(d.field_size) + " fields, feature_size " +
           std::to_string(d.feature_size) + ")";
  if (d.format == "libsvm") return "libsvm with id base " + std::to_string(d.id_base);
  if (d.format == "tfrecord") return "tfrecord (ids as stored)";
  if (IsCriteo(d.format)) {
    if (!d.feature_map.empty()) return d.format + " (vocabulary ids from feature map " + d.feature_map + ")";
    return d.format + " (hashed ids, " + std::to_string(d.hash_buckets) + " buckets, seed " +
           std::to_string(d.hash_seed) + ")";
  }
  return d.format;
}

DataSourceOptions MakeSpecDataSource(const data::FeatureSpec& spec, const LoadStats& stats) {
  DataSourceOptions d;
  d.from_files = true;
  d.format = spec.input == data::SpecInput::kExample  ? "tfrecord"
             : spec.input == data::SpecInput::kLibSvm ? "libsvm"
                                                      : "libffm";
  d.compression = stats.per_file.empty() ? "" : CompressionText(stats.per_file[0].compression);
  d.id_base = spec.id_base;
  d.field_size = spec.field_size;
  d.feature_size = spec.feature_size;
  d.feature_spec = spec.ToJson();
  return d;
}

StatusOr<std::optional<data::FeatureSpec>> ResolveInferenceSpec(const DataSourceOptions& model,
                                                                const std::string& model_dir,
                                                                const std::string& flag_path) {
  std::optional<data::FeatureSpec> flag;
  if (!flag_path.empty()) {
    CTRAIN_ASSIGN_OR_RETURN(data::FeatureSpec s, data::LoadFeatureSpec(flag_path));
    flag = std::move(s);
  }
  if (model.feature_spec.empty()) {
    if (!flag) return std::optional<data::FeatureSpec>();
    return FailedPreconditionError("--feature-spec " + flag_path + ": the model in " + model_dir +
                                   " was trained without a feature spec (on " + DescribeDataSource(model) +
                                   "): its ids were not made by this spec");
  }
  CTRAIN_ASSIGN_OR_RETURN(data::FeatureSpec stored,
                          data::ParseFeatureSpec(model.feature_spec, "the checkpoint in " + model_dir));
  if (flag && flag->ToJson() != stored.ToJson())
    return FailedPreconditionError("--feature-spec " + flag_path + " differs from the feature spec the model in " +
                                   model_dir + " was trained with (the checkpoint keeps it: leave out "
                                   "--feature-spec to use it)");
  return std::optional<data::FeatureSpec>(std::move(stored));
}

std::string VocabularyFingerprint(const io::CriteoVocabulary& vocabulary) {
  return VocabularyFingerprint(vocabulary, -1);
}

std::string VocabularyFingerprint(const io::CriteoVocabulary& vocabulary, int64_t entries) {
  const std::string text = vocabulary.FeatureMapText(0);
  size_t end = 0;
  for (int64_t n = 0; entries >= 0 && n < entries && end < text.size(); ++n) {
    const size_t nl = text.find('\n', end);
    end = nl == std::string::npos ? text.size() : nl + 1;
  }
  const std::string_view prefix = entries < 0 ? std::string_view(text) : std::string_view(text).substr(0, end);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(io::Hash64(prefix, 0)));
  return buf;
}

Status CheckFeatureMapExtends(const DataSourceOptions& model, const std::string& model_dir,
                              const DataSourceOptions& run, const io::CriteoVocabulary* run_vocab,
                              std::vector<std::string>* notes) {
  if (model.feature_map.empty()) return Status::OK();
  const std::string old_map = model.feature_map + " (" + std::to_string(model.vocab_entries) + " entries)";
  if (run.feature_map.empty() || run_vocab == nullptr)
    return FailedPreconditionError(
        "the model in " + model_dir + " was trained on ids from the feature map " + old_map +
        "; this run's --train has no feature map, so nothing says its ids mean the same categories: give the map "
        "its ids came from with --feature-map (ctrain convert writes it beside its output as "
        "<output>.feature_map.txt), extended from the old one with `ctrain convert --feature-map " +
        model.feature_map + "`");
  if (model.vocab_fingerprint.empty() || model.vocab_entries <= 0) {
    notes->push_back("the checkpoint in " + model_dir + " records no entry count of its feature map " +
                     model.feature_map + " (older ctrain): cannot check that " + run.feature_map + " extends it");
    return Status::OK();
  }
  const int64_t have = io::VocabularyEntries(*run_vocab);
  if (have >= model.vocab_entries && VocabularyFingerprint(*run_vocab, model.vocab_entries) == model.vocab_fingerprint)
    return Status::OK();
  return FailedPreconditionError(
      "the feature map " + run.feature_map + " (" + std::to_string(have) + " entries) does not extend the map the "
      "model in " + model_dir + " was trained with, " + old_map + ": " +
      (have < model.vocab_entries ? std::string("it has fewer entries")
                                  : "its first " + std::to_string(model.vocab_entries) +
                                        " entries in id order differ (a rebuilt vocabulary renumbers categories)") +
      ", so the model's rows would belong to other categories; extend the old map append-only with `ctrain convert "
      "--feature-map " + model.feature_map + " --feature-map-out NEW ...` (old ids unchanged, new categories after "
      "them) and convert the new data with it");
}

StatusOr<std::vector<InputFormat>> DetectInputFormats(const std::vector<std::string>& paths,
                                                      const data::ExampleReaderOptions& reader) {
  std::vector<InputFormat> out;
  const std::string given =
      reader.format == data::RecordFormat::kAuto ? "" : std::string(data::RecordFormatName(reader.format));
  for (const std::string& p : paths) {
    if (p == "-" || p.rfind(data::kPipeChannelPrefix, 0) == 0) {
      out.push_back({p, given, ""});
      continue;
    }
    CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> expanded, data::ExpandFileList({p}));
    for (const std::string& f : expanded) {
      if (data::IsStreamPath(f) || data::RegularFileSize(f) <= 0) {  // a FIFO, or empty (reported when read)
        out.push_back({f, given, ""});
        continue;
      }
      CTRAIN_ASSIGN_OR_RETURN(data::SniffResult s, data::SniffFile(f, reader.compression, reader.format));
      out.push_back({f, given.empty() ? std::string(data::RecordFormatName(s.format)) : given,
                     CompressionText(s.compression)});
    }
  }
  return out;
}

DataSourceOptions MakeDataSource(const std::string& format, const std::string& compression,
                                 const data::ExampleReaderOptions& reader, const std::string& feature_map) {
  DataSourceOptions d;
  d.from_files = true;
  d.format = format;
  d.compression = compression;
  d.id_base = reader.id_base;
  d.field_size = reader.field_size;
  d.feature_size = reader.feature_size;
  if (reader.vocabulary != nullptr) {
    d.feature_map = feature_map;
    d.vocab_fingerprint = VocabularyFingerprint(*reader.vocabulary);
    d.vocab_entries = io::VocabularyEntries(*reader.vocabulary);
  } else {
    d.hash_buckets = reader.feature_size;
    d.hash_seed = 0;  // the Criteo featurizer's fixed seed (data/example_reader.cc)
  }
  return d;
}

StatusOr<DataSourceOptions> DescribeTrainingData(const std::vector<InputFormat>& inputs,
                                                 const data::ExampleReaderOptions& reader,
                                                 const std::string& feature_map) {
  const InputFormat* first = nullptr;
  for (const InputFormat& in : inputs) {
    if (in.format.empty()) continue;
    if (first == nullptr) {
      first = &in;
    } else if (Family(in.format) != Family(first->format)) {
      return InvalidArgumentError("training inputs mix encodings: " + first->path + " is " + first->format + ", " +
                                  in.path + " is " + in.format +
                                  " (Criteo rows and id files give unrelated ids; convert them to one encoding)");
    }
  }
  return MakeDataSource(first ? first->format : "", first ? first->compression : "", reader, feature_map);
}

namespace {

// CheckInputMatchesModel with the model side named by `trained` ("the model in
// <dir> was trained on ") and `model_dir` used in notes.
Status CheckEncoding(const DataSourceOptions& model, const std::string& model_dir, const std::string& trained,
                     const DataSourceOptions& input, const std::string& input_name, std::vector<std::string>* notes) {
  auto note = [&](const std::string& n) {
    for (const std::string& have : *notes)
      if (have == n) return;
    notes->push_back(n);
  };
  if (!model.recorded()) {
    note("the checkpoint in " + model_dir +
         " records no data options (older ctrain, or trained from in-memory data): cannot check that the input is "
         "encoded like the training data");
    return Status::OK();
  }
  auto refuse = [&](const std::string& why) {
    return FailedPreconditionError(input_name + " is " + DescribeDataSource(input) + "; " + trained +
                                   DescribeDataSource(model) + ": " + why);
  };
  if (model.feature_size > 0 && input.feature_size > 0 && model.feature_size != input.feature_size)
    return FailedPreconditionError(input_name + " is read with feature_size " + std::to_string(input.feature_size) +
                                   "; " + trained + "feature_size " + std::to_string(model.feature_size) +
                                   " (fixed at training time; leave --feature-size out)");
  if (model.format.empty()) {
    note("the checkpoint in " + model_dir +
         " does not record the training data's format (older ctrain, or a stream read with --format auto): cannot "
         "check that the input's format matches; checked the id base and feature map only");
    if (input.format == "libsvm" && model.id_base != input.id_base)
      return FailedPreconditionError(input_name + " is read with --id-base " + std::to_string(input.id_base) + "; " +
                                     trained + "data with id base " + std::to_string(model.id_base) +
                                     " (every id would shift by " + std::to_string(input.id_base - model.id_base) +
                                     "; leave --id-base out)");
    return Status::OK();
  }
  if (input.format.empty()) return Status::OK();  // a stream: checked again once read
  if (Family(model.format) != Family(input.format)) {
    return refuse(IsCriteo(input.format)
                      ? "its rows would be turned into ids unrelated to the model's; give it in the training "
                        "format (convert it the way the training data was made)"
                      : "its ids are not the ids the model's Criteo featurizer made; give raw Criteo rows, or "
                        "train on this encoding");
  }
  if (!IsCriteo(model.format)) {
    if (model.format == "libsvm" && input.format == "libsvm" && model.id_base != input.id_base)
      return refuse("every id would shift by " + std::to_string(input.id_base - model.id_base) +
                    " (leave --id-base out to use the model's)");
    if (model.format != input.format)
      note(input_name + " is " + input.format + ", the model was trained on " + DescribeDataSource(model) +
           ": ids are taken as stored (right for files that `ctrain convert` made from the training data)");
    return Status::OK();
  }
  if (model.feature_map.empty() != input.feature_map.empty())
    return refuse(model.feature_map.empty() ? "the model's ids are hashes; leave --feature-map out"
                                            : "the model's ids come from its vocabulary; leave --feature-map out "
                                              "to use it");
  if (!model.feature_map.empty()) {
    if (model.vocab_fingerprint.empty())
      note("the checkpoint in " + model_dir +
           " records no vocabulary fingerprint (older ctrain): cannot check that the feature map is unchanged");
    else if (model.vocab_fingerprint != input.vocab_fingerprint)
      return FailedPreconditionError(input_name + " is read with the vocabulary of " + input.feature_map +
                                     " (fingerprint " + input.vocab_fingerprint + "); " + trained +
                                     "a different vocabulary (" + model.feature_map + ", fingerprint " +
                                     model.vocab_fingerprint +
                                     "): the feature map changed since training; use the training run's map");
    return Status::OK();
  }
  if (model.hash_buckets > 0 && (model.hash_buckets != input.hash_buckets || model.hash_seed != input.hash_seed))
    return refuse("different hashing gives different ids");
  return Status::OK();
}

}  // namespace

Status CheckInputMatchesModel(const DataSourceOptions& model, const std::string& model_dir,
                              const DataSourceOptions& input, const std::string& input_name,
                              std::vector<std::string>* notes) {
  return CheckEncoding(model, model_dir, "the model in " + model_dir + " was trained on ", input, input_name, notes);
}

Status CheckValidMatchesTraining(const DataSourceOptions& training, const std::vector<std::string>& train_paths,
                                 const std::vector<InputFormat>& valid, const data::ExampleReaderOptions& reader,
                                 const std::string& feature_map) {
  if (training.format.empty()) return Status::OK();  // a stream with --format auto: checked once it is read
  std::string names;
  for (const std::string& p : train_paths) names += (names.empty() ? "" : " ") + p;
  const std::string trained = "this run trains on --train " + names + ", which is ";
  std::vector<std::string> notes;
  for (const InputFormat& f : valid) {
    const DataSourceOptions in = MakeDataSource(f.format, f.compression, reader, feature_map);
    CTRAIN_RETURN_IF_ERROR(CheckEncoding(training, "--train " + names, trained, in, "--valid " + f.path, &notes));
  }
  return Status::OK();
}

Status CheckInputsMatchModel(const DataSourceOptions& model, const std::string& model_dir,
                             const std::vector<InputFormat>& inputs, const data::ExampleReaderOptions& reader,
                             const std::string& feature_map, std::vector<std::string>* notes) {
  for (const InputFormat& f : inputs) {
    const DataSourceOptions in = MakeDataSource(f.format, f.compression, reader, feature_map);
    CTRAIN_RETURN_IF_ERROR(CheckInputMatchesModel(model, model_dir, in, "--input " + f.path, notes));
  }
  return Status::OK();
}

Status RecordFormatsRead(const std::vector<InputFormat>& read, const std::string& known_from, DataSourceOptions* d) {
  std::string from = known_from;
  for (const InputFormat& in : read) {
    if (in.format.empty()) continue;
    if (d->format.empty()) {
      d->format = in.format;
      d->compression = in.compression;
      from = in.path;
    } else if (Family(in.format) != Family(d->format)) {
      return InvalidArgumentError("training inputs mix encodings: " + from + " is " + d->format + ", " + in.path +
                                  " is " + in.format +
                                  " (Criteo rows and id files give unrelated ids; convert them to one encoding)");
    }
  }
  return Status::OK();
}

std::vector<InputFormat> InputFormatsRead(const LoadStats& stats) {
  std::vector<InputFormat> out;
  for (const LoadStats::File& f : stats.per_file)
    out.push_back({f.path, std::string(data::RecordFormatName(f.format)), CompressionText(f.compression)});
  return out;
}

}  // namespace ctrain::train
