// `ctrain report RUN_DIR... [--prices PRICES.toml] [--output-dir DIR]`
// (docs/launch.md#report). The work is in the library (report/report.h).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ctrain/base/log.h"
#include "ctrain/cli/commands.h"
#include "ctrain/cli/data_flags.h"
#include "ctrain/io/file.h"
#include "ctrain/report/report.h"

namespace ctrain::cli {
namespace {

struct ReportFlags {
  std::vector<std::string> runs;
  std::string prices, output_dir;
};

Status RunReport(const ReportFlags& fl) {
  report::Prices prices;
  if (!fl.prices.empty()) {
    CTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString(fl.prices));
    CTRAIN_ASSIGN_OR_RETURN(prices, report::ParsePrices(text, fl.prices));
  }
  std::vector<report::RunData> runs;
  std::vector<report::RunSummary> sums;
  for (const std::string& d : fl.runs) {
    CTRAIN_ASSIGN_OR_RETURN(report::RunData r, report::LoadRun(d));
    sums.push_back(report::Summarize(r, prices));
    runs.push_back(std::move(r));
  }
  const std::string out = fl.output_dir.empty() ? fl.runs[0] + "/report" : fl.output_dir;
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return IOError(out + ": cannot create: " + ec.message());
  const std::string md = report::FormatMarkdown(sums, prices);
  std::printf("%s", md.c_str());
  std::fflush(stdout);
  CTRAIN_RETURN_IF_ERROR(io::WriteStringToFileAtomic(out + "/report.md", md));
  CTRAIN_RETURN_IF_ERROR(io::WriteStringToFileAtomic(out + "/report.csv", report::FormatCsv(sums)));
  std::vector<std::string> written{out + "/report.md", out + "/report.csv"};
  for (const report::RunData& r : runs) {
    CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> pngs, report::WriteCharts(r, out));
    written.insert(written.end(), pngs.begin(), pngs.end());
  }
  for (const std::string& w : written) Logf("report: wrote %s\n", w.c_str());
  return Status::OK();
}

}  // namespace

Command AddReportCommand(CLI::App& app) {
  auto fl = std::make_shared<ReportFlags>();  // owned by the run function (CLI11 points into it)
  CLI::App* sub = app.add_subcommand(
      "report", "Price-performance report of launched runs: table per instance group, verdict, Markdown, CSV, PNG "
                "charts (docs/launch.md#report)");
  sub->add_option("runs", fl->runs, "Run directories (a --local-cluster --work-dir, or an output/data)")
      ->required()
      ->expected(1, -1);
  sub->add_option("--prices", fl->prices, "PRICES.toml: on-demand price per hour of each instance type");
  sub->add_option("--output-dir,--output_dir", fl->output_dir, "Where report.md, report.csv and the PNGs go "
                                                               "(default: <first run>/report)");
  Command c;
  c.app = sub;
  c.run = [fl]() -> int {
    Status s = RunReport(*fl);
    return s.ok() ? 0 : ReportError(s);
  };
  return c;
}

}  // namespace ctrain::cli
