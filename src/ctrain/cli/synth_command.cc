// `ctrain synth`: deterministic Criteo-shaped data (data/synth.h) as libsvm or tfrecord.
// --row-offset N writes rows N..N+rows-1 of the same ground truth (row r is a
// pure function of (seed, r)), so a validation set is a second call:
//   ctrain synth --rows 100000 -o tr.tfrecord
//   ctrain synth --rows 20000 --row-offset 100000 -o va.tfrecord
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "ctrain/cli/commands.h"
#include "ctrain/cli/data_flags.h"
#include "ctrain/data/synth.h"
#include "ctrain/io/file.h"

namespace ctrain::cli {
namespace {

struct SynthFlags {
  data::SynthOptions synth;
  std::string output;
  std::string format = "tfrecord";
  std::string compression = "none";
  int32_t id_base = 0;
  int64_t row_offset = 0;
};

Status Synth(const SynthFlags& fl) {
  // Every numeric flag up front, named as the user wrote it (an empty output
  // would only be refused later by every reader).
  const data::SynthOptions& so = fl.synth;
  if (so.rows < 1) return InvalidArgumentError("--rows must be >= 1, got " + std::to_string(so.rows));
  if (so.field_size < 1)
    return InvalidArgumentError("--field-size must be >= 1, got " + std::to_string(so.field_size));
  if (so.num_numeric < 0 || so.num_numeric > so.field_size)
    return InvalidArgumentError("--num-numeric must be in [0, --field-size " + std::to_string(so.field_size) +
                                "], got " + std::to_string(so.num_numeric));
  if (so.feature_size < so.field_size)
    return InvalidArgumentError("--feature-size must be >= --field-size " + std::to_string(so.field_size) +
                                " (each field needs an id), got " + std::to_string(so.feature_size));
  if (fl.id_base < 0) return InvalidArgumentError("--id-base must be >= 0, got " + std::to_string(fl.id_base));
  if (fl.row_offset < 0 || fl.row_offset > INT64_MAX - std::max<int64_t>(fl.synth.rows, 0))
    return InvalidArgumentError("--row-offset must be in [0, 2^63 - 1 - rows], got " + std::to_string(fl.row_offset));
  CTRAIN_RETURN_IF_ERROR(io::CheckOutputWritable("--output", fl.output));
  CTRAIN_ASSIGN_OR_RETURN(auto gen, data::SynthGenerator::Create(fl.synth));
  data::ExampleWriterOptions wo;
  auto fmt = data::ParseRecordFormat(fl.format);
  if (!fmt.ok() || (*fmt != data::RecordFormat::kLibSvm && *fmt != data::RecordFormat::kTFRecord))
    return InvalidArgumentError("synth writes --format libsvm or tfrecord, not '" + fl.format + "'");
  wo.format = *fmt;
  CTRAIN_ASSIGN_OR_RETURN(wo.compression, io::ParseCompression(fl.compression));
  wo.id_base = fl.id_base;
  CTRAIN_ASSIGN_OR_RETURN(auto w, data::OpenExampleWriter(fl.output, wo));
  const int32_t F = fl.synth.field_size;
  std::vector<int64_t> ids(F);
  std::vector<float> vals(F);
  float label;
  for (int64_t r = fl.row_offset; r < fl.row_offset + fl.synth.rows; ++r) {
    gen->Row(r, &label, ids.data(), vals.data());
    CTRAIN_RETURN_IF_ERROR(w->Write(label, ids, vals));
  }
  CTRAIN_RETURN_IF_ERROR(w->Close());
  std::fprintf(stderr,
               "ctrain synth: wrote %lld rows (rows %lld..%lld, field_size %d, feature_size %lld, seed %llu) to %s\n",
               static_cast<long long>(fl.synth.rows), static_cast<long long>(fl.row_offset),
               static_cast<long long>(fl.row_offset + fl.synth.rows - 1), F,
               static_cast<long long>(fl.synth.feature_size), static_cast<unsigned long long>(fl.synth.seed),
               fl.output.c_str());
  return Status::OK();
}

}  // namespace

Command AddSynthCommand(CLI::App& app) {
  auto fl = std::make_shared<SynthFlags>();
  CLI::App* sub = app.add_subcommand("synth", "Write deterministic Criteo-shaped synthetic data");
  sub->add_option("--rows", fl->synth.rows, "Number of examples (>= 1)")->required();
  sub->add_option("--output,-o", fl->output, "Output file ('-' = stdout)")->required();
  sub->add_option("--format", fl->format, "libsvm|tfrecord")->capture_default_str();
  sub->add_option("--compression", fl->compression, "none|gzip|zlib")->capture_default_str();
  sub->add_option("--seed", fl->synth.seed, "Random seed (same seed -> same bytes)")->capture_default_str();
  sub->add_option("--row-offset,--row_offset", fl->row_offset,
                  "Write rows N..N+rows-1 of the same data set (a validation set from the same ground truth: "
                  "--row-offset = the training set's --rows)")
      ->capture_default_str();
  sub->add_option("--field-size,--field_size", fl->synth.field_size, "Fields per example")->capture_default_str();
  sub->add_option("--feature-size,--feature_size", fl->synth.feature_size, "Number of feature ids")
      ->capture_default_str();
  sub->add_option("--num-numeric,--num_numeric", fl->synth.num_numeric, "Numeric fields (the first ones)")
      ->capture_default_str();
  sub->add_option("--id-base,--id_base", fl->id_base, "LibSVM: write ids starting at this base")->capture_default_str();
  return {sub, [fl]() {
            Status s = Synth(*fl);
            return s.ok() ? 0 : ReportError(s);
          }};
}

}  // namespace ctrain::cli
