// Idempotent reruns: what a run consumed, and whether a rerun has anything to do (job/finished_run.h).
#include "ctrain/job/finished_run.h"

#include <cstdio>
#include <memory>
#include <vector>

#include "ctrain/base/path.h"
#include "ctrain/data/file_list.h"
#include "ctrain/data/pipe_mode.h"
#include "ctrain/io/crc32c.h"
#include "ctrain/io/file.h"
#include "ctrain/job/option_schema.h"

namespace ctrain::job {

StatusOr<nlohmann::json> FingerprintInputFile(const std::string& path, const std::string& role) {
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::SequentialFile> f, io::OpenSequentialFile(path));
  std::vector<char> buf(1 << 20);
  uint32_t crc = 0;
  uint64_t bytes = 0;
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(size_t n, f->Read(buf.data(), buf.size()));
    if (n == 0) break;
    crc = io::Crc32c(buf.data(), n, crc);
    bytes += n;
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", crc);
  return nlohmann::json{{"role", role}, {"path", CanonicalPath(path)}, {"bytes", bytes}, {"crc32c", hex}};
}

StatusOr<nlohmann::json> RunRecord(const TrainJobOptions& job) {
  if (job.train.empty()) return nlohmann::json();  // the synthetic data: nothing to fingerprint
  // --data-service: the train files are the data hosts' (case B51), not this host's to fingerprint.
  if (!job.data_service.address.empty()) return nlohmann::json();
  nlohmann::json inputs = nlohmann::json::array();
  auto add = [&](const std::vector<std::string>& patterns, const std::string& role) -> StatusOr<bool> {
    if (patterns.empty()) return true;  // no --valid: nothing of that role was read
    for (const std::string& p : patterns)
      if (p == "-" || p.rfind(data::kPipeChannelPrefix, 0) == 0) return false;
    data::FileListSkipped skipped;  // ExpandFileList logs the skipped names when the job reads the files
    CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> files, data::ExpandFileList(patterns, &skipped));
    for (const std::string& f : files) {
      if (data::IsStreamPath(f)) return false;  // a FIFO or device: read once, by the run
      CTRAIN_ASSIGN_OR_RETURN(nlohmann::json fp, FingerprintInputFile(f, role));
      inputs.push_back(std::move(fp));
    }
    return true;
  };
  CTRAIN_ASSIGN_OR_RETURN(bool train_ok, add(job.train, "train"));
  if (!train_ok) return nlohmann::json();
  CTRAIN_ASSIGN_OR_RETURN(bool valid_ok, add(job.valid, "valid"));
  if (!valid_ok) return nlohmann::json();
  for (const auto& [path, role] : {std::pair{job.data.feature_map, "feature_map"},
                                   std::pair{job.data.feature_spec, "feature_spec"}}) {
    if (path.empty()) continue;
    CTRAIN_ASSIGN_OR_RETURN(nlohmann::json fp, FingerprintInputFile(path, role));
    inputs.push_back(std::move(fp));
  }
  nlohmann::json settings = ResultTrainOptions(job);
  return nlohmann::json{{"inputs", std::move(inputs)}, {"settings", std::move(settings)}};
}

std::string NothingToDoMessage(const std::string& model_dir, const nlohmann::json& meta,
                               const nlohmann::json& record) {
  if (record.is_null() || !meta.is_object() || !meta.value("finished", false)) return "";
  const auto it = meta.find("run_record");
  if (it == meta.end() || *it != record) return "";
  const size_t files = record["inputs"].size(), settings = record["settings"].size();
  return "nothing to do: " + model_dir + " already finished on these inputs (step " +
         std::to_string(meta.value("global_step", int64_t{0})) + "; " + std::to_string(files) + " input file" +
         (files == 1 ? "" : "s") + " and " + std::to_string(settings) +
         " settings unchanged; --force trains again)";
}

}  // namespace ctrain::job
