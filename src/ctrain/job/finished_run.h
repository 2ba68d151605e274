// Idempotent reruns (docs/training.md#daily-retraining): a training run records
// in its checkpoints what it consumed (RunRecord: its input files' content and
// the settings that decide the model); a later run whose --model-dir already
// holds a finished run with an equal record has nothing to do and exits 0
// without training, unless --force. A scheduler's retry of the in-place daily
// loop (--model-dir m --warm-start-from m) thus never trains a day twice.
//
// Thread safety: plain functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/job/train_job.h"

namespace ctrain::job {

// The fingerprint of one input file's content: its size in bytes and the
// CRC-32C of every byte (io/crc32c.h, read in 1 MiB chunks), as
// {"path": canonical path, "bytes": n, "crc32c": "8 hex digits"}. A touched but
// identical file gives the same fingerprint; a changed one (almost surely) not.
// `role` ("train", "valid", "feature_map", "feature_spec") is recorded with it.
// Errors: the file's (NotFound, ...), naming it.
StatusOr<nlohmann::json> FingerprintInputFile(const std::string& path, const std::string& role);

// What a run of `job` consumes: {"inputs": [FingerprintInputFile of every
// --train and --valid file (globs and directories expanded as the job reads
// them), then --feature-map and --feature-spec when given], "settings":
// ResultTrainOptions(job) (job/option_schema.h: the defines_result options)}.
// null when an input cannot be fingerprinted before it is read (stdin, a FIFO,
// a pipe: channel, --data-service: the data hosts read them) or when there is
// no --train (the synthetic data): such a
// run always trains. Errors: ExpandFileList's and the files'.
StatusOr<nlohmann::json> RunRecord(const TrainJobOptions& job);

// The message of a rerun with nothing to do, or "" to train: the latest
// checkpoint meta of `model_dir` (`meta`, null when there is none) says the
// run finished ("finished": true) and its "run_record" equals `record` (not
// null). E.g. "nothing to do: runs/m already finished on these inputs (step
// 16; 1 input file, 20 settings unchanged; --force trains again)".
std::string NothingToDoMessage(const std::string& model_dir, const nlohmann::json& meta,
                               const nlohmann::json& record);

}  // namespace ctrain::job
