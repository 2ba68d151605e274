// ctrain report's arithmetic on synthetic monitoring: utilisation per host,
// step time and examples/s from the trainer's steps, costs from the price
// list, and the verdict (the advice formula of dataservice/advice.h).
#include "ctrain/report/report.h"

#include <gtest/gtest.h>

namespace ctrain::report {
namespace {

RoleSeries Role(const std::string& host, const std::string& role, const std::string& group, const std::string& type,
                int hosts) {
  RoleSeries r;
  r.host = host, r.role = role, r.instance_group = group, r.instance_type = type, r.group_hosts = hosts;
  return r;
}

// A trainer that ran `steps` steps of 20 ms with 256 examples, waiting `wait` % on input.
RoleSeries Trainer(int steps, double wait) {
  RoleSeries t = Role("algo-3", "trainer", "train", "ml.g5.xlarge", 1);
  for (int i = 0; i < steps; ++i)
    t.train.push_back({100.0 + i * 0.02, i + 1,
                       {{"train/step_time_ms", 20.0}, {"train/examples_per_sec", 12800.0}, {"train/input_wait_percent", wait}}});
  t.system = {{100, 1, {{"cpu/process_percent", 40}}}, {101, 2, {{"cpu/process_percent", 60}}}};
  t.eval.push_back({101, steps, {{"eval/auc", 0.75}}});
  return t;
}

RoleSeries Worker(const std::string& host, double fill, double cpu) {
  RoleSeries w = Role(host, "data-worker", "data", "ml.c5.xlarge", 2);
  w.system = {{100, 1, {{"cpu/process_percent", cpu}, {"data/queue_fill_percent", fill}}},
              {101, 2, {{"cpu/process_percent", cpu}, {"data/queue_fill_percent", fill}}}};
  return w;
}

Prices TestPrices() {
  StatusOr<Prices> p = ParsePrices("region = \"us-east-1\"\n[on_demand_per_hour]\n\"ml.g5.xlarge\" = 1.408\n"
                                   "\"ml.c5.xlarge\" = 0.204\n",
                                   "p.toml");
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

TEST(Report, HeterogeneousInputBoundAdvisesMoreWorkers) {
  RunData run;
  run.name = "b";
  run.roles = {Worker("algo-1", 2, 95), Worker("algo-2", 4, 93), Trainer(11, 40)};
  RoleSeries disp = Role("algo-1", "dispatcher", "data", "ml.c5.xlarge", 2);
  disp.system = {{100, 1, {{"cpu/process_percent", 3}}}, {101, 2, {{"cpu/process_percent", 3}}}};
  run.roles.push_back(disp);
  RunSummary s = Summarize(run, TestPrices());
  ASSERT_EQ(s.groups.size(), 2u);
  const GroupRow& data = s.groups[0];
  EXPECT_EQ(data.group, "data");
  EXPECT_EQ(data.count, 2);
  EXPECT_EQ(data.roles, "data-worker+dispatcher");
  EXPECT_DOUBLE_EQ(data.cpu_mean, (98 + 93) / 2.0);  // algo-1: worker 95 + dispatcher 3 in the same second
  EXPECT_DOUBLE_EQ(data.cpu_peak, 98);
  EXPECT_DOUBLE_EQ(data.data_queue_fill_percent, 3);
  EXPECT_DOUBLE_EQ(data.cost_per_hour, 2 * 0.204);
  const GroupRow& train = s.groups[1];
  EXPECT_TRUE(train.trains);
  EXPECT_DOUBLE_EQ(train.step_ms, 20.0);
  EXPECT_DOUBLE_EQ(train.examples_per_sec, 12800.0);
  EXPECT_DOUBLE_EQ(train.cpu_mean, 50);
  EXPECT_EQ(train.gpu_mean, -1);
  EXPECT_NEAR(s.cost_per_hour, 1.408 + 0.408, 1e-12);
  EXPECT_NEAR(s.cost_per_million, (1.408 + 0.408) / (12800.0 * 3600) * 1e6, 1e-12);
  EXPECT_DOUBLE_EQ(s.final_auc, 0.75);
  // 2 workers feeding a trainer that waits 40 %: ceil(2 / 0.6) = 4, so 2 more.
  EXPECT_EQ(s.verdict,
            "input-bound: the trainer waits 40 % on input while the data workers are saturated (queue fill 3 %, CPU "
            "96 %): add 2 data workers");
}

TEST(Report, CpuOfARoleSampledSeveralTimesASecondIsItsMeanThatSecond) {
  // 250 ms samples (--monitor-interval-ms 250), and a last sample at exit in the same second: one
  // process at 20-24 % is 22 %, not the sum of its samples.
  RunData run;
  run.name = "fast-samples";
  RoleSeries t = Trainer(5, 3);
  t.system.clear();
  for (int i = 0; i < 8; ++i) t.system.push_back({100 + 0.25 * i, i + 1, {{"cpu/process_percent", i % 2 ? 24.0 : 20.0}}});
  t.system.push_back({101.9, 9, {{"cpu/process_percent", 22.0}}});
  run.roles = {t};
  const RunSummary s = Summarize(run, TestPrices());
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_DOUBLE_EQ(s.groups[0].cpu_mean, 22.0);
  EXPECT_DOUBLE_EQ(s.groups[0].cpu_peak, 22.0);
}

TEST(Report, DataHostsWithoutQueueMetricsAreStillTheDataGroup) {
  // A script's job fed by another data service: its data hosts record CPU (ctrain.monitor("data-worker"))
  // but no queues. The advice is not "move the input pipeline to data hosts": it has them.
  RunData run;
  run.name = "tfds";
  RoleSeries host = Role("algo-2", "data-worker", "data", "ml.c5.xlarge", 1);
  host.system = {{100, 1, {{"cpu/process_percent", 80}}}, {101, 2, {{"cpu/process_percent", 90}}}};
  run.roles = {host, Trainer(11, 40)};
  RunSummary s = Summarize(run, TestPrices());
  EXPECT_EQ(s.verdict,
            "input-bound: the trainer waits 40 % on input from its data hosts (CPU 85 %; their queues are not "
            "recorded): more or faster data hosts, or a faster input service");
  run.roles = {host, Trainer(11, 3)};
  s = Summarize(run, TestPrices());
  EXPECT_EQ(s.verdict, "compute-bound: the trainer waits only 3 % on input; the data hosts keep up (CPU 85 %)");
}

TEST(Report, AScriptsRanksAddUpAndCtrainsRankZeroCountsThemAll) {
  // 2 ranks at 12800 examples/s each. A script's monitor (no loss) counts its own rank's batches; ctrain's
  // trainer counts every rank's examples in each step, so its rank 0 alone is the job's rate.
  RunData run;
  run.name = "ranks";
  RoleSeries r0 = Trainer(11, 3), r1 = Trainer(11, 3);
  r1.rank = 1;
  run.roles = {r0, r1};
  EXPECT_DOUBLE_EQ(Summarize(run, TestPrices()).examples_per_sec, 2 * 12800.0);
  for (RoleSeries& r : run.roles)
    for (Sample& x : r.train) x.values["train/loss"] = 0.5;
  EXPECT_DOUBLE_EQ(Summarize(run, TestPrices()).examples_per_sec, 12800.0);
}

TEST(Report, VerdictsComputeBoundAndFullQueues) {
  RunData run;
  run.name = "a";
  run.roles = {Trainer(5, 3)};
  RunSummary s = Summarize(run, TestPrices());
  EXPECT_EQ(s.verdict.rfind("compute-bound: the trainer waits only 3 % on input", 0), 0u) << s.verdict;
  run.roles = {Trainer(5, 30)};
  EXPECT_EQ(Summarize(run, TestPrices()).verdict.rfind("input-bound: the trainer waits 30 % on input on its own CPUs", 0),
            0u);
  run.roles = {Worker("algo-1", 90, 40), Trainer(5, 30)};
  EXPECT_NE(Summarize(run, TestPrices()).verdict.find("the limit is the transfer or the trainer"), std::string::npos);
  run.roles = {Worker("algo-1", 80, 30), Trainer(5, 2)};
  EXPECT_EQ(Summarize(run, TestPrices()).verdict,
            "compute-bound: the trainer waits only 2 % on input; the data workers run ahead (queues 80 % full, CPU "
            "30 %): fewer or smaller data hosts would cost less");
}

TEST(Report, SideBySideAndCsvAndMissingPrices) {
  RunData a, b;
  a.name = "homogeneous";
  a.roles = {Trainer(5, 30)};
  b.name = "heterogeneous";
  b.roles = {Worker("algo-1", 2, 90), Worker("algo-2", 2, 90), Trainer(5, 1)};
  for (auto& r : b.roles[2].train) r.values["train/examples_per_sec"] = 25600, r.values["train/step_time_ms"] = 10;
  Prices p = TestPrices();
  std::vector<RunSummary> s{Summarize(a, p), Summarize(b, p)};
  const std::string md = FormatMarkdown(s, p);
  EXPECT_NE(md.find("## Side by side"), std::string::npos);
  // a: 1.408 $/h at 12800/s; b: 1.816 $/h at 25600/s -> 1 - (1.816/25600)/(1.408/12800) = 35.5 % cheaper.
  EXPECT_NE(md.find("| vs the first run | baseline | 36 % cheaper | "), std::string::npos) << md;
  // A cost per million examples keeps 4 significant digits (a fraction of a cent on a fast job).
  EXPECT_NE(md.find("| $ per million examples | $0.03056 | $0.01970 | "), std::string::npos) << md;
  EXPECT_NE(md.find("Cluster: $1.408 per hour, 12800 examples/s, $0.03056 per million examples"), std::string::npos)
      << md;
  const std::string csv = FormatCsv(s);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 1 + 2);  // header, a's group, b's two groups
  RunData c;
  c.name = "c";
  c.roles = {Role("algo-1", "trainer", "x", "ml.unknown", 1)};
  EXPECT_EQ(Summarize(c, p).cost_per_hour, -1);
  EXPECT_NE(ParsePrices("[on_demand_per_hour]\n\"ml.x\" = \"cheap\"\n", "/p.toml").status().ToString().find(
                "/p.toml: on_demand_per_hour.\"ml.x\" must be a number"),
            std::string::npos);
}

}  // namespace
}  // namespace ctrain::report
