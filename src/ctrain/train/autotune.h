// Autotune: picks the fastest thread layout (and, when asked, GEMM precision)
// for this machine and model by measuring it. Each candidate (intra_op_threads
// x towers, and hogwild replicas) with replicas * intra_op_threads <= the CPUs
// this process may use (train/threads.h) gets a scratch Trainer (fresh
// parameters, no model_dir) that runs a few steps on the real training data;
// the one with the highest examples/s wins. The real run then starts from
// scratch (or its checkpoint) with that layout, so autotuning changes how fast,
// not what is trained: every layout is deterministic for itself except hogwild
// (the result notes say when hogwild wins; AutotuneOptions::deterministic
// leaves it out), and bf16 is measured only when the caller allows it.
//
// The layout is chosen by timing, so two autotuned runs may pick different
// layouts (and then differ in the last bits); the result's `flags` line gives
// the layout as flags for reruns without autotune.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/model/layers/fully_connected.h"
#include "ctrain/train/dataset.h"
#include "ctrain/train/train_config.h"

namespace ctrain::train {

struct AutotuneOptions {
  int64_t steps = 5;           // timed steps per candidate, after one warm-up step (>= 1)
  bool deterministic = false;  // measure only deterministic layouts (no hogwild)
  // Also measure every layout with bf16 GEMMs (mixed precision) when the CPU
  // has AVX512_BF16 (model::Bf16GemmSupported); a note says why not otherwise.
  // false: every candidate uses base.model.gemm_dtype.
  bool try_bf16 = false;
  // Thread settings the user gave explicitly: kept as given, only the rest is
  // measured (0 / -1 = tune it). An explicit towers or hogwild fixes the kind
  // of layout: towers > 0 measures no hogwild rows, hogwild 0 none either,
  // hogwild > 0 only hogwild rows with that many replicas.
  int32_t fixed_intra_op_threads = 0;
  int32_t fixed_towers = 0;
  int32_t fixed_hogwild = -1;
};

struct AutotuneRow {
  ParallelOptions parallel;
  model::DataType gemm_dtype = model::DataType::kF32;
  double examples_per_sec = 0;
  std::string error;  // non-empty if the candidate failed
};

struct AutotuneResult {
  std::vector<AutotuneRow> rows;   // in candidate order
  size_t best = 0;                 // index of the fastest row
  std::vector<std::string> notes;  // for the user: what was left out and why, what the winner implies
  std::string flags;               // the winner as flags: "--intra-op-threads 2 --towers 1 --mixed-precision f32"
};

// The layouts for `cores` CPUs: towers in {1, 2, 4, ...} and, unless
// `deterministic`, hogwild in {2, 4, ...}; intra threads in {1, 2, 4, ...,
// cores / replicas} (plus cores / replicas itself). Each has `affinity` and
// `deterministic` set as given.
// With `opts`, the fixed settings of AutotuneOptions are kept in every candidate.
std::vector<ParallelOptions> AutotuneCandidates(int32_t cores, bool affinity, bool deterministic = false,
                                                const AutotuneOptions& opts = {});

// One candidate: a scratch Trainer of `base` with layout `p` (base's inter_op_threads kept) and GEMM type
// `dtype`, no model dir, timed for `steps` steps after one warm-up step. A failure is in the row's error,
// and its status in *error when given (OK otherwise).
AutotuneRow MeasureLayout(const TrainOptions& base, const Dataset& train, const ParallelOptions& p,
                          model::DataType dtype, int64_t steps, Status* error = nullptr);

// Measures every candidate for AvailableCpus() on `train` (the fixed thread
// settings of `opts` kept; a note names them) (which must hold at
// least one batch). Errors: InvalidArgument for steps < 1; the first
// candidate's error if every candidate fails.
StatusOr<AutotuneResult> Autotune(const TrainOptions& base, const Dataset& train, const AutotuneOptions& opts);

// The notes on rows[best]: hogwild (not deterministic), bf16 (when measured
// against f32: its speed-up and that results differ slightly).
std::vector<std::string> WinnerNotes(const AutotuneResult& r, bool try_bf16);
// rows[best] as flags: "--intra-op-threads 2 --towers 1 --mixed-precision f32".
std::string WinnerFlags(const AutotuneResult& r);

// Sets o->parallel (keeping its inter_op_threads and affinity) and
// o->model.gemm_dtype to the winner's.
void ApplyAutotune(const AutotuneResult& r, TrainOptions* o);

// --autotune's wait-policy trial (docs/performance.md#4). libgomp reads OMP_WAIT_POLICY once, when it is
// loaded, so measuring the other policy takes a re-exec (train/openmp_wait.h ReexecWithOpenMPWait): the
// first process measures every layout under the policy it was started with, then re-executes itself with
// the other policy and this record in the environment variable kAutotuneWaitVar; the second measures the
// winning layout alone and trains when it is at least as fast, or re-executes once more with the first
// policy and the record marked decided, and that third process trains without measuring.
inline constexpr const char* kAutotuneWaitVar = "CTRAIN_AUTOTUNE_WAIT";

struct AutotuneWaitRecord {
  bool decided = false;  // false: a trial (the second process measures); true: train with `policy`
  std::string policy;    // "ACTIVE" or "PASSIVE": the policy `row` was measured under (decided: the winner)
  double other_examples_per_sec = 0;  // decided: the other policy's figure on the same layout
  AutotuneRow row;                    // the winning layout, its GEMM type and examples/s
};

// The other libgomp policy: "ACTIVE" <-> "PASSIVE".
std::string OtherWaitPolicy(const std::string& policy);
// "trial|decided POLICY EPS OTHER_EPS INTRA_OP TOWERS HOGWILD f32|bf16", one line.
std::string EncodeAutotuneWait(const AutotuneWaitRecord& r);
// The inverse. InvalidArgument naming kAutotuneWaitVar and the bad field for anything else (another word
// count, an unknown stage, policy or GEMM type, a number that does not parse or is out of range).
StatusOr<AutotuneWaitRecord> DecodeAutotuneWait(std::string_view text);

// A fixed-width table of the rows (one line per candidate, the best marked
// '*', hogwild rows marked "(not deterministic)"), then the notes and the
// flags line.
std::string FormatAutotuneTable(const AutotuneResult& r);

}  // namespace ctrain::train
