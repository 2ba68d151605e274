// DatasetDef: the data service's dataset definition (data_service.proto), built
// from what the trainer would read locally (train/stream_input.h StreamInput),
// and the pipeline a worker runs for one split of it.
//
// A split (SplitId: epoch, split_index of num_splits, copy) is read as
// data::Pipeline over the dataset's files with num_shards = num_splits,
// shard_index = split_index (data/shard.h: whole files when there are at least
// as many files as splits, else every num_splits-th record), one pass, and the
// shuffle seed EpochShuffleSeed(seed, epoch) — the seed the local trainer uses
// for that epoch (train/stream_input.h) — mixed with Mix64(copy) for copy > 0.
// deterministic is forced on: a split's batches are a pure function of
// (definition, split), so another worker can re-produce or resume it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/data/example_reader.h"
#include "ctrain/data/feature_spec.h"
#include "ctrain/data/pipeline.h"
#include "ctrain/dataservice/data_service.pb.h"
#include "ctrain/io/criteo.h"
#include "ctrain/train/stream_input.h"

namespace ctrain::dataservice {

// Largest batch a worker produces: bounds what one frame can carry.
inline constexpr int64_t kMaxBatchSize = int64_t{1} << 22;
// Largest number of splits per epoch.
inline constexpr int32_t kMaxSplits = 1 << 16;

// The definition of `input` read in batches of `batch_size` with `seed`
// (shuffled with the input's shuffle_buffer_size when `shuffle`);
// `feature_map`: the path input.reader.vocabulary was loaded from ("" = hashing). Files are
// expanded (globs, directories) and made absolute here, on the trainer, so
// the workers read the same list; a path or pattern that names nothing on the
// trainer's host (NotFound) is sent as it is, made absolute, and the dispatcher
// expands it on its host (a SageMaker channel given to the data hosts only,
// docs/launch.md; a path on neither host is the dispatcher's NotFound).
// Errors: ExpandFileList's other errors; InvalidArgument for stdin, FIFOs and
// pipe: channels (a worker cannot read the trainer's stream) and for a cache
// option (workers stream each split once).
// `feature_spec`: a feature spec's canonical JSON (FeatureSpec::ToJson; "" =
// none): the workers read the files through it (split_source.h), and the
// options that do not apply to a spec (the pipeline's shuffle, order,
// num_parallel_reads > 1, a feature map, the records reader's options) are
// refused by name.
StatusOr<proto::DatasetDef> MakeDatasetDef(const train::StreamInput& input, const std::string& feature_map,
                                           int64_t batch_size, uint64_t seed, bool shuffle,
                                           const std::string& feature_spec = "");

// Checks every field of a definition received over the wire.
// Errors: InvalidArgument naming the field (no files, an empty or relative
// path, unknown format or compression, field_size / batch_size / threads out
// of range, a bad stage order).
Status ValidateDatasetDef(const proto::DatasetDef& def);

// The definition's feature spec (DatasetDef.feature_spec, set: FeatureSpec::ToJson's
// canonical form, vocabularies inline). Errors: InvalidArgument "dataset
// definition: feature_spec: ..." when it does not parse, names a
// "vocabulary_file" (a worker opens no path a spec names) or is not canonical.
StatusOr<data::FeatureSpec> ParseDatasetSpec(const proto::DatasetDef& def);

// Checks a split against kMaxSplits: 0 <= split_index < num_splits, epoch >= 0,
// copy >= 0. Errors: InvalidArgument naming the field.
Status ValidateSplit(const proto::SplitId& split);

// A stable fingerprint of the definition (hex, 16 digits): equal definitions
// (field by field) give equal ids. Used to deduplicate registrations.
std::string DatasetFingerprint(const proto::DatasetDef& def);

// The shuffle seed of `epoch` for a run seeded `seed` (train/stream_input.h).
uint64_t EpochShuffleSeed(uint64_t seed, int64_t epoch);

// What a worker needs to read one split: reader and pipeline options (the
// vocabulary, when the definition names a feature map, is owned here).
struct SplitReadPlan {
  data::ExampleReaderOptions reader;
  data::PipelineOptions pipeline;
  std::unique_ptr<io::CriteoVocabulary> vocabulary;
};
// Errors: ValidateDatasetDef's and ValidateSplit's; the feature map's load errors.
// `parse_threads` becomes num_parallel_calls.
StatusOr<SplitReadPlan> PlanSplitRead(const proto::DatasetDef& def, const proto::SplitId& split, int32_t parse_threads);

// "epoch E split S/N" (plus " copy C" when C > 0), for messages.
std::string SplitName(const proto::SplitId& split);

}  // namespace ctrain::dataservice
