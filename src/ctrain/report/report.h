// `ctrain report RUN_DIR... [--prices PRICES.toml]`: the price-performance
// tables of the heterogeneous-cluster field report, from the monitoring of
// launched runs (report/run_data.h; docs/launch.md#report).
//
// Per run and instance group: instance type and count, the roles on it, mean and
// peak CPU utilisation (per host: the sum of its roles' process CPU as a share of
// the host's cores, in 1 s buckets; mean over time and hosts, peak over both),
// mean and peak GPU utilisation (NVML; "-" without a GPU), the trainer's step time
// (mean over steps, the first step left out), examples/s (examples / step time),
// input wait, and the cost: price per hour x count, and for the whole cluster the
// cost per million examples = cluster cost per hour / (examples/s x 3600) x 1e6.
// The verdict is input-bound or compute-bound (Verdict()). With two runs or more,
// a side-by-side table compares them with the first ("46 % cheaper per example").
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/report/run_data.h"

namespace ctrain::report {

// PRICES.toml:
//   region = "us-east-1"              # shown in the report
//   date = "2026-11-30"               # when the prices were read
//   currency = "USD"
//   [on_demand_per_hour]
//   "ml.c5.xlarge" = 0.204
struct Prices {
  std::string region, date, currency = "USD", source;
  std::map<std::string, double> per_hour;
};
// Errors name the file and the key (InvalidArgument).
StatusOr<Prices> ParsePrices(const std::string& toml_text, const std::string& path);

struct GroupRow {
  std::string group, instance_type, roles;
  int32_t count = 0;
  double cpu_mean = 0, cpu_peak = 0;    // percent of the host's cores
  double gpu_mean = -1, gpu_peak = -1;  // percent; -1 = no GPU sampled
  bool trains = false;
  double step_ms = 0, examples_per_sec = 0, input_wait_percent = 0;
  double data_queue_fill_percent = -1;  // data workers' mean queue fill; -1 = none
  double price_per_hour = -1;           // per instance; -1 = not in the price list
  double cost_per_hour = -1;            // x count
};

struct RunSummary {
  std::string name, dir;
  std::vector<GroupRow> groups;
  double examples_per_sec = 0, step_ms = 0, input_wait_percent = 0;
  double cost_per_hour = -1, cost_per_million = -1;  // -1: a price is missing
  double final_auc = -1;
  int32_t data_workers = 0;
  std::string verdict;
  std::string cluster;  // "1 x ml.g5.xlarge (train) + 2 x ml.c5.xlarge (data)"
};

RunSummary Summarize(const RunData& run, const Prices& prices);

// "input-bound: the trainer waits 40 % on input while the data workers are saturated
// (queue fill 3 %): add 2 data workers" (the formula of dataservice/advice.h: W workers
// feeding a trainer that waits a fraction w keep up as ceil(W / (1 - w))), or
// "compute-bound: ...". Input-bound from 10 % input wait.
std::string Verdict(const RunSummary& s);

std::string FormatMarkdown(const std::vector<RunSummary>& runs, const Prices& prices);
std::string FormatCsv(const std::vector<RunSummary>& runs);

// Writes <out>/<run>_step_time.png and <out>/<run>_utilization.png with gnuplot
// (data and script files beside them). Errors: FailedPrecondition when gnuplot is
// not on PATH (Debian: gnuplot-nox), Internal naming the script when it fails.
StatusOr<std::vector<std::string>> WriteCharts(const RunData& run, const std::string& out_dir);

}  // namespace ctrain::report
