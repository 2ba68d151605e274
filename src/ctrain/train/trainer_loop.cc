// The trainer's one epoch loop (docs/training.md#step): memory mode and
// stream mode differ only in where a step's batch comes from (EpochFeed,
// trainer_feed.h); towers, hogwild, mpirun ranks and parameter-server workers
// run the same loop.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <atomic>

#include "ctrain/train/gradient_exchange.h"
#include "ctrain/train/remote_parameters.h"
#include "ctrain/train/trainer_feed.h"
#include "ctrain/train/trainer_impl.h"

namespace ctrain::train {

Status Trainer::Impl::RunEpochs(EpochFeed& feed, const Dataset* valid, TrainResult* result) {
  const int32_t H = options.parallel.hogwild;
  const bool streamed = feed.streamed();
  auto total_steps = [&]() -> int64_t {
    const int64_t spe = feed.steps_per_epoch();
    int64_t total = spe > 0 ? spe * options.epochs : 0;
    if (options.max_steps > 0) total = total > 0 ? std::min(total, options.max_steps) : options.max_steps;
    return total;
  };
  auto max_reached = [&] { return options.max_steps > 0 && pos.global_step >= options.max_steps; };

  Progress prog;
  prog.start = prog.last_print = Clock::now();
  prog.start_step = pos.global_step;
  prog.total_steps = total_steps();
  prog.stream = streamed;
  const int64_t start_examples = pos.examples;
  double epoch_loss_sum = 0;
  int64_t epoch_loss_n = 0;
  bool stop = early_stopped;  // a resumed run that stopped early has nothing left to do
  int64_t eval_step = -1;     // evaluated at this global step already (no second identical evaluation)
  auto do_eval = [&](const char* when) { return EvaluateAndLog(valid, when, &eval_step, result); };
  if (options.lr_plateau() && valid == nullptr && (exch == nullptr || exch->is_chief()))
    return InvalidArgumentError("--lr-decay plateau needs validation data (--valid): it reduces the learning rate "
                                "when a validation metric stops improving");
  // mpirun with the plateau: every rank joins rank 0's decision at every --eval-every-steps step, wherever its
  // own shard ends (below), so that all ranks meet at the same evaluations.
  const bool ranks_meet = options.lr_plateau() && exch != nullptr && exch->size() > 1;

  while (!stop && pos.epoch < options.epochs && !max_reached()) {
    if (Status st = feed.BeginEpoch(pos.epoch, pos.batch_in_epoch); !st.ok())
      return StopSignal() != 0 ? Stop(prog.start_step) : st;
    bool epoch_done = false;
    while (!epoch_done) {
      if (max_reached()) {
        stop = true;
        break;
      }
      // Memory mode knows the epoch's last batch; ranks still vote on it (below).
      if (exch == nullptr && feed.EndKnown(pos.batch_in_epoch)) {
        epoch_done = true;
        break;
      }
      if (exch == nullptr && StopSignal() != 0) return Stop(prog.start_step);
      if (H > 0) {
        // Run freely until the next sync point (checkpoint, eval, max_steps) or the epoch end.
        int64_t seg = feed.RemainingInEpoch(pos.batch_in_epoch);
        if (options.max_steps > 0) seg = std::min(seg, options.max_steps - pos.global_step);
        if (options.save_checkpoints_steps > 0)
          seg = std::min(seg, options.save_checkpoints_steps - pos.global_step % options.save_checkpoints_steps);
        if (options.eval_every_steps > 0)
          seg = std::min(seg, options.eval_every_steps - pos.global_step % options.eval_every_steps);
        // The replicas take batch indices [batch_in_epoch, batch_in_epoch + seg) (the feed is thread-safe).
        std::atomic<int64_t> taken{0};
        std::atomic<bool> ended{false};
        int64_t batches = 0;
        double wait = 0;
        const int64_t first = pos.batch_in_epoch;
        const auto t0 = Clock::now();
        CTRAIN_RETURN_IF_ERROR(RunHogwild(
            [&](Replica& rep) -> StatusOr<bool> {
              if (ended.load() || StopSignal() != 0) return false;
              const int64_t i = taken.fetch_add(1);
              if (i >= seg) return false;
              CTRAIN_ASSIGN_OR_RETURN(bool more, feed.NextInto(first + i, &rep.batch));
              if (!more) ended = true;
              return more;
            },
            &prog, &batches, &wait));
        const double wall = Seconds(t0, Clock::now());
        if (streamed) {  // thread-seconds: the wait share of all replica time in the segment
          const double busy = wall * static_cast<double>(H);
          prog.wait += std::min(wait, busy);
          prog.compute += std::max(0.0, busy - wait);
        } else {
          prog.compute += wall;
        }
        pos.batch_in_epoch += batches;
        prog.examples = pos.examples - start_examples;
        epoch_done = ended;
      } else {
        const auto t0 = Clock::now();
        StatusOr<int64_t> next = feed.Next(pos.batch_in_epoch);
        if (!next.ok() && StopSignal() != 0) return Stop(prog.start_step);  // interrupted while waiting for input
        CTRAIN_ASSIGN_OR_RETURN(int64_t n, std::move(next));
        if (exch != nullptr) {  // every rank steps, or none: the shortest shard ends the epoch
          bool go = false;
          int sig = 0;
          CTRAIN_RETURN_IF_ERROR(Vote(n >= 0, &go, &sig));
          if (sig != 0) return Stop(prog.start_step, sig);
          if (n >= 0 && !go) {
            CTRAIN_ASSIGN_OR_RETURN(int64_t rest, feed.Drain(pos.batch_in_epoch, n));
            ReportLeftOver(rest);
            n = -1;
          }
        }
        const auto t1 = Clock::now();
        const double wait = streamed ? Seconds(t0, t1) : 0.0;
        prog.wait += wait;
        if (n < 0) {
          epoch_done = true;
          break;
        }
        CTRAIN_RETURN_IF_ERROR(feed.Check());
        double loss = 0;
        CTRAIN_RETURN_IF_ERROR(
            SyncStep(n, [&](Replica& rep, int64_t lo, int64_t hi) { feed.Fill(rep, lo, hi); }, &loss));
        const double secs = Seconds(t0, Clock::now());
        prog.compute += secs - wait;
        ++pos.batch_in_epoch;
        prog.examples += step_examples;
        if (n > 0) {  // an empty sync round of a parameter-server worker has no loss
          prog.loss_sum += loss;
          prog.loss_n += 1;
          epoch_loss_sum += loss;
          epoch_loss_n += 1;
        }
        if (observer != nullptr) observer->OnStep({pos.global_step, step_examples, secs, wait, loss});
      }
      PrintProgress(prog, false);
      if (epoch_done) break;
      // Not at a known epoch end (its own checkpoint follows). A stream's end
      // is only known at the next Next(): a checkpoint taken on its last batch
      // resumes by finding the epoch exhausted.
      // The evaluation comes first, so that a checkpoint of the same step holds what it decided (early stopping's
      // count, the plateau's rate) and a run resumed from it continues identically.
      const bool end_known = feed.EndKnown(pos.batch_in_epoch);
      const bool save_point =
          !end_known && options.save_checkpoints_steps > 0 && pos.global_step % options.save_checkpoints_steps == 0;
      // A keyed table evicts at each scheduled checkpoint, before the evaluation of the same step: the metrics
      // describe the model the checkpoint holds.
      if (save_point && keys != nullptr) EvictKeys();
      if ((!end_known || ranks_meet) && options.eval_every_steps > 0 && pos.global_step % options.eval_every_steps == 0)
        CTRAIN_RETURN_IF_ERROR(do_eval("eval"));
      if (save_point) CTRAIN_RETURN_IF_ERROR(Save());
      if (early_stopped) {
        stop = true;
        break;
      }
    }
    if (!epoch_done) continue;
    // Epoch complete: the position moves to the start of the next epoch
    // before eval/checkpoint, so a resume starts there.
    int64_t rows = 0;
    CTRAIN_RETURN_IF_ERROR(feed.EndEpoch(pos.epoch, &rows));
    const int64_t finished_epoch = pos.epoch + 1;
    if (rows > 0) pos.train_rows = rows;
    ++pos.epoch;
    pos.batch_in_epoch = 0;
    prog.total_steps = total_steps();
    if (H > 0) {
      epoch_loss_sum = prog.loss_sum;
      epoch_loss_n = prog.loss_n;
    }
    result->last_loss = epoch_loss_n ? epoch_loss_sum / epoch_loss_n : 0;
    const double secs = prog.wait + prog.compute;
    char buf[320];
    if (streamed)
      std::snprintf(buf, sizeof buf,
                    "%sepoch %lld/%d: step %lld, %lld examples%s, train loss %.5f, %.0f examples/s, input wait %.1f%%",
                    terminal ? "\r\033[K" : "", static_cast<long long>(finished_epoch), options.epochs,
                    static_cast<long long>(pos.global_step), static_cast<long long>(pos.train_rows),
                    exch != nullptr ? " in rank 0's shard" : "", result->last_loss,
                    secs > 0 ? prog.examples / secs : 0.0, secs > 0 ? 100.0 * prog.wait / secs : 0.0);
    else
      std::snprintf(buf, sizeof buf, "%sepoch %lld/%d: step %lld, train loss %.5f, %.0f examples/s",
                    terminal ? "\r\033[K" : "", static_cast<long long>(finished_epoch), options.epochs,
                    static_cast<long long>(pos.global_step), result->last_loss,
                    secs > 0 ? prog.examples / secs : 0.0);
    Log(buf);
    if (keys != nullptr) {  // the epoch end's eviction, before its evaluation (as at every scheduled checkpoint)
      const int64_t freed = EvictKeys();
      if (freed > 0 && eval_step == pos.global_step && valid != nullptr) {
        // This step was evaluated before the eviction (a stream learns of its end one read later; mpirun's
        // plateau evaluates where the ranks meet): the decisions taken on that evaluation stand, and the
        // reported metrics are measured again on the model the checkpoint holds.
        CTRAIN_ASSIGN_OR_RETURN(result->eval, Evaluate(*valid));
        char line[256];
        std::snprintf(line, sizeof line, "epoch end step %lld, after evicting %lld rows: valid auc %.5f logloss %.5f",
                      static_cast<long long>(pos.global_step), static_cast<long long>(freed), result->eval.auc,
                      result->eval.logloss);
        Log(line);
      }
      result->keyed_table_epochs.push_back({finished_epoch, keys->counters()});
      Log("ctrain: keyed table after epoch " + std::to_string(finished_epoch) + ": " +
          result->keyed_table_epochs.back().counters.Summary());
    }
    epoch_loss_sum = 0;
    epoch_loss_n = 0;
    CTRAIN_RETURN_IF_ERROR(do_eval("epoch end"));
    if (early_stopped) stop = true;
    // Every epoch end is checkpointed (the last one by the final save below).
    if (!stop && pos.epoch < options.epochs && !max_reached()) CTRAIN_RETURN_IF_ERROR(Save());
  }
  if (terminal) PrintProgress(prog, true), Log("");
  CTRAIN_RETURN_IF_ERROR(feed.EndRun());
  if (epoch_loss_n > 0) result->last_loss = epoch_loss_sum / epoch_loss_n;
  // A final evaluation when training stopped mid-epoch (max_steps).
  // It reports the model; it does not step the plateau scheduler (training is over: no rate follows from it).
  if (valid != nullptr && (!result->evaluated || pos.batch_in_epoch != 0))
    CTRAIN_RETURN_IF_ERROR(EvaluateAndLog(valid, "final", &eval_step, result, /*scheduled=*/false));
  if (!finished) saved_this_run = false;  // the final checkpoint records that the run finished
  finished = true;
  CTRAIN_RETURN_IF_ERROR(SaveFinal());
  CTRAIN_RETURN_IF_ERROR(FlushRemoteDense());  // every worker's last steps reach the servers' dense copy
  if (keys != nullptr) {
    result->keyed = true;
    result->keyed_table = keys->counters();
  }
  result->steps = pos.global_step;
  result->steps_this_run = pos.global_step - prog.start_step;
  result->examples = pos.examples;
  result->examples_this_run = pos.examples - start_examples;
  const int64_t spe = feed.steps_per_epoch();
  result->epochs = pos.epoch + (spe > 0 ? static_cast<double>(pos.batch_in_epoch) / spe : 0.0);
  result->epoch_size_known = spe > 0 || pos.batch_in_epoch == 0;
  result->input_wait_seconds = prog.wait;
  result->compute_seconds = prog.compute;
  result->seconds = prog.wait + prog.compute;
  result->input_wait_fraction = result->seconds > 0 ? prog.wait / result->seconds : 0;
  result->examples_per_sec = result->seconds > 0 ? result->examples_this_run / result->seconds : 0;
  NotePlateau(result);
  return Status::OK();
}

// Distributed runs start from rank 0's state; hogwild is single-process.
Status Trainer::Impl::BeginRun(TrainResult* result) {
  *result = TrainResult();
  if (exch != nullptr) {
    if (options.parallel.hogwild > 0)
      return InvalidArgumentError("--hogwild cannot run under mpirun: distributed training is synchronous");
    CTRAIN_RETURN_IF_ERROR(BroadcastState());
  }
  saved_this_run = false;
  return Status::OK();
}

void Trainer::Impl::NoteRestoredState(TrainResult* result) const {
  result->restored = resumed;  // from this model dir's checkpoint, not a warm start's
  result->early_stopped = early_stopped;
  result->best_metric = best_value;
  result->best_step = best_step;
  NotePlateau(result);
}

void Trainer::Impl::NotePlateau(TrainResult* result) const {
  result->learning_rate =
      options.has_lr_schedule()
          ? optim::ScheduledLearningRate(options.lr_schedule(), BaseRate(), pos.global_step + 1 - warm_start_step)
          : options.optimizer.learning_rate;
  result->lr_drops = lr_drops;
}

Status Trainer::Impl::Train(const Dataset& train, const Dataset* valid, TrainResult* result) {
  CTRAIN_RETURN_IF_ERROR(BeginRun(result));
  if (remote != nullptr && !remote_ready) {  // Restore() was not called: declare the model now
    bool restored = false;
    CTRAIN_RETURN_IF_ERROR(RestoreRemote(&restored));
  }
  CTRAIN_RETURN_IF_ERROR(CheckData(train, "training"));
  if (valid != nullptr) CTRAIN_RETURN_IF_ERROR(CheckData(*valid, "validation"));
  if (train.empty()) return InvalidArgumentError("training data is empty");
  if (pos.train_rows != 0 && pos.train_rows != train.size())
    return FailedPreconditionError("checkpoint in " + options.model_dir + " was trained on " +
                                   std::to_string(pos.train_rows) + " rows, this run has " +
                                   std::to_string(train.size()) +
                                   ": resuming needs the same training data (to train this model on new data, add "
                                   "--warm-start-from <its model dir>; or use a new --model-dir)");
  pos.train_rows = train.size();
  train_inputs = nullptr;  // memory mode: the rows, not the files, are known (train_rows)
  source_paths = train.source_paths();
  source_reader = train.source_reader();
  if (!train.multi_hot()) {  // per-field value statistics: one value per field
    InputStats st(train.field_size());
    st.Add(train.ids(), train.values(), train.size(), train.labels());
    WarnInputs(st, result, st.examples());  // storage order = file order: the rows looked at come first
  }
  NoteRestoredState(result);
  pool->ConfigureThread(0);
  std::unique_ptr<EpochFeed> feed = MakeMemoryFeed(*this, train);
  return RunEpochs(*feed, valid, result);
}

Status Trainer::Impl::TrainStream(const StreamInput& input, const Dataset* valid, TrainResult* result) {
  if (remote != nullptr)
    return InvalidArgumentError("--ps (" + remote->Describe() +
                                "): a worker reads its training data in memory (--input-mode memory)");
  CTRAIN_RETURN_IF_ERROR(BeginRun(result));
  result->streamed = true;
  if (valid != nullptr) CTRAIN_RETURN_IF_ERROR(CheckData(*valid, "validation"));
  source_paths = input.files;
  source_reader = input.reader;
  // Ids are range-checked where they are parsed, so the error names the file and line/record.
  StreamInput checked = input;
  // --oov bucket: ids at or above the vocabulary read as their field's out-of-vocabulary row.
  if (checked.reader.id_limit <= 0 || checked.reader.id_limit > options.model.vocabulary_size())
    checked.reader.id_limit = options.model.vocabulary_size();
  checked.reader.oov_buckets = options.model.oov_buckets;
  std::unique_ptr<BatchSource> src;
  if (source_factory) {
    BatchSourceParams params;
    params.input = &checked;
    params.batch_size = options.batch_size;
    params.epochs = options.epochs;
    params.seed = options.seed;
    params.shuffle = options.shuffle;
    params.start_epoch = pos.epoch;
    params.start_batch = pos.batch_in_epoch;
    params.cursor = restored_cursor;
    CTRAIN_ASSIGN_OR_RETURN(src, source_factory(params));
  } else {
    if (!restored_cursor.is_null())
      return FailedPreconditionError(restored_path +
                                     ": the checkpoint was trained through the data service (meta \"data_cursor\"); "
                                     "resume it with the same --data-service and --job-name, or use a new --model-dir");
    CTRAIN_ASSIGN_OR_RETURN(src, EpochBatchSource::Create(checked, options.batch_size, options.epochs, options.seed,
                                                          options.shuffle, pos.epoch, pos.batch_in_epoch));
  }
  // A resume must read the same inputs as the checkpoint (memory mode checks the row count).
  CTRAIN_ASSIGN_OR_RETURN(nlohmann::json inputs, src->DescribeInputs());
  if (!restored_inputs.is_null())
    CTRAIN_RETURN_IF_ERROR(CheckSameStreamInputs(restored_inputs, inputs, restored_path));
  CTRAIN_RETURN_IF_ERROR(CheckNoEmptyFiles(inputs));
  train_inputs = std::move(inputs);
  NoteRestoredState(result);
  stream_src = src.get();
  struct ClearSource {
    const BatchSource** p;
    ~ClearSource() { *p = nullptr; }
  } clear_source{&stream_src};
  stream_known_from.clear();
  for (const std::string& f : input.files)  // an up-front format comes from the files (DetectInputFormats)
    if (f != "-" && f.rfind("pipe:", 0) != 0) stream_known_from += (stream_known_from.empty() ? "" : " ") + f;
  pool->ConfigureThread(0);
  std::unique_ptr<EpochFeed> feed = MakeStreamFeed(*this, input, src.get(), result);
  CTRAIN_RETURN_IF_ERROR(RunEpochs(*feed, valid, result));
  result->pipeline = src->stats();
  CTRAIN_RETURN_IF_ERROR(src->Finish());
  result->source_metrics = src->Metrics();
  // Too few steps or seconds measure start-up (thread start, first reads,
  // oneDNN primitive creation), not the steady state: no advice from them.
  if (result->steps_this_run >= kMinStepsForInputAdvice && result->seconds >= kMinSecondsForInputAdvice)
    result->input_suggestion =
        source_factory ? result->source_metrics.value("advice", std::string())
                       : data::InputBoundSuggestion(result->input_wait_fraction, input.pipeline.num_parallel_calls,
                                                    input.pipeline.prefetch_buffer_size);
  return Status::OK();
}

}  // namespace ctrain::train
