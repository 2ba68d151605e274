#include "ctrain/dataservice/split_source.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ctrain/data/feature_spec.h"
#include "ctrain/data/pipeline.h"
#include "ctrain/data/spec_reader.h"
#include "ctrain/dataservice/dataset_def.h"
#include "ctrain/io/compression.h"

namespace ctrain::dataservice {
namespace {

// The records kind: the trainer's input pipeline.
class PipelineSplit final : public SplitSource {
 public:
  PipelineSplit(SplitReadPlan plan, std::unique_ptr<data::Pipeline> pipe)
      : plan_(std::move(plan)), pipe_(std::move(pipe)) {}
  StatusOr<bool> Next(data::Batch* batch) override { return pipe_->Next(batch); }
  data::PipelineStats stats() const override { return pipe_->stats(); }

 private:
  SplitReadPlan plan_;  // owns the vocabulary the pipeline's readers point to
  std::unique_ptr<data::Pipeline> pipe_;
};

// The spec kind (split_source.h).
class SpecSplit final : public SplitSource {
 public:
  SpecSplit(data::FeatureSpec spec, std::vector<std::string> files, const proto::DatasetDef& def,
            const proto::SplitId& split, data::SpecReaderOptions reader)
      : spec_(std::move(spec)), files_(std::move(files)), reader_options_(reader), batch_size_(def.batch_size()),
        drop_remainder_(def.drop_remainder()), n_(split.num_splits()), index_(split.split_index()),
        file_level_(static_cast<int64_t>(files_.size()) >= split.num_splits()) {
    file_ = file_level_ ? static_cast<size_t>(index_) : 0;
  }

  StatusOr<bool> Next(data::Batch* batch) override {
    CTRAIN_RETURN_IF_ERROR(error_);
    StatusOr<bool> r = Fill(batch);
    if (!r.ok()) error_ = r.status();
    return r;
  }

  data::PipelineStats stats() const override { return stats_; }

 private:
  StatusOr<bool> Fill(data::Batch* batch) {
    batch->Clear();
    batch->field_size = spec_.field_size;
    while (batch->size() < batch_size_) {
      if (!reader_) {
        if (file_ >= files_.size()) break;
        CTRAIN_ASSIGN_OR_RETURN(reader_, data::SpecReader::Open(files_[file_], spec_, reader_options_));
        record_ = 0;
        data::InputReadStats in;
        in.file = static_cast<uint32_t>(file_);
        in.name = reader_->name();
        in.format = spec_.input == data::SpecInput::kExample  ? "tfrecord"
                    : spec_.input == data::SpecInput::kLibSvm ? "libsvm"
                                                              : "libffm";
        in.compression = std::string(io::CompressionName(reader_->compression()));
        stats_.inputs.push_back(std::move(in));
      }
      CTRAIN_ASSIGN_OR_RETURN(bool more, reader_->Next(&row_));
      data::InputReadStats& in = stats_.inputs.back();
      if (!more) {
        in.records = reader_->records();
        in.finished = true;
        std::error_code ec;
        const auto bytes = std::filesystem::file_size(files_[file_], ec);  // every split reads the whole file
        if (!ec) in.input_bytes = bytes;
        stats_.input_bytes_read += in.input_bytes;
        reader_.reset();
        file_ += file_level_ ? static_cast<size_t>(n_) : 1;
        continue;
      }
      in.records = reader_->records();
      ++stats_.records_read;
      const int64_t r = record_++;
      if (!file_level_ && (static_cast<int64_t>(file_) + r) % n_ != index_) {
        ++stats_.records_sharded_out;
        continue;
      }
      if (spec_.multi_hot) {
        batch->AppendMultiHotRow(row_.label, row_.ids, row_.values, row_.lengths);
      } else {
        batch->AppendRow(row_.label, row_.ids, row_.values);
      }
    }
    if (batch->empty()) return false;
    if (batch->size() < batch_size_ && drop_remainder_) {
      stats_.dropped_remainder_records += static_cast<uint64_t>(batch->size());
      batch->Clear();
      return false;
    }
    stats_.records += static_cast<uint64_t>(batch->size());
    ++stats_.batches;
    return true;
  }

  const data::FeatureSpec spec_;
  const std::vector<std::string> files_;
  const data::SpecReaderOptions reader_options_;
  const int64_t batch_size_;
  const bool drop_remainder_;
  const int32_t n_, index_;
  const bool file_level_;
  size_t file_ = 0;
  int64_t record_ = 0;  // of the open file
  std::unique_ptr<data::SpecReader> reader_;
  data::SpecRow row_;
  data::PipelineStats stats_;
  Status error_;
};

}  // namespace

StatusOr<std::unique_ptr<SplitSource>> OpenSplit(const proto::DatasetDef& def, const proto::SplitId& split,
                                                 int32_t parse_threads) {
  std::vector<std::string> files(def.files().begin(), def.files().end());
  if (def.feature_spec().empty()) {
    CTRAIN_ASSIGN_OR_RETURN(SplitReadPlan plan, PlanSplitRead(def, split, parse_threads));
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<data::Pipeline> pipe,
                            data::Pipeline::Create(files, plan.reader, plan.pipeline));
    return std::unique_ptr<SplitSource>(new PipelineSplit(std::move(plan), std::move(pipe)));
  }
  CTRAIN_RETURN_IF_ERROR(ValidateDatasetDef(def));
  CTRAIN_RETURN_IF_ERROR(ValidateSplit(split));
  CTRAIN_ASSIGN_OR_RETURN(data::FeatureSpec spec, ParseDatasetSpec(def));
  data::SpecReaderOptions reader;
  CTRAIN_ASSIGN_OR_RETURN(reader.compression, io::ParseCompression(def.compression()));
  reader.max_line_bytes = static_cast<size_t>(def.max_line_bytes());
  return std::unique_ptr<SplitSource>(new SpecSplit(std::move(spec), std::move(files), def, split, reader));
}

}  // namespace ctrain::dataservice
