#include "ctrain/export/npy_export.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "ctrain/io/file.h"
#include "ctrain/train/train_config.h"

namespace ctrain::exporter {

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyAlign = 64;
constexpr size_t kWriteChunk = size_t{4} << 20;  // bytes per Append of a large table

std::string FileNameOf(const std::string& tensor_name) {
  std::string f = tensor_name;
  std::replace(f.begin(), f.end(), '/', '.');
  return f + ".npy";
}

}  // namespace

std::string NpyHeader(NpyType type, const std::vector<int64_t>& shape) {
  std::string dict = std::string("{'descr': '") + (type == NpyType::kF32 ? "<f4" : "<i8") +
                     "', 'fortran_order': False, 'shape': (";
  // Python's tuple repr: (), (5,), (5, 8).
  for (size_t i = 0; i < shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dict += ',';
  dict += "), }";
  // magic (6) + version (2) + header length (2) + dict + spaces + '\n', a multiple of 64.
  const size_t prefix = 10;
  size_t total = prefix + dict.size() + 1;
  total = (total + kNpyAlign - 1) / kNpyAlign * kNpyAlign;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  const uint16_t len = static_cast<uint16_t>(dict.size());
  std::string h(kNpyMagic, 6);
  h += '\x01';
  h += '\x00';
  h += static_cast<char>(len & 0xff);
  h += static_cast<char>(len >> 8);
  return h + dict;
}

Status WriteNpy(const std::string& path, NpyType type, const std::vector<int64_t>& shape, const void* data) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  io::WriteOptions wo;
  wo.atomic = true;
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> f, io::OpenWritableFile(path, wo));
  CTRAIN_RETURN_IF_ERROR(f->Append(NpyHeader(type, shape)));
  // x86-64 is little-endian, which is what '<f4' / '<i8' declare.
  const size_t bytes = static_cast<size_t>(n) * (type == NpyType::kF32 ? 4 : 8);
  const char* p = static_cast<const char*>(data);
  for (size_t off = 0; off < bytes; off += kWriteChunk)
    CTRAIN_RETURN_IF_ERROR(f->Append(std::string_view(p + off, std::min(kWriteChunk, bytes - off))));
  return f->Close();
}

StatusOr<nlohmann::json> ExportNpy(const ExportedModel& m, const std::string& out_dir) {
  std::error_code ec;
  if (std::filesystem::exists(out_dir, ec) && !std::filesystem::is_directory(out_dir, ec))
    return FailedPreconditionError(out_dir + ": exists and is not a directory (--format npy writes a directory)");
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return InternalError(out_dir + ": cannot create directory: " + ec.message());
  nlohmann::json tensors = nlohmann::json::array();
  for (const ExportTensor& t : m.tensors) {
    const std::string file = FileNameOf(t.name);
    CTRAIN_RETURN_IF_ERROR(WriteNpy(out_dir + "/" + file, NpyType::kF32, t.shape, t.value.data()));
    tensors.push_back({{"name", t.name}, {"file", file}, {"dtype", "float32"}, {"shape", t.shape}});
  }
  if (m.keyed) {  // keys[i]'s row is num_dense_fields + 1 + i of the tables (exported_model.h)
    CTRAIN_RETURN_IF_ERROR(WriteNpy(out_dir + "/embeddings.keys.npy", NpyType::kI64,
                                    {static_cast<int64_t>(m.keys.size())}, m.keys.data()));
    tensors.push_back({{"name", "embeddings/keys"}, {"file", "embeddings.keys.npy"}, {"dtype", "int64"},
                       {"shape", {static_cast<int64_t>(m.keys.size())}},
                       {"rows", "keys[i] -> row num_dense_fields + 1 + i of embeddings/w and embeddings/V; row "
                                "num_dense_fields is the zero row of keys without one"}});
  }
  nlohmann::json index{{"format", "ctrain-npy-export-v1"},
                       {"checkpoint", m.checkpoint_path},
                       {"step", m.step},
                       {"model", train::ModelConfigToJson(m.config)},
                       {"data", m.data_source},
                       {"tensors", tensors}};
  CTRAIN_RETURN_IF_ERROR(io::WriteStringToFileAtomic(out_dir + "/index.json", index.dump(2) + "\n"));
  return index;
}

}  // namespace ctrain::exporter
