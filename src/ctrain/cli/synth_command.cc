// `ctrain synth`: deterministic Criteo-shaped data (data/synth.h) as libsvm or tfrecord.
#include <cstdio>
#include <vector>

#include "ctrain/cli/commands.h"
#include "ctrain/cli/data_flags.h"
#include "ctrain/data/synth.h"

namespace ctrain::cli {
namespace {

struct SynthFlags {
  data::SynthOptions synth;
  std::string output;
  std::string format = "tfrecord";
  std::string compression = "none";
  int32_t id_base = 0;
};

Status Synth(const SynthFlags& fl) {
  if (fl.id_base < 0) return InvalidArgumentError("--id-base must be >= 0, got " + std::to_string(fl.id_base));
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
  for (int64_t r = 0; r < fl.synth.rows; ++r) {
    gen->Row(r, &label, ids.data(), vals.data());
    CTRAIN_RETURN_IF_ERROR(w->Write(label, ids, vals));
  }
  CTRAIN_RETURN_IF_ERROR(w->Close());
  std::fprintf(stderr, "ctrain synth: wrote %lld rows (field_size %d, feature_size %lld, seed %llu) to %s\n",
               static_cast<long long>(fl.synth.rows), F, static_cast<long long>(fl.synth.feature_size),
               static_cast<unsigned long long>(fl.synth.seed), fl.output.c_str());
  return Status::OK();
}

}  // namespace

Command AddSynthCommand(CLI::App& app) {
  auto fl = std::make_shared<SynthFlags>();
  CLI::App* sub = app.add_subcommand("synth", "Write deterministic Criteo-shaped synthetic data");
  sub->add_option("--rows", fl->synth.rows, "Number of examples")->required();
  sub->add_option("--output,-o", fl->output, "Output file ('-' = stdout)")->required();
  sub->add_option("--format", fl->format, "libsvm|tfrecord")->capture_default_str();
  sub->add_option("--compression", fl->compression, "none|gzip|zlib")->capture_default_str();
  sub->add_option("--seed", fl->synth.seed, "Random seed (same seed -> same bytes)")->capture_default_str();
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
