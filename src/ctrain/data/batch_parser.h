// BatchParser: the vectorised parse of a whole batch of raw records
// (raw_record.h) into a data::Batch in the seed's fixed layout
// (labels[B], ids[B*F], values[B*F], F = ExampleReaderOptions::field_size).
//
// Per record, by its format:
//   tfrecord    io::ParseSeedExample with ExampleReaderOptions::schema
//   libsvm      io::ParseLibSvmLine (exactly F pairs, ids minus id_base)
//   criteo-*    io::ParseCriteoLine, then the vocabulary or feature hashing
//               (feature_size buckets), as OpenExampleReader does
// so a pipeline yields exactly the rows the sequential ExampleReader yields.
//
// Errors name the record's source: TFRecord "<file>: record <i> at offset <o>:
// <parse error>"; text "<file>:<line>:<column>: <what>" (io/text_location.h).
// On error *out holds unspecified rows.
//
// Thread safety: a BatchParser is used by one thread at a time (it owns
// scratch space); create one per parse thread. `names` must be thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/data/batch.h"
#include "ctrain/data/example_reader.h"
#include "ctrain/data/raw_record.h"
#include "ctrain/io/criteo.h"

namespace ctrain::data {

// File order of records: (pass, file, index).
inline bool EarlierInFileOrder(const RecordSource& a, const RecordSource& b) {
  if (a.pass != b.pass) return a.pass < b.pass;
  if (a.file != b.file) return a.file < b.file;
  return a.index < b.index;
}

// The display name of (file, pass), for error messages only.
using SourceNameFn = std::function<std::string(uint32_t file, uint32_t pass)>;

class BatchParser {
 public:
  // Errors: InvalidArgument for field_size <= 0, Criteo with field_size != 39,
  // or bad hashing options.
  static StatusOr<BatchParser> Create(const ExampleReaderOptions& options, SourceNameFn names);

  // Replaces *out's rows with the parse of `raw` (capacity is kept).
  // When several records of the batch are bad, the error is the one of the
  // earliest record in file order (pass, file, index), not in batch order, so
  // a shuffled batch reports the same record whatever the shuffle seed.
  Status Parse(const RawBatch& raw, Batch* out);

  // Called (from the parsing thread) with the source and error of the record
  // Parse reports, before Parse returns. Used by Pipeline to find the first bad
  // record in file order.
  using ErrorObserver = std::function<void(const RecordSource&, const Status&)>;
  void set_error_observer(ErrorObserver observer) { observer_ = std::move(observer); }
  // Criteo with criteo_pad_missing_trailing: each row that lacked trailing
  // cells adds 1 here (shared by the pipeline's parse threads; may be null).
  void set_padded_rows_counter(std::atomic<uint64_t>* counter) { padded_rows_ = counter; }
  // With ExampleReaderOptions::oov_buckets: the ids each parsed batch read as
  // their field's out-of-vocabulary row are added here (may be null).
  void set_oov_ids_counter(std::atomic<uint64_t>* counter) { oov_ids_ = counter; }

 private:
  BatchParser() = default;
  Status ParseOne(std::string_view rec, const RecordSource& src, float* label, int64_t* ids, float* values);
  // ParseOne + the options_.id_limit range rule (IdRange) with the record's location; *oov counts
  // the ids read as out-of-vocabulary rows.
  Status ParseChecked(std::string_view rec, const RecordSource& src, float* label, int64_t* ids, float* values,
                      uint64_t* oov);
  std::string Name(const RecordSource& src) const { return names_ ? names_(src.file, src.pass) : "<input>"; }

  ExampleReaderOptions options_;
  io::SeedSchema schema_;
  io::CriteoHashOptions hash_;
  SourceNameFn names_;
  ErrorObserver observer_;
  std::atomic<uint64_t>* padded_rows_ = nullptr;
  std::atomic<uint64_t>* oov_ids_ = nullptr;
  io::CriteoRow row_;
};

}  // namespace ctrain::data
