#include "ctrain/data/spec_reader.h"

#include <vector>

#include "ctrain/data/example_reader.h"
#include "ctrain/io/file.h"
#include "ctrain/io/libffm.h"
#include "ctrain/io/libsvm.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::data {

namespace {

class ExampleSpecReader final : public SpecReader {
 public:
  ExampleSpecReader(std::unique_ptr<io::TFRecordReader> r, SpecRowBuilder b)
      : reader_(std::move(r)), builder_(std::move(b)) {}
  StatusOr<bool> Next(SpecRow* row) override {
    std::string_view rec;
    CTRAIN_ASSIGN_OR_RETURN(bool more, reader_->Next(&rec));
    if (!more) return false;
    Status s = builder_.FromExample(rec, row);
    if (!s.ok())
      return s.WithContext(reader_->name() + ": record " + std::to_string(reader_->record_index()) + " at offset " +
                           std::to_string(reader_->record_offset()));
    ++records_;
    return true;
  }
  const std::string& name() const override { return reader_->name(); }
  io::Compression compression() const override { return reader_->compression(); }
  uint64_t records() const override { return records_; }
  std::string SkippedSummary() const override { return ""; }

 private:
  std::unique_ptr<io::TFRecordReader> reader_;
  SpecRowBuilder builder_;
  uint64_t records_ = 0;
};

class LibSvmSpecReader final : public SpecReader {
 public:
  LibSvmSpecReader(std::unique_ptr<io::LibSvmReader> r, SpecRowBuilder b, io::Compression c, int32_t cap)
      : reader_(std::move(r)), builder_(std::move(b)), compression_(c), ids_(cap), values_(cap) {}
  StatusOr<bool> Next(SpecRow* row) override {
    float label = 0;
    int32_t n = 0;
    CTRAIN_ASSIGN_OR_RETURN(bool more, reader_->Next(&label, ids_.data(), values_.data(), &n));
    if (!more) return false;
    Status s = builder_.FromLibSvm(label, ids_.data(), values_.data(), n, row);
    if (!s.ok()) return s.WithContext(reader_->name() + ":" + std::to_string(reader_->line_number()));
    ++records_;
    return true;
  }
  const std::string& name() const override { return reader_->name(); }
  io::Compression compression() const override { return compression_; }
  uint64_t records() const override { return records_; }
  std::string SkippedSummary() const override {
    return "blank_lines=" + std::to_string(reader_->counters().blank_lines) +
           " comment_lines=" + std::to_string(reader_->counters().comment_lines);
  }

 private:
  std::unique_ptr<io::LibSvmReader> reader_;
  SpecRowBuilder builder_;
  io::Compression compression_;
  std::vector<int64_t> ids_;
  std::vector<float> values_;
  uint64_t records_ = 0;
};

class LibFfmSpecReader final : public SpecReader {
 public:
  LibFfmSpecReader(std::unique_ptr<io::LibFfmReader> r, SpecRowBuilder b, io::Compression c)
      : reader_(std::move(r)), builder_(std::move(b)), compression_(c) {}
  StatusOr<bool> Next(SpecRow* row) override {
    float label = 0;
    const std::vector<io::FfmTriple>* triples = nullptr;
    CTRAIN_ASSIGN_OR_RETURN(bool more, reader_->Next(&label, &triples));
    if (!more) return false;
    ++records_;
    Status s = builder_.FromLibFfm(label, *triples, row);
    // The reader counts lines; the record's line is lines so far.
    if (!s.ok()) return s.WithContext(reader_->name() + ":" + std::to_string(reader_->counters().lines));
    return true;
  }
  const std::string& name() const override { return reader_->name(); }
  io::Compression compression() const override { return compression_; }
  uint64_t records() const override { return records_; }
  std::string SkippedSummary() const override {
    return "skipped_lines=" + std::to_string(reader_->counters().skipped_lines);
  }

 private:
  std::unique_ptr<io::LibFfmReader> reader_;
  SpecRowBuilder builder_;
  io::Compression compression_;
  uint64_t records_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<SpecReader>> SpecReader::Open(const std::string& path, const FeatureSpec& spec,
                                                       const SpecReaderOptions& options) {
  CTRAIN_ASSIGN_OR_RETURN(SpecRowBuilder builder, SpecRowBuilder::Create(spec));
  if (spec.input == SpecInput::kExample) {
    io::TFRecordReaderOptions to;
    to.compression = options.compression;
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::TFRecordReader> r, io::TFRecordReader::Open(path, to));
    return std::unique_ptr<SpecReader>(new ExampleSpecReader(std::move(r), std::move(builder)));
  }
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::SequentialFile> raw, io::OpenSequentialFile(path));
  const RecordFormat want = spec.input == SpecInput::kLibSvm ? RecordFormat::kLibSvm : RecordFormat::kLibFfm;
  CTRAIN_ASSIGN_OR_RETURN(SniffedStream sniffed, SniffStream(std::move(raw), options.compression, want));
  if (spec.input == SpecInput::kLibSvm) {
    io::LibSvmOptions lo;
    lo.variable_length = true;
    lo.field_size = options.max_pairs_per_line;
    lo.id_base = spec.id_base;
    lo.max_line_bytes = options.max_line_bytes;
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::LibSvmReader> r, io::LibSvmReader::Open(std::move(sniffed.stream), lo));
    return std::unique_ptr<SpecReader>(
        new LibSvmSpecReader(std::move(r), std::move(builder), sniffed.compression, lo.field_size));
  }
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::LibFfmReader> r,
                          io::LibFfmReader::Open(std::move(sniffed.stream), options.max_line_bytes));
  return std::unique_ptr<SpecReader>(new LibFfmSpecReader(std::move(r), std::move(builder), sniffed.compression));
}

StatusOr<std::vector<uint64_t>> CopySpecRows(const std::vector<std::string>& inputs, const FeatureSpec& spec,
                                             ExampleWriter* writer) {
  if (spec.multi_hot)
    return FailedPreconditionError(spec.source +
                                   ": the spec has multi-hot fields (var_len, libsvm or libffm input), which the "
                                   "seed layout (one id per field) cannot hold: train on the files with "
                                   "--feature-spec, or convert them with --output-format npz (one array per spec "
                                   "entry, multi-hot as ids/offsets/weights)");
  std::vector<uint64_t> counts;
  SpecRow row;
  for (const std::string& path : inputs) {
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<SpecReader> reader, SpecReader::Open(path, spec));
    for (;;) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, reader->Next(&row));
      if (!more) break;
      Status w = writer->Write(row.label, row.ids, row.values);
      if (!w.ok())
        return w.code() == StatusCode::kInvalidArgument
                   ? w.WithContext(reader->name() + ": row " + std::to_string(reader->records()))
                   : w;
    }
    if (reader->records() == 0) return InvalidArgumentError(path + ": no records");
    counts.push_back(reader->records());
  }
  return counts;
}

}  // namespace ctrain::data
