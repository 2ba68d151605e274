#include "ctrain/train/stream_input.h"

#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <utility>

#include "ctrain/data/file_list.h"
#include "ctrain/data/pipe_mode.h"
#include "ctrain/io/feature_hash.h"

namespace ctrain::train {
namespace {

bool IsChannel(const std::string& p) { return p.rfind(data::kPipeChannelPrefix, 0) == 0; }

// The default order without its prefetch stage.
std::string OrderWithoutPrefetch(const std::string& order) {
  std::string out, item;
  for (size_t i = 0; i <= order.size(); ++i) {
    if (i == order.size() || order[i] == ',') {
      if (!item.empty() && item != "prefetch") out += (out.empty() ? "" : ",") + item;
      item.clear();
    } else if (order[i] != ' ') {
      item += order[i];
    }
  }
  return out;
}

std::string Quoted(const nlohmann::json& entry) { return "'" + entry.value("path", std::string("?")) + "'"; }

}  // namespace

StatusOr<nlohmann::json> DescribeStreamInputs(const StreamInput& input) {
  nlohmann::json files = nlohmann::json::array();
  for (const std::string& f : input.files) {
    if (f == "-" || IsChannel(f)) {
      files.push_back({{"path", f}});
      continue;
    }
    CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> expanded, data::ExpandFileList({f}));
    for (const std::string& path : expanded) {
      const int64_t bytes = data::IsStreamPath(path) ? -1 : data::RegularFileSize(path);
      if (bytes < 0) {
        files.push_back({{"path", path}});
        continue;
      }
      char abs[PATH_MAX];
      files.push_back({{"path", ::realpath(path.c_str(), abs) != nullptr ? std::string(abs) : path}, {"bytes", bytes}});
    }
  }
  return nlohmann::json{{"files", std::move(files)},
                        {"num_shards", input.pipeline.num_shards},
                        {"shard_index", input.pipeline.shard_index}};
}

Status CheckSameStreamInputs(const nlohmann::json& have, const nlohmann::json& want, const std::string& checkpoint) {
  if (have == want) return Status::OK();
  std::string what;
  const nlohmann::json empty = nlohmann::json::array();
  const nlohmann::json& hf = have.contains("files") ? have["files"] : empty;
  const nlohmann::json& wf = want.contains("files") ? want["files"] : empty;
  for (size_t i = 0; what.empty() && i < std::max(hf.size(), wf.size()); ++i) {
    if (i >= wf.size()) {
      what = "input " + std::to_string(i + 1) + " of the checkpoint's " + std::to_string(hf.size()) + ", " +
             Quoted(hf[i]) + ", is missing (this run has " + std::to_string(wf.size()) + " input(s))";
    } else if (i >= hf.size()) {
      what = "this run adds input " + std::to_string(i + 1) + ", " + Quoted(wf[i]) + " (the checkpoint had " +
             std::to_string(hf.size()) + " input(s))";
    } else if (hf[i].value("path", std::string()) != wf[i].value("path", std::string())) {
      what = "input " + std::to_string(i + 1) + " is " + Quoted(wf[i]) + ", the checkpoint's was " + Quoted(hf[i]);
    } else if (hf[i] != wf[i]) {
      auto size = [](const nlohmann::json& e) {
        return e.contains("bytes") ? std::to_string(e["bytes"].get<int64_t>()) + " bytes" : std::string("a stream");
      };
      what = Quoted(wf[i]) + " is " + size(wf[i]) + ", it was " + size(hf[i]) + " when the checkpoint was trained";
    }
  }
  if (what.empty()) {
    what = "shard " + std::to_string(want.value("shard_index", 0)) + " of " + std::to_string(want.value("num_shards", 1)) +
           ", the checkpoint's was shard " + std::to_string(have.value("shard_index", 0)) + " of " +
           std::to_string(have.value("num_shards", 1));
  }
  return FailedPreconditionError(checkpoint + ": this run's training inputs differ from the checkpoint's: " + what +
                                 "; resuming needs the same training data (to train this model on new data, add "
                                 "--warm-start-from <its model dir>; or use a new --model-dir)");
}

Status CheckNoEmptyFiles(const nlohmann::json& inputs) {
  std::vector<std::string> empty;
  size_t n = 0;
  if (inputs.contains("files"))
    for (const nlohmann::json& f : inputs["files"]) {
      ++n;
      if (f.contains("bytes") && f["bytes"].get<int64_t>() == 0) empty.push_back(f.value("path", std::string("?")));
    }
  if (empty.empty()) return Status::OK();
  std::string m = "no examples in ";
  for (size_t i = 0; i < empty.size(); ++i) m += (i ? ", " : "") + empty[i];
  m += " (0-byte file" + std::string(empty.size() > 1 ? "s" : "");
  if (empty.size() < n) m += "; " + std::to_string(empty.size()) + " of " + std::to_string(n) + " inputs are empty";
  return InvalidArgumentError(m + ")");
}

Status EmptyEpochError(const StreamInput& input, int64_t epoch, int64_t batch_size, const data::PipelineStats& st,
                       const std::string& kept) {
  std::string names;
  if (input.pipeline.num_shards > 1 && !st.inputs.empty()) {  // the shard's own inputs
    for (const data::InputReadStats& in : st.inputs) names += (names.empty() ? "" : ", ") + in.name;
    names += " (the inputs of shard " + std::to_string(input.pipeline.shard_index) + " of " +
             std::to_string(input.pipeline.num_shards) + ")";
  } else {
    for (const std::string& f : input.files) {
      std::string name = f == "-" ? "stdin (-)" : f;
      if (IsChannel(f)) name += " (FIFO " + data::ChannelFifoPath(f, epoch) + ")";
      names += (names.empty() ? "" : ", ") + name;
    }
  }
  const std::string e = "epoch " + std::to_string(epoch + 1);
  if (st.dropped_remainder_records > 0)
    return InvalidArgumentError("--drop-remainder dropped all " + std::to_string(st.dropped_remainder_records) +
                                " examples of " + e + " from " + names + ": --batch-size " +
                                std::to_string(batch_size) +
                                " is larger than the epoch; use a smaller --batch-size or --drop-remainder false");
  if (st.records_sharded_out > 0)
    return InvalidArgumentError(e + ": shard " + std::to_string(input.pipeline.shard_index) + " of " +
                                std::to_string(input.pipeline.num_shards) + " received none of the " +
                                std::to_string(st.records_sharded_out) + " records of " + names);
  return InvalidArgumentError("no examples in " + names + " (" + e + " read " + std::to_string(st.records_read) +
                              " records" +
                              (st.blank_lines + st.comment_lines + st.header_lines + st.corrupt_records > 0
                                   ? ", skipped " +
                                         std::to_string(st.blank_lines + st.comment_lines + st.header_lines +
                                                        st.corrupt_records) +
                                         " blank/comment/header lines or corrupt records"
                                   : std::string()) +
                              ")" + (kept.empty() ? "; nothing was trained and no checkpoint written" : kept));
}

Status CheckEveryInputGaveRecords(const data::PipelineStats& st, int64_t epoch) {
  std::vector<std::string> empty;
  for (const data::InputReadStats& in : st.inputs)
    if (in.finished && in.records == 0) empty.push_back(in.name == "-" || in.name == "<stdin>" ? "stdin (-)" : in.name);
  if (empty.empty()) return Status::OK();
  std::string m = "no examples in ";
  for (size_t i = 0; i < empty.size(); ++i) m += (i ? ", " : "") + empty[i];
  return InvalidArgumentError(m + " (epoch " + std::to_string(epoch + 1) + " read no records from " +
                              (empty.size() > 1 ? "them" : "it") + "; " + std::to_string(empty.size()) + " of " +
                              std::to_string(st.inputs.size()) + " inputs are empty)");
}

StatusOr<std::unique_ptr<EpochBatchSource>> EpochBatchSource::Create(const StreamInput& input, int64_t batch_size,
                                                                     int32_t epochs, uint64_t seed, bool shuffle,
                                                                     int64_t start_epoch, int64_t start_batch) {
  std::unique_ptr<EpochBatchSource> s(new EpochBatchSource());
  s->input_ = input;
  s->epochs_ = epochs;
  s->seed_ = seed;
  data::PipelineOptions& po = s->input_.pipeline;
  po.batch_size = batch_size;
  if (!shuffle) po.shuffle_buffer_size = 0;
  s->cached_ = !po.cache.empty();
  bool has_stdin = false;
  for (const std::string& f : input.files) {
    if (f == "-") has_stdin = true;
    if (IsChannel(f) || data::IsStreamPath(f)) s->stream_ = true;
  }
  if (s->cached_) {
    po.epochs = epochs;
    po.shuffle_seed = seed;
    po.prefetch_buffer_size = 0;
    po.order = OrderWithoutPrefetch(po.order);
  } else {
    po.epochs = 1;
  }
  CTRAIN_RETURN_IF_ERROR(data::ValidatePipelineOptions(po));
  if (has_stdin && !s->cached_ && epochs - start_epoch > 1)
    return FailedPreconditionError(
        "stdin can be read once, but this run trains " + std::to_string(epochs - start_epoch) +
        " epochs from it: use --epochs 1, --cache memory (or a file), or --input-mode memory");
  if (s->stream_ && (start_batch != 0 || (s->cached_ && start_epoch != 0)))
    return FailedPreconditionError(
        "the checkpoint stopped at epoch " + std::to_string(start_epoch) + " batch " + std::to_string(start_batch) +
        ", but the training input is a stream (stdin, FIFO or pipe: channel) that cannot be replayed to that "
        "position; resume from a checkpoint at an epoch end, read files, or use --input-mode memory");
  return s;
}

StatusOr<bool> EpochBatchSource::Fetch(data::Batch* batch, int64_t* pass) {
  if (has_pending_) {
    std::swap(*batch, pending_);
    has_pending_ = false;
    *pass = pending_pass_;
    return true;
  }
  CTRAIN_ASSIGN_OR_RETURN(bool more, pipe_->Next(batch));
  if (!more) return false;
  // Cache mode runs without prefetch: the repeat stage runs on this thread, so
  // epochs_completed is the pass of the batch just returned.
  *pass = cached_ ? static_cast<int64_t>(pipe_->stats().epochs_completed) : epoch_;
  return true;
}

Status EpochBatchSource::BeginEpoch(int64_t epoch, int64_t skip) {
  epoch_ = epoch;
  epoch_records_ = 0;
  if (!cached_) {
    pipe_.reset();  // joins the previous epoch's threads before the next opens the inputs
    StreamInput in = input_;
    if (in.pipeline.reshuffle_each_iteration)
      in.pipeline.shuffle_seed = seed_ ^ io::Mix64(static_cast<uint64_t>(epoch) + 1) ^ io::Mix64(1);
    else
      in.pipeline.shuffle_seed = seed_;
    for (std::string& f : in.files) {
      if (f == "-") {
        if (stdin_read_)
          return FailedPreconditionError("epoch " + std::to_string(epoch + 1) +
                                         ": stdin was already read by an earlier epoch");
        stdin_read_ = true;
      } else if (IsChannel(f)) {
        f = data::ChannelFifoPath(f, epoch);
        CTRAIN_RETURN_IF_ERROR(data::WaitForPath(f, in.pipeline.pipe_timeout_ms, nullptr));
      }
    }
    CTRAIN_ASSIGN_OR_RETURN(pipe_, data::Pipeline::Create(in.files, in.reader, in.pipeline));
  } else if (pipe_ == nullptr) {
    CTRAIN_ASSIGN_OR_RETURN(pipe_, data::Pipeline::Create(input_.files, input_.reader, input_.pipeline));
    // Resume: replay (and drop) the epochs before `epoch`.
    for (;;) {
      int64_t pass = 0;
      CTRAIN_ASSIGN_OR_RETURN(bool more, Fetch(&scratch_, &pass));
      if (!more && epoch == 0)  // nothing at all: an empty input, not a different one
        return EmptyEpochError(input_, 0, input_.pipeline.batch_size, pipe_->stats());
      if (!more)
        return FailedPreconditionError("the training input ended before epoch " + std::to_string(epoch + 1) +
                                       " (the checkpoint's position): different data than the checkpoint's?");
      if (pass >= epoch) {
        std::swap(scratch_, pending_);
        has_pending_ = true;
        pending_pass_ = pass;
        break;
      }
    }
  }
  for (int64_t b = 0; b < skip; ++b) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, Next(&scratch_));
    if (!more)
      return FailedPreconditionError("epoch " + std::to_string(epoch + 1) + " of the training input has only " +
                                     std::to_string(b) + " batches, but the checkpoint had applied " +
                                     std::to_string(skip) + ": different data or --batch-size than the checkpoint's?");
  }
  return Status::OK();
}

StatusOr<bool> EpochBatchSource::Next(data::Batch* batch) {
  int64_t pass = 0;
  CTRAIN_ASSIGN_OR_RETURN(bool more, Fetch(batch, &pass));
  if (!more) return false;
  if (pass != epoch_) {  // cache mode: the first batch of a later pass
    std::swap(*batch, pending_);
    has_pending_ = true;
    pending_pass_ = pass;
    return false;
  }
  epoch_records_ += batch->size();
  return true;
}

data::PipelineStats EpochBatchSource::stats() const {
  return pipe_ != nullptr ? pipe_->stats() : data::PipelineStats();
}

}  // namespace ctrain::train
