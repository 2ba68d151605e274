// `ctrain convert`: libsvm <-> tfrecord (seed schema) and criteo-tsv/csv -> libsvm/tfrecord.
#include <cstdio>
#include <memory>
#include <vector>

#include "ctrain/base/signals.h"
#include "ctrain/cli/commands.h"
#include "ctrain/cli/data_flags.h"
#include "ctrain/data/file_list.h"
#include "ctrain/data/spec_columns.h"
#include "ctrain/data/spec_reader.h"
#include "ctrain/export/npz_writer.h"
#include "ctrain/io/criteo_vocab_extend.h"
#include "ctrain/io/file.h"

namespace ctrain::cli {
namespace {

struct ConvertFlags {
  std::vector<std::string> inputs;
  std::string output;
  std::string output_format = "tfrecord";
  std::string output_compression = "none";
  int32_t output_id_base = -1;  // -1: same as --id-base, so libsvm round trips are byte-exact
  int64_t hash_buckets = 0;
  int64_t vocab_min_count = 0;
  std::string feature_map_out;
  std::string feature_spec;  // read the inputs through this spec (data/feature_spec.h)
  DataFlags data;
  // Set when the flag was given (0 and negative values are then errors, not "unset").
  CLI::Option* hash_buckets_opt = nullptr;
  CLI::Option* vocab_min_count_opt = nullptr;
  CLI::Option* output_id_base_opt = nullptr;
};

// Largest --hash-buckets: ids beyond 2^40 could never be embedded by a model.
constexpr int64_t kMaxHashBuckets = int64_t{1} << 40;

// Every numeric flag of convert in its range, named with the range; a value
// given as 0 or negative never means "off".
Status CheckConvertFlags(const ConvertFlags& fl) {
  auto given = [](const CLI::Option* o) { return o != nullptr && o->count() > 0; };
  if (given(fl.hash_buckets_opt) && (fl.hash_buckets <= 13 || fl.hash_buckets > kMaxHashBuckets))
    return InvalidArgumentError("--hash-buckets must be in [14, 2^40] (13 numeric ids + at least one bucket), got " +
                                std::to_string(fl.hash_buckets));
  if (given(fl.vocab_min_count_opt) && fl.vocab_min_count < 1)
    return InvalidArgumentError("--vocab-min-count must be >= 1 (categories seen fewer times map to <unk>), got " +
                                std::to_string(fl.vocab_min_count));
  if (given(fl.output_id_base_opt) && fl.output_id_base < 0)
    return InvalidArgumentError("--output-id-base must be >= 0, got " + std::to_string(fl.output_id_base));
  return Status::OK();
}

// The vocabulary of --vocab-min-count: built from the inputs, or with --feature-map OLD, OLD extended by
// them (*added: the new ids).
Status BuildVocabulary(const ConvertFlags& fl, data::ExampleReaderOptions ro, io::CriteoVocabulary* vocab,
                       int64_t* added) {
  for (const auto& path : fl.inputs) {
    if (path == "-" || data::IsStreamPath(path))
      return InvalidArgumentError("--vocab-min-count reads the input twice; it cannot read " +
                                  (path == "-" ? std::string("stdin") : "the stream " + path) +
                                  " (write it to a file first)");
    io::Compression detected;
    CTRAIN_ASSIGN_OR_RETURN(auto f, io::OpenForRead(path, ro.compression, &detected));
    io::CriteoReaderOptions co;
    co.format = ro.format == data::RecordFormat::kCriteoCsv ? io::CriteoFormat::kCsv
                : ro.format == data::RecordFormat::kCriteoTsv ? io::CriteoFormat::kTsv
                                                              : io::CriteoFormat::kAuto;
    co.max_line_bytes = ro.max_line_bytes;
    co.pad_missing_trailing = ro.criteo_pad_missing_trailing;
    CTRAIN_ASSIGN_OR_RETURN(auto r, io::CriteoReader::Open(std::move(f), co));
    io::CriteoRow row;
    for (;;) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, r->Next(&row));
      if (!more) break;
      vocab->Count(row);
    }
  }
  CTRAIN_RETURN_IF_ERROR(vocab->Build(fl.vocab_min_count));
  if (ro.vocabulary == nullptr) return Status::OK();
  // --feature-map OLD: OLD extended append-only, its ids unchanged (io/criteo_vocab_extend.h).
  CTRAIN_ASSIGN_OR_RETURN(*vocab, io::ExtendVocabulary(*ro.vocabulary, *vocab, fl.data.feature_map + " extended",
                                                       added));
  return Status::OK();
}

Status Convert(ConvertFlags& fl) {
  CTRAIN_RETURN_IF_ERROR(CheckConvertFlags(fl));
  // A vocabulary is built (--vocab-min-count) or extended (--feature-map OLD with --vocab-min-count or
  // --feature-map-out): --feature-map alone reads with OLD as is (new categories -> <unk>).
  const bool extend = !fl.data.feature_map.empty() && (fl.vocab_min_count > 0 || !fl.feature_map_out.empty());
  if (!fl.feature_map_out.empty() && fl.vocab_min_count == 0 && !extend)
    return InvalidArgumentError("--feature-map-out " + fl.feature_map_out +
                                ": no vocabulary to write; give --vocab-min-count N (build one) or --feature-map "
                                "OLD (extend OLD, append-only)");
  if (extend && fl.vocab_min_count == 0) fl.vocab_min_count = 1;  // every new category gets an id
  if (extend && fl.hash_buckets > 0)
    return InvalidArgumentError("--hash-buckets and --feature-map are mutually exclusive (hashed ids or vocabulary ids)");
  // -i takes globs and directories exactly as train's --train (data/file_list.h).
  CTRAIN_ASSIGN_OR_RETURN(fl.inputs, data::ExpandFileList(fl.inputs));
  if (fl.vocab_min_count > 0 && fl.output == "-" && fl.feature_map_out.empty())
    return InvalidArgumentError("--vocab-min-count with -o - (stdout) needs --feature-map-out PATH for the "
                                "vocabulary's feature map (its default, OUTPUT.feature_map.txt, has no name here)");
  // Up front: --vocab-min-count reads every input before the output is opened.
  CTRAIN_RETURN_IF_ERROR(io::CheckOutputWritable("--output", fl.output));
  const std::string map_path = fl.feature_map_out.empty() ? fl.output + ".feature_map.txt" : fl.feature_map_out;
  if (fl.vocab_min_count > 0) CTRAIN_RETURN_IF_ERROR(io::CheckOutputWritable("--feature-map-out", map_path));
  {  // No output may overwrite an input (or the other output).
    std::vector<io::FlagPath> in{{"--feature-map", fl.data.feature_map}, {"--feature-spec", fl.feature_spec}},
        out{{"--output", fl.output}};
    for (const std::string& p : fl.inputs) in.push_back({"--input", p});
    if (fl.vocab_min_count > 0) out.push_back({"--feature-map-out", map_path});
    CTRAIN_RETURN_IF_ERROR(io::CheckOutputsAreNotInputs(in, out));
  }
  if (fl.output_format == "npz") {  // one array per spec entry (data/spec_columns.h)
    if (fl.feature_spec.empty())
      return InvalidArgumentError("--output-format npz writes one array per feature-spec entry: give --feature-spec "
                                  "(`ctrain inspect FILE --suggest-spec spec.json` writes one)");
    if (fl.output_compression != "none")
      return InvalidArgumentError("--output-format npz is a zip of .npy files (numpy.savez): --compression " +
                                  fl.output_compression + " does not apply");
    if (fl.output_id_base_opt != nullptr && fl.output_id_base_opt->count() > 0)
      return InvalidArgumentError("--output-id-base applies to LibSVM output; npz ids are the spec's, from 0");
    CTRAIN_ASSIGN_OR_RETURN(data::FeatureSpec spec, data::LoadFeatureSpec(fl.feature_spec));
    std::vector<uint64_t> counts;
    CTRAIN_ASSIGN_OR_RETURN(data::SpecColumns cols, data::ReadSpecColumns(fl.inputs, spec, &counts));
    CTRAIN_ASSIGN_OR_RETURN(std::vector<exporter::NpzArray> arrays, exporter::SpecColumnArrays(cols));
    CTRAIN_RETURN_IF_ERROR(exporter::WriteNpz(fl.output, arrays));
    std::fprintf(stderr, "ctrain convert: wrote %lld records (%zu arrays, feature_size %lld) to %s\n",
                 static_cast<long long>(cols.rows()), arrays.size(), static_cast<long long>(spec.feature_size),
                 fl.output.c_str());
    return Status::OK();
  }
  if (!fl.feature_spec.empty()) {  // the spec maps keys to the seed layout's fields
    CTRAIN_ASSIGN_OR_RETURN(data::FeatureSpec spec, data::LoadFeatureSpec(fl.feature_spec));
    data::ExampleWriterOptions wo;
    CTRAIN_ASSIGN_OR_RETURN(wo.format, data::ParseRecordFormat(fl.output_format));
    CTRAIN_ASSIGN_OR_RETURN(wo.compression, io::ParseCompression(fl.output_compression));
    wo.id_base = fl.output_id_base >= 0 ? fl.output_id_base : 0;
    CTRAIN_ASSIGN_OR_RETURN(auto writer, data::OpenExampleWriter(fl.output, wo));
    CTRAIN_ASSIGN_OR_RETURN(std::vector<uint64_t> counts, data::CopySpecRows(fl.inputs, spec, writer.get()));
    CTRAIN_RETURN_IF_ERROR(writer->Close());
    std::fprintf(stderr, "ctrain convert: wrote %llu records (field_size %d, feature_size %lld) to %s\n",
                 static_cast<unsigned long long>(writer->records()), spec.field_size,
                 static_cast<long long>(spec.feature_size), fl.output.c_str());
    return Status::OK();
  }
  CTRAIN_ASSIGN_OR_RETURN(data::ExampleReaderOptions ro, fl.data.ReaderOptions());
  if (fl.hash_buckets > 0 && fl.vocab_min_count > 0)
    return InvalidArgumentError("--hash-buckets and --vocab-min-count are mutually exclusive");
  if (fl.hash_buckets > 0) ro.feature_size = fl.hash_buckets;
  io::CriteoVocabulary vocab;
  int64_t added = 0;  // --feature-map OLD extended: its new ids
  std::unique_ptr<io::WritableFile> map_file;  // the vocabulary's feature map, published with the data
  if (fl.vocab_min_count > 0) {
    if (ro.format == data::RecordFormat::kAuto && !fl.inputs.empty() && fl.inputs[0] != "-") {
      CTRAIN_ASSIGN_OR_RETURN(data::SniffResult sniff, data::SniffFile(fl.inputs[0], ro.compression));
      ro.format = sniff.format;
    }
    if (ro.format != data::RecordFormat::kCriteoTsv && ro.format != data::RecordFormat::kCriteoCsv)
      return InvalidArgumentError("--vocab-min-count needs --input-format criteo-tsv or criteo-csv");
    CTRAIN_RETURN_IF_ERROR(BuildVocabulary(fl, ro, &vocab, &added));  // ro.vocabulary: --feature-map, extended
    // The map and the data are published together: the map goes to a
    // temporary now and is renamed only after the data is complete, so an
    // interruption never pairs a new map with old data or leaves a map without data.
    CTRAIN_ASSIGN_OR_RETURN(map_file, io::OpenWritableFile(map_path, io::WriteOptions{.atomic = true}));
    CTRAIN_RETURN_IF_ERROR(map_file->Append(vocab.FeatureMapText()));
    ro.vocabulary = &vocab;
  }
  data::ExampleWriterOptions wo;
  CTRAIN_ASSIGN_OR_RETURN(wo.format, data::ParseRecordFormat(fl.output_format));
  CTRAIN_ASSIGN_OR_RETURN(wo.compression, io::ParseCompression(fl.output_compression));
  wo.id_base = fl.output_id_base >= 0 ? fl.output_id_base : ro.id_base;
  CTRAIN_ASSIGN_OR_RETURN(auto writer, data::OpenExampleWriter(fl.output, wo));
  std::vector<int64_t> ids(ro.field_size);
  std::vector<float> vals(ro.field_size);
  float label;
  for (const auto& path : fl.inputs) {
    CTRAIN_ASSIGN_OR_RETURN(auto reader, data::OpenExampleReader(path, ro));
    for (;;) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, reader->Next(&label, ids.data(), vals.data()));
      if (!more) break;
      // The writer refuses what its reader could not read back (B37); name the input record.
      Status w = writer->Write(label, ids, vals);
      if (!w.ok()) {
        return w.code() == StatusCode::kInvalidArgument
                   ? w.WithContext(reader->Location())
                   : w;
      }
    }
    if (reader->records() == 0) {
      // Nothing to convert is a mistake (a wrong path, a cut download), not an empty output.
      const std::string what = reader->empty_input()
                                   ? "empty input: no bytes"
                                   : "empty input: no records (" +
                                         std::string(data::RecordFormatName(reader->format())) +
                                         "; skipped: " + reader->SkippedSummary() + ")";
      return InvalidArgumentError(path + ": " + what + "; nothing written to " + fl.output);
    }
    std::fprintf(stderr, "ctrain convert: %s: %llu records (%s, %s; skipped: %s)\n", path.c_str(),
                 static_cast<unsigned long long>(reader->records()),
                 std::string(data::RecordFormatName(reader->format())).c_str(),
                 std::string(io::CompressionName(reader->compression())).c_str(), reader->SkippedSummary().c_str());
  }
  {
    InterruptDeferral defer("finishing the output files");  // no interrupt between the two renames
    CTRAIN_RETURN_IF_ERROR(writer->Close());
    if (map_file != nullptr) CTRAIN_RETURN_IF_ERROR(map_file->Close());
  }
  std::fprintf(stderr, "ctrain convert: wrote %llu records to %s\n",
               static_cast<unsigned long long>(writer->records()), fl.output.c_str());
  if (map_file != nullptr && extend)
    std::fprintf(stderr,
                 "ctrain convert: vocabulary of %lld ids (%s's %lld unchanged, %lld new with min count %lld) written "
                 "to %s\n",
                 static_cast<long long>(vocab.size()), fl.data.feature_map.c_str(),
                 static_cast<long long>(vocab.size() - added), static_cast<long long>(added),
                 static_cast<long long>(fl.vocab_min_count), map_path.c_str());
  else if (map_file != nullptr)
    std::fprintf(stderr, "ctrain convert: vocabulary of %lld ids (min count %lld) written to %s\n",
                 static_cast<long long>(vocab.size()), static_cast<long long>(fl.vocab_min_count), map_path.c_str());
  if (PendingInterrupt() != 0) ExitForSignal(PendingInterrupt());  // both files are complete
  return Status::OK();
}

}  // namespace

Command AddConvertCommand(CLI::App& app) {
  auto fl = std::make_shared<ConvertFlags>();
  CLI::App* sub = app.add_subcommand("convert", "Convert between libsvm, tfrecord and Criteo TSV/CSV");
  sub->add_option("--input,-i", fl->inputs,
                  "Input files, globs or directories, expanded as train's --train ('-' = stdin)")->required();
  sub->add_option("--output,-o", fl->output, "Output file ('-' = stdout); written atomically")->required();
  fl->data.Register(sub, true, "--input-compression,--input_compression");
  // --input-format is the spelling in the docs; --format (from DataFlags) means the same.
  sub->add_option("--input-format,--input_format", fl->data.format, "auto|libsvm|tfrecord|criteo-tsv|criteo-csv");
  sub->add_option("--output-format,--output_format", fl->output_format, "libsvm|tfrecord|npz (npz: with --feature-spec, one array per spec entry)")->capture_default_str();
  sub->add_option("--compression,--output-compression,--output_compression", fl->output_compression,
                  "Output compression: none|gzip|zlib")->capture_default_str();
  fl->output_id_base_opt = sub->add_option("--output-id-base,--output_id_base", fl->output_id_base,
                  "LibSVM output id base (default: the input --id-base)");
  fl->hash_buckets_opt = sub->add_option("--hash-buckets,--hash_buckets", fl->hash_buckets,
                                         "Criteo: hash categories into [13, N) (sets the feature size); N in [14, 2^40]");
  fl->vocab_min_count_opt = sub->add_option(
      "--vocab-min-count,--vocab_min_count", fl->vocab_min_count,
      "Criteo: build a vocabulary; categories seen fewer times map to the field's <unk> id (>= 1)");
  sub->add_option("--feature-map-out,--feature_map_out", fl->feature_map_out,
                  "Where to write the vocabulary's feature map (default OUTPUT.feature_map.txt); with --feature-map "
                  "OLD: OLD extended append-only (OLD's ids unchanged, new categories after its largest id)");
  sub->add_option("--feature-spec,--feature_spec", fl->feature_spec,
                  "Read the inputs through this feature spec (JSON or TOML; see docs/feature-spec.md) and write the "
                  "seed layout (one id per field; multi-hot specs are refused), or with --output-format npz one "
                  "array per spec entry (multi-hot too)");
  return {sub, [fl]() {
            Status s = Convert(*fl);
            return s.ok() ? 0 : ReportError(s);
          }};
}

}  // namespace ctrain::cli
