// SpecReader: reads the rows of one input file through a feature spec
// (data/feature_spec.h): tf.train.Example TFRecords (plain, gzip or zlib,
// detected from the bytes), LibSVM with a field map, or libFFM.
//
// Errors name the file and the record: "<file>: record <i> at offset <o>:
// <what>" (TFRecord) or "<file>:<line>: <what>" (text), e.g.
//   "tr.tfrecords: record 3 at offset 1830: missing feature 'C7'".
// Blank and comment lines of text inputs are skipped and counted
// (SkippedSummary). Thread safety: one reader per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/feature_spec.h"
#include "ctrain/data/spec_row_builder.h"
#include "ctrain/io/compression.h"

namespace ctrain::data {

struct SpecReaderOptions {
  io::Compression compression = io::Compression::kAuto;
  size_t max_line_bytes = size_t{64} << 20;  // text inputs
  int32_t max_pairs_per_line = 1 << 16;      // libsvm: most "id:value" pairs on one line
};

class SpecReader {
 public:
  virtual ~SpecReader() = default;
  // Errors: those of opening the file; InvalidArgument when the bytes are not
  // the spec's input (e.g. a LibSVM file for an "example" spec).
  static StatusOr<std::unique_ptr<SpecReader>> Open(const std::string& path, const FeatureSpec& spec,
                                                   const SpecReaderOptions& options = {});
  // The next row; false at the end of the input.
  virtual StatusOr<bool> Next(SpecRow* row) = 0;
  virtual const std::string& name() const = 0;
  virtual io::Compression compression() const = 0;
  virtual uint64_t records() const = 0;
  // What was skipped on purpose ("blank_lines=0 comment_lines=2"), "" if nothing can be.
  virtual std::string SkippedSummary() const = 0;
};

class ExampleWriter;

// `ctrain convert --feature-spec`: reads every input through `spec` and writes
// its rows to `writer` in the seed layout (one id and value per field, F =
// spec.field_size). Returns the rows per input.
// Errors: FailedPrecondition for a multi-hot spec (the seed layout holds one
// id per field: train on such data with --feature-spec instead); the readers'
// errors; InvalidArgument "<file>: no records" for an input without rows; the
// writer's errors with the input record named.
StatusOr<std::vector<uint64_t>> CopySpecRows(const std::vector<std::string>& inputs, const FeatureSpec& spec,
                                             ExampleWriter* writer);

}  // namespace ctrain::data
