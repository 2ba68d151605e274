// `ctrain export`: a trained model for serving (export/onnx_export.h) or for
// other tools (export/npy_export.h). Flags only; the work is in src/ctrain/export/.
//   ctrain export --model-dir runs/a --format onnx -o model.onnx
//   ctrain export --model-dir runs/a --format npy -o weights/
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "ctrain/cli/commands.h"
#include "ctrain/cli/data_flags.h"
#include "ctrain/export/exported_model.h"
#include "ctrain/export/npy_export.h"
#include "ctrain/export/onnx_export.h"
#include "ctrain/io/file.h"

namespace ctrain::cli {
namespace {

struct ExportFlags {
  std::string model_dir;
  std::string format = "onnx";
  std::string output;
  std::string external_data = "auto";
  bool multi_hot = false;
};

Status RunExport(const ExportFlags& fl) {
  if (fl.format != "onnx" && fl.format != "npy")
    return InvalidArgumentError("--format must be onnx or npy, got '" + fl.format + "'");
  if (fl.output == "-")
    return InvalidArgumentError("--output: '-' (stdout) is not supported by export: give a file (onnx) or a directory (npy)");
  exporter::OnnxExportOptions oo;
  {
    StatusOr<exporter::ExternalData> e = exporter::ParseExternalData(fl.external_data);
    if (!e.ok()) return e.status().WithContext("--external-data");
    oo.external_data = *e;
  }
  oo.multi_hot = fl.multi_hot;
  if (fl.multi_hot && fl.format != "onnx") return InvalidArgumentError("--multi-hot applies to --format onnx only");
  if (fl.format == "onnx") CTRAIN_RETURN_IF_ERROR(io::CheckOutputWritable("--output", fl.output));
  std::vector<io::FlagPath> in;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(fl.model_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == "checkpoint" || name.starts_with("ckpt-")) in.push_back({"--model-dir", e.path().string()});
  }
  std::vector<io::FlagPath> out{{"--output", fl.output}};
  if (fl.format == "onnx") out.push_back({"--output (external data)", fl.output + ".data"});
  CTRAIN_RETURN_IF_ERROR(io::CheckOutputsAreNotInputs(in, out));

  CTRAIN_ASSIGN_OR_RETURN(exporter::ExportedModel m, exporter::LoadModelForExport(fl.model_dir));
  if (fl.format == "npy") {
    CTRAIN_ASSIGN_OR_RETURN(nlohmann::json index, exporter::ExportNpy(m, fl.output));
    std::fprintf(stderr, "ctrain export: wrote %zu .npy files and index.json to %s (%s)\n", index["tensors"].size(),
                 fl.output.c_str(), exporter::DescribeModel(m).c_str());
    return Status::OK();
  }
  CTRAIN_ASSIGN_OR_RETURN(exporter::OnnxExportResult r, exporter::ExportOnnx(m, fl.output, oo));
  std::fprintf(stderr, "ctrain export: wrote %s (%lld bytes, %lld nodes, opset 13", r.model_path.c_str(),
               static_cast<long long>(r.model_bytes), static_cast<long long>(r.nodes));
  if (!r.external_data_path.empty())
    std::fprintf(stderr, "; external data %s, %lld bytes", r.external_data_path.c_str(),
                 static_cast<long long>(r.external_bytes));
  std::fprintf(stderr, "): %s\n", exporter::DescribeModel(m).c_str());
  return Status::OK();
}

}  // namespace

Command AddExportCommand(CLI::App& app) {
  auto fl = std::make_shared<ExportFlags>();
  CLI::App* sub = app.add_subcommand("export", "Write a trained model as ONNX (for serving) or as .npy files");
  sub->add_option("--model-dir,--model_dir", fl->model_dir, "Directory with the trained model's checkpoints")
      ->required();
  sub->add_option("--format", fl->format,
                  "onnx: the forward pass as an ONNX graph (inputs ids int64[batch,F], values float[batch,F]; "
                  "output prediction float[batch]); npy: one .npy file per tensor plus index.json")
      ->capture_default_str();
  sub->add_option("--output,-o", fl->output, "The .onnx file (onnx) or a directory (npy)")->required();
  sub->add_option("--external-data,--external_data", fl->external_data,
                  "onnx: store the weights in <output>.data beside the graph: auto (when over 1 GiB), always, "
                  "never")
      ->capture_default_str();
  sub->add_option("--multi-hot,--multi_hot", fl->multi_hot,
                  "onnx: inputs ids/values [batch, F, ids_per_field], each field the values-weighted sum of its "
                  "ids' embeddings (pad with value 0), for models of multi-hot fields")
      ->capture_default_str();
  return {sub, [fl]() {
            Status s = RunExport(*fl);
            return s.ok() ? 0 : ReportError(s);
          }};
}

}  // namespace ctrain::cli
