// SplitSource: what a data-service worker reads for one split (dataset_def.h
// SplitId) of a dataset definition: the batches, in order, and what the read
// counted. Two kinds:
//
//   records  (DatasetDef.feature_spec empty) data::Pipeline over the files with
//            PlanSplitRead's options: the trainer's own input pipeline.
//   spec     (DatasetDef.feature_spec set) every file read through the feature
//            spec (data/spec_reader.h: tf.Example TFRecords with any keys,
//            LibSVM with a field map, libFFM), one row per record, batched in
//            the layout the trainer uses for the spec (train/dataset.cc
//            LoadSpecDataset): one-hot rows ids/values [B, F] for a one-hot
//            spec, multi-hot rows (field_splits [B*F + 1], data/batch.h) for a
//            multi-hot one. data::SpecColumnsBuilder::AppendBatch turns them
//            into the spec's arrays (data/spec_columns.h).
//            Sharding as data/shard.h's first two levels: file level (files
//            >= num_splits: split i reads files i, i+n, ...), else record level
//            (every split reads every file and keeps record r of file f when
//            (f + r) % n == i). Rows in file order (no shuffle: refused by
//            ValidateDatasetDef), batches of batch_size that may span files,
//            the split's last one partial unless drop_remainder.
//
// A split's batches are a pure function of (definition, split) in both kinds,
// which exactly-once delivery relies on (client.h).
//
// Thread safety: one consumer thread; stats() from that thread too.
#pragma once

#include <cstdint>
#include <memory>

#include "ctrain/base/status.h"
#include "ctrain/data/batch.h"
#include "ctrain/data/pipeline_stats.h"
#include "ctrain/dataservice/data_service.pb.h"

namespace ctrain::dataservice {

class SplitSource {
 public:
  virtual ~SplitSource() = default;
  // The next batch of the split; false at its end. Errors name the file and
  // the record or line (the readers' messages) and are sticky.
  virtual StatusOr<bool> Next(data::Batch* batch) = 0;
  // What the read counted so far: inputs opened (name, format, compression,
  // records, finished, input_bytes), criteo_padded_rows, oov_ids.
  virtual data::PipelineStats stats() const = 0;
};

// Opens `split` of `def` (checked with ValidateDatasetDef and ValidateSplit).
// `parse_threads`: the records kind's num_parallel_calls (the spec kind reads
// on the calling thread). Errors: those checks'; the feature map's or feature
// spec's; opening the pipeline.
StatusOr<std::unique_ptr<SplitSource>> OpenSplit(const proto::DatasetDef& def, const proto::SplitId& split,
                                                 int32_t parse_threads);

}  // namespace ctrain::dataservice
