#include "ctrain/train/trainer_feed.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "ctrain/train/input_checks.h"
#include "ctrain/train/remote_parameters.h"
#include "ctrain/train/trainer_impl.h"

namespace ctrain::train {
namespace {

// Stream mode: the input checks look at this many examples (or the first
// epoch, if shorter) before they warn.
constexpr int64_t kStreamInputCheckExamples = 10000;
// ... and re-read at most this many examples to name the line of a field's
// largest value (the shuffle buffer may have moved it far from the start).
constexpr int64_t kStreamLocateExamples = 1000000;

class MemoryFeed final : public EpochFeed {
 public:
  MemoryFeed(Trainer::Impl& impl, const Dataset& train) : impl_(impl), train_(train) {
    N_ = train.size();
    B_ = impl.options.batch_size;
    S_ = (N_ + B_ - 1) / B_;
    if (impl.remote != nullptr) {
      W_ = impl.remote->num_workers();
      k_ = impl.remote->worker_index();
    }
    steps_ = impl.remote == nullptr        ? S_
             : impl.remote->sync_replicas() ? (S_ + W_ - 1) / W_
                                             : (S_ - k_ + W_ - 1) / W_;
  }
  bool streamed() const override { return false; }
  Status BeginEpoch(int64_t epoch, int64_t) override {
    impl_.EpochOrder(N_, epoch, &order_);
    return Status::OK();
  }
  int64_t steps_per_epoch() const override { return steps_; }
  bool EndKnown(int64_t batch) const override { return batch >= steps_; }
  int64_t RemainingInEpoch(int64_t batch) const override { return steps_ - batch; }
  StatusOr<int64_t> Next(int64_t batch) override {
    if (batch >= steps_) return int64_t{-1};
    Rows(batch, &lo_, &hi_);
    return hi_ - lo_;
  }
  void Fill(Replica& rep, int64_t a, int64_t b) override {
    rep.rows.assign(order_.begin() + lo_ + a, order_.begin() + lo_ + b);
    train_.Gather(rep.rows, &rep.batch);
  }
  StatusOr<bool> NextInto(int64_t batch, data::Batch* out) override {
    if (batch >= steps_) return false;
    int64_t lo = 0, hi = 0;
    Rows(batch, &lo, &hi);
    train_.Gather(std::span<const int64_t>(order_.data() + lo, hi - lo), out);
    return true;
  }
  StatusOr<int64_t> Drain(int64_t batch, int64_t) override { return std::max<int64_t>(0, N_ - batch * B_); }
  Status EndEpoch(int64_t, int64_t* rows) override {
    *rows = 0;
    return Status::OK();
  }

 private:
  // Step `batch` is batch batch * W + k of the epoch: rows [lo, hi) of the
  // order; past the last batch (a sync round without one) an empty range.
  void Rows(int64_t batch, int64_t* lo, int64_t* hi) const {
    *lo = std::min(N_, (batch * W_ + k_) * B_);
    *hi = std::min(N_, *lo + B_);
  }
  Trainer::Impl& impl_;
  const Dataset& train_;
  int64_t N_ = 0, B_ = 1, S_ = 0, W_ = 1, k_ = 0, steps_ = 0;
  std::vector<int64_t> order_;
  int64_t lo_ = 0, hi_ = 0;
};

class StreamFeed final : public EpochFeed {
 public:
  StreamFeed(Trainer::Impl& impl, const StreamInput& input, BatchSource* src, TrainResult* result)
      : impl_(impl), input_(input), src_(src), result_(result), stats_(impl.options.model.field_size, Checks()) {
    towers_ = static_cast<int32_t>(impl.replicas.size());
  }
  bool streamed() const override { return true; }
  Status BeginEpoch(int64_t epoch, int64_t batch) override {
    ended_ = false;
    return src_->BeginEpoch(epoch, batch);
  }
  // Known once an epoch was read (train_rows).
  int64_t steps_per_epoch() const override {
    const int64_t rows = impl_.pos.train_rows, B = impl_.options.batch_size;
    if (rows <= 0) return 0;
    return input_.pipeline.drop_remainder ? rows / B : (rows + B - 1) / B;
  }
  bool EndKnown(int64_t) const override { return false; }
  StatusOr<int64_t> Next(int64_t) override {
    dst_ = towers_ == 1 ? &impl_.replicas[0].batch : &staging_;  // one tower: the batch goes straight to it
    CTRAIN_ASSIGN_OR_RETURN(bool more, src_->Next(dst_));
    return more ? dst_->size() : int64_t{-1};
  }
  Status Check() override {
    CTRAIN_RETURN_IF_ERROR(impl_.CheckBatch(*dst_));
    Observe(*dst_);
    // A stream's format is known now: a resume on another encoding stops before training on it.
    if (!impl_.restored_data_checked || impl_.options.data.format.empty())
      CTRAIN_RETURN_IF_ERROR(impl_.NoteStreamFormats());
    return Status::OK();
  }
  void Fill(Replica& rep, int64_t lo, int64_t hi) override {
    if (towers_ == 1) return;  // the source wrote the batch into replica 0
    const int64_t F = staging_.field_size;
    rep.batch.field_size = staging_.field_size;
    rep.batch.row_splits.clear();
    rep.batch.field_splits.clear();
    rep.batch.labels.assign(staging_.labels.begin() + lo, staging_.labels.begin() + hi);
    rep.batch.ids.assign(staging_.ids.begin() + lo * F, staging_.ids.begin() + hi * F);
    rep.batch.values.assign(staging_.values.begin() + lo * F, staging_.values.begin() + hi * F);
  }
  StatusOr<bool> NextInto(int64_t, data::Batch* out) override {
    std::lock_guard<std::mutex> lock(mu_);  // the source is read by one replica thread at a time
    if (ended_) return false;
    CTRAIN_ASSIGN_OR_RETURN(bool more, src_->Next(out));
    if (!more) {
      ended_ = true;
      return false;
    }
    CTRAIN_RETURN_IF_ERROR(impl_.CheckBatch(*out));
    Observe(*out);
    return true;
  }
  // Drains the epoch so the source ends it (and its size counts every record).
  StatusOr<int64_t> Drain(int64_t, int64_t rows) override {
    int64_t rest = rows;
    for (;;) {
      CTRAIN_ASSIGN_OR_RETURN(bool again, src_->Next(dst_));
      if (!again) break;
      rest += dst_->size();
    }
    return rest;
  }
  Status EndEpoch(int64_t epoch, int64_t* rows) override {
    // An empty pass (empty input, stdin or FIFO that gave 0 bytes, every
    // record dropped by drop_remainder) is an error, never a 0-step run.
    if (src_->epoch_records() == 0) {
      std::string kept;  // what an empty later epoch leaves behind
      const TrainPosition& pos = impl_.pos;
      if (pos.global_step > 0)
        kept = impl_.saved_this_run || !impl_.restored_path.empty()
                   ? "; training stopped there: the checkpoint of step " +
                         std::to_string(impl_.saved_this_run ? impl_.saved_pos.global_step : pos.global_step) +
                         " in " + impl_.options.model_dir + " stays"
                   : "; training stopped there after step " + std::to_string(pos.global_step) + " (no --model-dir)";
      return EmptyEpochError(input_, epoch, impl_.options.batch_size, src_->stats(), kept);
    }
    // Every input must give records, not just the epoch as a whole.
    CTRAIN_RETURN_IF_ERROR(CheckEveryInputGaveRecords(src_->stats(), epoch));
    CTRAIN_RETURN_IF_ERROR(impl_.NoteStreamFormats());
    if (stats_.examples() > 0) impl_.WarnInputs(stats_, result_, kStreamLocateExamples);  // a short first epoch
    *rows = src_->epoch_records();
    return Status::OK();
  }
  Status EndRun() override {  // a run shorter than the check
    if (stats_.examples() > 0) impl_.WarnInputs(stats_, result_, kStreamLocateExamples);
    return Status::OK();
  }

 private:
  static InputCheckOptions Checks() {
    InputCheckOptions o;
    o.max_examples = kStreamInputCheckExamples;
    return o;
  }
  // The first examples of this run; a stream is checked early (its first
  // epoch may be long), memory mode looks at more rows at once.
  void Observe(const data::Batch& b) {
    if (impl_.input_warned) return;
    stats_.Add(b.ids.data(), b.values.data(), b.size(), b.labels.data());
    if (stats_.full()) impl_.WarnInputs(stats_, result_, kStreamLocateExamples);
  }
  Trainer::Impl& impl_;
  const StreamInput& input_;
  BatchSource* src_;
  TrainResult* result_;
  InputStats stats_;
  int32_t towers_ = 1;
  data::Batch staging_;  // towers: the whole batch, sliced into the replicas
  data::Batch* dst_ = nullptr;
  std::mutex mu_;
  bool ended_ = false;
};

}  // namespace

std::unique_ptr<EpochFeed> MakeMemoryFeed(Trainer::Impl& impl, const Dataset& train) {
  return std::make_unique<MemoryFeed>(impl, train);
}

std::unique_ptr<EpochFeed> MakeStreamFeed(Trainer::Impl& impl, const StreamInput& input, BatchSource* src,
                                          TrainResult* result) {
  return std::make_unique<StreamFeed>(impl, input, src, result);
}

}  // namespace ctrain::train
