// The training job's data: opening or loading it, its description, the autotune sample (job/train_steps.h).
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ctrain/base/log.h"
#include "ctrain/data/feature_spec.h"
#include "ctrain/data/file_list.h"
#include "ctrain/data/pipeline.h"
#include "ctrain/data/shard.h"
#include "ctrain/dataservice/client.h"
#include "ctrain/job/load_examples.h"
#include "ctrain/job/train_steps.h"
#include "ctrain/train/data_source.h"
#include "ctrain/train/input_checks.h"
#include "ctrain/train/threads.h"

namespace ctrain::job {
namespace {

// Loads `files` into memory: through --feature-spec when given, else with the data flags.
Status LoadRows(TrainRun& run, const std::vector<std::string>& files, train::Dataset* rows, const char* what,
                train::LoadStats* stats) {
  if (run.spec) return LoadSpecExamples(files, *run.spec, rows, what, stats);
  return LoadExamples(files, run.job.data, run.o.model.vocabulary_size(), rows, what, stats);
}

Status LoadValid(TrainRun& run) {
  if (run.job.valid.empty()) return Status::OK();
  CTRAIN_RETURN_IF_ERROR(LoadRows(run, run.job.valid, &run.va, "valid", &run.va_stats));
  run.have_valid = true;
  return Status::OK();
}

// Stream mode: the input pipeline over --train, or the data service.
Status OpenStream(TrainRun& run) {
  TrainJobOptions& job = run.job;
  const train::TrainOptions& o = run.o;
  train::StreamInput& si = run.si;
  si.files = job.train;
  CTRAIN_ASSIGN_OR_RETURN(si.reader, job.data.ReaderOptions());
  si.reader.feature_size = o.model.vocabulary_size();  // --oov bucket: the rows after it are the OOV rows
  si.reader.id_limit = o.model.vocabulary_size();
  si.pipeline = job.pipeline;
  si.pipeline.pipe_timeout_ms = job.data.pipe_timeout_ms;  // --pipe-timeout-ms is a data flag (all commands)
  if (!job.given.Has("num_shards") && !job.given.Has("shard_index") && !run.per_rank_inputs) {
    CTRAIN_ASSIGN_OR_RETURN(data::ShardSpec shard, data::ShardFromEnvironment());
    si.pipeline.num_shards = shard.num_shards;
    si.pipeline.shard_index = shard.index;
  }
  if (run.remote) {
    CTRAIN_ASSIGN_OR_RETURN(dataservice::DataServiceClientOptions dso,
                            job.data_service.Options(/*ordered=*/true, CanonicalPath(job.data.feature_map)));
    run.data_service_factory = dataservice::MakeDataServiceSourceFactory(dso);
    // Received batches are decoded on the stream threads and freed on the
    // trainer's: one malloc arena per core keeps RSS near the byte limits
    // (docs/data-service.md#memory).
    mallopt(M_ARENA_MAX, std::max(2, train::AvailableCpus()));
    if (run.report)
      Logf("training data from the data service at %s (%s, job %s)\n",
                   dso.dispatcher.c_str(), job.data_service.processing_mode.c_str(),
                   dso.job_name.empty() ? "by dataset" : dso.job_name.c_str());
  } else if (run.report) {
    std::fprintf(stderr,
                 "ctrain: streaming training data from %zu input(s): reads=%d calls=%d shuffle_buffer=%lld "
                 "prefetch=%d cache=%s shard %d/%d\n",
                 si.files.size(), si.pipeline.num_parallel_reads, si.pipeline.num_parallel_calls,
                 static_cast<long long>(o.shuffle ? si.pipeline.shuffle_buffer_size : 0),
                 si.pipeline.prefetch_buffer_size, si.pipeline.cache.empty() ? "none" : si.pipeline.cache.c_str(),
                 si.pipeline.shard_index, si.pipeline.num_shards);
  }
  return LoadValid(run);
}

// No --train: the built-in synthetic data (data/synth.h), in memory.
Status MakeSynth(TrainRun& run) {
  const train::TrainOptions& o = run.o;
  if (!run.job.valid.empty()) return InvalidArgumentError("--valid given without --train");
  if (o.model.field_size != 39)
    return InvalidArgumentError("the built-in synthetic data has field_size 39, got --field-size " +
                                std::to_string(o.model.field_size));
  std::fprintf(stderr,
               "ctrain: no --train given: training on built-in synthetic Criteo-like data "
               "(data/synth.h, seed %llu): %lld train + %lld validation rows, field_size 39, feature_size %lld\n",
               static_cast<unsigned long long>(o.seed), static_cast<long long>(kSynthTrainRows),
               static_cast<long long>(kSynthValidRows), static_cast<long long>(o.model.feature_size));
  CTRAIN_ASSIGN_OR_RETURN(run.tr, train::MakeSynthDataset(o.seed, 0, kSynthTrainRows, o.model.vocabulary_size()));
  run.dist.ShardRows(&run.tr, /*log=*/false);
  CTRAIN_ASSIGN_OR_RETURN(run.va,
                          train::MakeSynthDataset(o.seed, kSynthTrainRows, kSynthValidRows, o.model.vocabulary_size()));
  run.have_valid = true;
  return Status::OK();
}

}  // namespace

Status OpenData(TrainRun& run) {
  for (const std::string& t : run.job.train)
    for (const std::string& v : run.job.valid)
      if (t == "-" && v == "-")
        return InvalidArgumentError("--train - and --valid - both read stdin, which can be read once: give one of "
                                    "them as a file");
  if (run.stream) return OpenStream(run);
  if (run.job.train.empty()) return MakeSynth(run);
  CTRAIN_RETURN_IF_ERROR(LoadRows(run, run.job.train, &run.tr, "train", &run.tr_stats));
  if (!run.per_rank_inputs) run.dist.ShardRows(&run.tr, /*log=*/true);  // memory mode shards its rows too
  return LoadValid(run);
}

Status FindFeatureMap(TrainRun& run) {
  TrainJobOptions& job = run.job;
  if (!job.data.feature_map.empty() || run.spec || job.train.empty()) return Status::OK();
  // --data-service: --train names files on the data hosts (the dispatcher expands it there), which this
  // host need not have (a heterogeneous job's trainer group has no train channel: case B51).
  if (!job.data_service.address.empty()) return Status::OK();
  const std::string& first = job.train[0];
  if (first == "-" || first.rfind("pipe:", 0) == 0) return Status::OK();
  data::FileListSkipped skipped;  // logged when the files are read
  CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> files, data::ExpandFileList({first}, &skipped));
  if (files.empty() || data::IsStreamPath(files[0])) return Status::OK();
  const std::string beside = files[0] + ".feature_map.txt";  // where `ctrain convert` writes it
  if (data::RegularFileSize(beside) < 0) return Status::OK();
  data::ExampleReaderOptions ro;
  CTRAIN_ASSIGN_OR_RETURN(ro.format, data::ParseRecordFormat(job.data.format));
  CTRAIN_ASSIGN_OR_RETURN(ro.compression, io::ParseCompression(job.data.compression));
  CTRAIN_ASSIGN_OR_RETURN(std::vector<train::InputFormat> formats, train::DetectInputFormats({files[0]}, ro));
  if (formats.empty() || (formats[0].format != "libsvm" && formats[0].format != "tfrecord"))
    return Status::OK();  // Criteo rows: --feature-map decides hashing or vocabulary, never a file nearby
  job.data.feature_map = beside;
  if (run.report) Logf("the ids of %s come from the feature map beside it, %s (recorded in checkpoints)\n",
                       files[0].c_str(), beside.c_str());
  return Status::OK();
}

Status DescribeData(TrainRun& run) {
  TrainJobOptions& job = run.job;
  train::TrainOptions& o = run.o;
  if (run.spec) {  // recorded in checkpoints with the spec itself: eval/predict read through it
    o.data = train::MakeSpecDataSource(*run.spec, run.tr_stats);
    return Status::OK();
  }
  if (job.train.empty()) return Status::OK();
  // Recorded in checkpoints: the format actually read (never auto), id base,
  // sizes, hashing or vocabulary (train/data_source.h).
  CTRAIN_ASSIGN_OR_RETURN(data::ExampleReaderOptions ro, job.data.ReaderOptions());
  ro.feature_size = o.model.vocabulary_size();
  std::vector<train::InputFormat> formats;
  if (run.remote) {  // the files are read on the workers' hosts: the format is known once read
    for (const std::string& f : job.train) formats.push_back({f, job.data.format == "auto" ? "" : job.data.format, ""});
  } else if (run.stream) {
    CTRAIN_ASSIGN_OR_RETURN(formats, train::DetectInputFormats(job.train, ro));
  } else {
    formats = train::InputFormatsRead(run.tr_stats);
  }
  CTRAIN_ASSIGN_OR_RETURN(o.data, train::DescribeTrainingData(formats, ro, CanonicalPath(job.data.feature_map)));
  // --valid must be encoded like --train (the check eval makes against a checkpoint).
  if (run.have_valid)
    CTRAIN_RETURN_IF_ERROR(train::CheckValidMatchesTraining(o.data, job.train, train::InputFormatsRead(run.va_stats),
                                                            ro, CanonicalPath(job.data.feature_map)));
  return Status::OK();
}

Status SampleForAutotune(TrainRun& run) {
  if (!run.job.autotune || !run.stream) return Status::OK();
  const train::TrainOptions& o = run.o;
  const train::StreamInput& si = run.si;
  // Autotune measures on in-memory rows: a sample read through the pipeline.
  for (const std::string& f : si.files)
    if (f == "-" || f.rfind("pipe:", 0) == 0)
      return FailedPreconditionError("--autotune cannot sample a stream input (" + f +
                                     "): it would consume the training data; give the thread layout instead");
  const int64_t want = (run.job.autotune_steps + 1) * o.batch_size * std::max(2, train::AvailableCpus());
  data::PipelineOptions po = si.pipeline;
  po.epochs = 1;
  po.batch_size = o.batch_size;
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<data::Pipeline> p, data::Pipeline::Create(si.files, si.reader, po));
  run.tr = train::Dataset(o.model.field_size);
  data::Batch b;
  while (run.tr.size() < want) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, p->Next(&b));
    if (!more) break;
    if (b.field_size != o.model.field_size || !b.row_splits.empty())
      return InvalidArgumentError("training data has field_size " + std::to_string(b.field_size) +
                                  " or variable-length rows; the model needs " + std::to_string(o.model.field_size) +
                                  " fields per example");
    for (int64_t r = 0; r < b.size(); ++r)
      run.tr.Append(b.labels[r], b.ids.data() + r * b.field_size, b.values.data() + r * b.field_size);
  }
  return Status::OK();
}

}  // namespace ctrain::job
