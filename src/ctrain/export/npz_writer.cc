#include "ctrain/export/npz_writer.h"

#include <zip.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>

#include "ctrain/io/file.h"

namespace ctrain::exporter {
namespace {

size_t ElementBytes(NpyType t) { return t == NpyType::kF32 ? 4 : 8; }

// One .npy entry streamed to libzip from its header and the caller's array
// (no copy of the data): a zip_source_function callback's state.
struct NpyEntry {
  std::string header;
  const char* data = nullptr;
  uint64_t data_bytes = 0;
  uint64_t pos = 0;  // bytes of header + data already read
  zip_error_t error;
};

zip_int64_t ReadEntry(void* state, void* out, zip_uint64_t len, zip_source_cmd_t cmd) {
  auto* e = static_cast<NpyEntry*>(state);
  const uint64_t total = e->header.size() + e->data_bytes;
  switch (cmd) {
    case ZIP_SOURCE_OPEN:
      e->pos = 0;
      return 0;
    case ZIP_SOURCE_READ: {
      uint64_t n = 0;
      char* dst = static_cast<char*>(out);
      while (n < len && e->pos < total) {
        const bool in_header = e->pos < e->header.size();
        const char* src = in_header ? e->header.data() + e->pos : e->data + (e->pos - e->header.size());
        const uint64_t left = in_header ? e->header.size() - e->pos : total - e->pos;
        const uint64_t k = std::min<uint64_t>(left, len - n);
        std::memcpy(dst + n, src, k);
        n += k;
        e->pos += k;
      }
      return static_cast<zip_int64_t>(n);
    }
    case ZIP_SOURCE_CLOSE:
      return 0;
    case ZIP_SOURCE_STAT: {
      auto* st = static_cast<zip_stat_t*>(out);
      zip_stat_init(st);
      st->size = total;
      st->valid |= ZIP_STAT_SIZE;
      return sizeof(zip_stat_t);
    }
    case ZIP_SOURCE_ERROR:
      return zip_error_to_data(&e->error, out, len);
    case ZIP_SOURCE_FREE:
      return 0;
    case ZIP_SOURCE_SUPPORTS:
      return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT,
                                            ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, -1);
    default:
      zip_error_set(&e->error, ZIP_ER_OPNOTSUPP, 0);
      return -1;
  }
}

Status ZipError(const std::string& what, zip_error_t* e) {
  return InternalError("npz: " + what + ": " + zip_error_strerror(e));
}

}  // namespace

Status WriteNpz(const std::string& path, const std::vector<NpzArray>& arrays) {
  std::set<std::string> names;
  for (const NpzArray& a : arrays) {
    if (a.name.empty() || a.name.find('/') != std::string::npos)
      return InvalidArgumentError(path + ": npz array name '" + a.name + "' must be non-empty and hold no '/'");
    if (!names.insert(a.name).second) return InvalidArgumentError(path + ": npz array name '" + a.name + "' repeats");
  }
  // The archive in memory (libzip's buffer source, kept past zip_close), then one write.
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &err);
  if (buffer == nullptr) return ZipError("buffer", &err);
  zip_source_keep(buffer);
  std::unique_ptr<zip_source_t, void (*)(zip_source_t*)> keep(buffer, zip_source_free);
  zip_t* z = zip_open_from_source(buffer, ZIP_TRUNCATE, &err);
  if (z == nullptr) {
    zip_source_free(buffer);  // the reference zip_open_from_source did not take
    return ZipError("open", &err);
  }
  std::vector<std::unique_ptr<NpyEntry>> entries;
  for (const NpzArray& a : arrays) {
    auto e = std::make_unique<NpyEntry>();
    zip_error_init(&e->error);
    e->header = NpyHeader(a.type, a.shape);
    uint64_t n = 1;
    for (int64_t d : a.shape) n *= static_cast<uint64_t>(d);
    e->data = static_cast<const char*>(a.data);
    e->data_bytes = n * ElementBytes(a.type);
    zip_source_t* src = zip_source_function(z, ReadEntry, e.get());
    if (src == nullptr) {
      zip_discard(z);
      return InternalError("npz: entry " + a.name + ": " + zip_strerror(z));
    }
    const std::string entry = a.name + ".npy";
    const zip_int64_t idx = zip_file_add(z, entry.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
      zip_source_free(src);
      const std::string m = zip_strerror(z);
      zip_discard(z);
      return InternalError("npz: entry " + entry + ": " + m);
    }
    zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0);  // as numpy.savez
    entries.push_back(std::move(e));
  }
  if (zip_close(z) != 0) {
    const std::string m = zip_strerror(z);
    zip_discard(z);
    return InternalError("npz: " + path + ": " + m);
  }
  if (zip_source_open(buffer) != 0) return ZipError("reopen", zip_source_error(buffer));
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> out,
                          io::OpenWritableFile(path, io::WriteOptions{.atomic = true}));
  std::string chunk(size_t{4} << 20, '\0');
  Status s;
  for (;;) {
    const zip_int64_t n = zip_source_read(buffer, chunk.data(), chunk.size());
    if (n < 0) {
      s = ZipError("read", zip_source_error(buffer));
      break;
    }
    if (n == 0) break;
    s = out->Append(std::string_view(chunk.data(), static_cast<size_t>(n)));
    if (!s.ok()) break;
  }
  zip_source_close(buffer);
  CTRAIN_RETURN_IF_ERROR(s);
  return out->Close();
}

StatusOr<std::vector<NpzArray>> SpecColumnArrays(const data::SpecColumns& c) {
  const int64_t b = c.rows();
  std::vector<NpzArray> out;
  out.push_back({"label", NpyType::kF32, {b}, c.labels.data()});
  for (const data::SpecColumn& col : c.columns) {
    const std::vector<int64_t> shape = col.width == 1 ? std::vector<int64_t>{b} : std::vector<int64_t>{b, col.width};
    switch (col.kind) {
      case data::SpecColumn::Kind::kDense: out.push_back({col.name, NpyType::kF32, shape, col.values.data()}); break;
      case data::SpecColumn::Kind::kIds: out.push_back({col.name, NpyType::kI64, shape, col.ids.data()}); break;
      case data::SpecColumn::Kind::kBag: {
        const int64_t nnz = static_cast<int64_t>(col.ids.size());
        out.push_back({col.name + ".ids", NpyType::kI64, {nnz}, col.ids.data()});
        out.push_back({col.name + ".offsets", NpyType::kI64, {b}, col.offsets.data()});
        if (col.weighted) out.push_back({col.name + ".weights", NpyType::kF32, {nnz}, col.values.data()});
        break;
      }
    }
  }
  std::set<std::string> names;
  for (const NpzArray& a : out)
    if (!names.insert(a.name).second)
      return InvalidArgumentError("npz: two arrays would be named '" + a.name +
                                  "' (rename the spec entry: 'label' and '<multi-hot name>.ids/.offsets/.weights' "
                                  "are taken)");
  return out;
}

}  // namespace ctrain::exporter
