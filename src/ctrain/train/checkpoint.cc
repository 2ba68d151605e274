#include "ctrain/train/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unordered_set>

#include "ctrain/io/crc32c.h"
#include "ctrain/io/file.h"

namespace ctrain::train {
namespace {

static_assert(std::endian::native == std::endian::little, "checkpoint I/O assumes a little-endian host");

constexpr char kMagic[8] = {'C', 'T', 'R', 'N', 'C', 'K', 'P', 'T'};
constexpr char kFooterMagic[8] = {'C', 'T', 'R', 'N', 'D', 'O', 'N', 'E'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderSize = 32;
constexpr size_t kFooterSize = 16;
constexpr int kMaxRank = 8;
constexpr size_t kMaxNameLength = 4096;
constexpr const char* kIndexName = "checkpoint";
constexpr const char* kIndexFormat = "ctrain-checkpoint-index";

void PutU16(std::string* s, uint16_t v) { s->append(reinterpret_cast<const char*>(&v), 2); }
void PutU32(std::string* s, uint32_t v) { s->append(reinterpret_cast<const char*>(&v), 4); }
void PutU64(std::string* s, uint64_t v) { s->append(reinterpret_cast<const char*>(&v), 8); }
uint32_t GetU32(const char* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
uint64_t GetU64(const char* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }
uint16_t GetU16(const char* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(dir, "open directory for fsync", errno);
  Status s;
  if (::fsync(fd) != 0) s = ErrnoError(dir, "fsync directory", errno);
  ::close(fd);
  return s;
}

// Product of dims, or -1 on overflow / negative dims.
int64_t NumElements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > INT64_MAX / d) return -1;
    n *= d;
  }
  return n;
}

std::string ShapeStr(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Status ValidateForSave(int64_t step, std::span<const TensorRef> tensors, const CheckpointOptions& options) {
  if (step < 0) return InvalidArgumentError("checkpoint: step " + std::to_string(step) + " is negative");
  if (options.keep_last < 1)
    return InvalidArgumentError("checkpoint: keep_last " + std::to_string(options.keep_last) + " must be >= 1");
  std::unordered_set<std::string_view> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorRef& t = tensors[i];
    const std::string where = "checkpoint: tensor " + std::to_string(i) + " '" + t.name + "'";
    if (t.name.empty() || t.name.size() > kMaxNameLength)
      return InvalidArgumentError(where + ": name length " + std::to_string(t.name.size()) + " not in [1, " +
                                  std::to_string(kMaxNameLength) + "]");
    if (!names.insert(t.name).second) return InvalidArgumentError(where + ": duplicate name");
    if (t.dtype != DType::kF32 && t.dtype != DType::kI64)
      return InvalidArgumentError(where + ": unknown dtype " + std::to_string(static_cast<int>(t.dtype)));
    if (t.shape.size() > kMaxRank)
      return InvalidArgumentError(where + ": rank " + std::to_string(t.shape.size()) + " > 8");
    const int64_t n = NumElements(t.shape);
    if (n < 0) return InvalidArgumentError(where + ": bad shape " + ShapeStr(t.shape));
    if (n > 0 && t.data == nullptr) return InvalidArgumentError(where + ": null data for shape " + ShapeStr(t.shape));
    if (t.rows != nullptr && (t.shape.empty() || static_cast<int64_t>(t.rows->size()) != t.shape[0]))
      return InvalidArgumentError(where + ": " + std::to_string(t.rows->size()) + " gathered rows for shape " +
                                  ShapeStr(t.shape));
  }
  return Status::OK();
}

// ---- reading ----

class Reader {
 public:
  Reader(io::SequentialFile* file, std::string path, uint64_t size)
      : file_(file), path_(std::move(path)), size_(size) {}

  uint64_t offset() const { return offset_; }
  uint64_t remaining() const { return size_ - offset_; }

  Status Corrupt(uint64_t at, const std::string& what) const {
    return DataLossError(path_ + ": offset " + std::to_string(at) + ": " + what);
  }

  // Reads exactly n bytes of `what`; a short read is DataLoss (truncated file).
  Status Read(void* dst, size_t n, const std::string& what) {
    if (n > remaining())
      return Corrupt(offset_, "truncated: " + what + " needs " + std::to_string(n) + " bytes but the file has " +
                                  std::to_string(remaining()) + " left");
    CTRAIN_ASSIGN_OR_RETURN(size_t got, file_->Read(static_cast<char*>(dst), n));
    if (got != n)
      return Corrupt(offset_ + got, "truncated: " + what + " needs " + std::to_string(n) + " bytes, got " +
                                        std::to_string(got));
    offset_ += n;
    return Status::OK();
  }

  Status ReadCrc(uint32_t want, const std::string& what) {
    const uint64_t at = offset_;
    char buf[4];
    CTRAIN_RETURN_IF_ERROR(Read(buf, 4, what + " crc"));
    const uint32_t stored = GetU32(buf);
    if (stored != want) {
      char msg[96];
      std::snprintf(msg, sizeof(msg), " crc mismatch (stored 0x%08x, computed 0x%08x)", stored, want);
      return Corrupt(at, what + msg);
    }
    return Status::OK();
  }

  // Succeeds only at end of file.
  Status ExpectEof() {
    char c;
    CTRAIN_ASSIGN_OR_RETURN(size_t got, file_->Read(&c, 1));
    if (got != 0) return Corrupt(offset_, "trailing bytes after the footer");
    return Status::OK();
  }

 private:
  io::SequentialFile* file_;
  std::string path_;
  uint64_t size_;
  uint64_t offset_ = 0;
};

Status ReadTensor(Reader& r, size_t index, NamedTensor* t) {
  const uint64_t start = r.offset();
  const std::string label = "tensor " + std::to_string(index);
  char fixed[8];
  CTRAIN_RETURN_IF_ERROR(r.Read(fixed, 8, label + " header"));
  const uint32_t name_len = GetU32(fixed);
  const uint8_t dtype = static_cast<uint8_t>(fixed[4]);
  const uint8_t rank = static_cast<uint8_t>(fixed[5]);
  const uint16_t reserved = GetU16(fixed + 6);
  // Sizes are checked before the header CRC so a corrupt length cannot make us
  // allocate or read absurd amounts; any such value is reported as corruption.
  if (name_len == 0 || name_len > kMaxNameLength)
    return r.Corrupt(start, label + ": name length " + std::to_string(name_len) + " not in [1, 4096]");
  if (rank > kMaxRank) return r.Corrupt(start + 5, label + ": rank " + std::to_string(rank) + " > 8");
  std::string rest(name_len + 8 * rank + 8, '\0');
  CTRAIN_RETURN_IF_ERROR(r.Read(rest.data(), rest.size(), label + " header"));
  uint32_t crc = io::Crc32c(fixed, 8);
  crc = io::Crc32c(rest.data(), rest.size(), crc);
  CTRAIN_RETURN_IF_ERROR(r.ReadCrc(crc, label + " header"));
  t->name.assign(rest.data(), name_len);
  const std::string named = label + " '" + t->name + "'";
  if (dtype != static_cast<uint8_t>(DType::kF32) && dtype != static_cast<uint8_t>(DType::kI64))
    return r.Corrupt(start + 4, named + ": unknown dtype " + std::to_string(dtype));
  if (reserved != 0) return r.Corrupt(start + 6, named + ": reserved bytes are not zero");
  t->dtype = static_cast<DType>(dtype);
  t->shape.resize(rank);
  for (int i = 0; i < rank; ++i) t->shape[i] = static_cast<int64_t>(GetU64(rest.data() + name_len + 8 * i));
  const uint64_t data_len = GetU64(rest.data() + name_len + 8 * rank);
  const int64_t n = NumElements(t->shape);
  if (n < 0) return r.Corrupt(start + 8 + name_len, named + ": bad shape " + ShapeStr(t->shape));
  const size_t esize = DTypeSize(t->dtype);
  if (static_cast<uint64_t>(n) > UINT64_MAX / esize || data_len != static_cast<uint64_t>(n) * esize)
    return r.Corrupt(start + 8 + name_len + 8 * rank,
                     named + ": data length " + std::to_string(data_len) + " does not match shape " +
                         ShapeStr(t->shape));
  if (data_len > r.remaining() || r.remaining() - data_len < 4)
    return r.Corrupt(r.offset(), "truncated: " + named + " data needs " + std::to_string(data_len + 4) +
                                     " bytes but the file has " + std::to_string(r.remaining()) + " left");
  void* dst;
  if (t->dtype == DType::kF32) {
    t->f32.resize(n);
    dst = t->f32.data();
  } else {
    t->i64.resize(n);
    dst = t->i64.data();
  }
  CTRAIN_RETURN_IF_ERROR(r.Read(dst, data_len, named + " data"));
  return r.ReadCrc(io::Crc32c(dst, data_len), named + " data");
}

// ---- index ----

struct IndexEntry {
  std::string file;
  int64_t step;
  std::string base;  // the full checkpoint an incremental one extends ("" = a full checkpoint)
};

// Reads the index. NotFound when absent; DataLoss when malformed.
StatusOr<std::vector<IndexEntry>> ReadIndex(const std::string& model_dir, std::string* latest) {
  const std::string path = JoinPath(model_dir, kIndexName);
  auto text = io::ReadFileToString(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound)
      return NotFoundError(path + ": no checkpoint index (nothing saved in " + model_dir + " yet)");
    return text.status();
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& why) { return DataLossError(path + ": bad checkpoint index: " + why); };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (!j.contains("format") || j["format"] != kIndexFormat) return bad("format is not \"ctrain-checkpoint-index\"");
  if (!j.contains("version") || j["version"] != 1) return bad("unsupported version");
  if (!j.contains("latest") || !j["latest"].is_string()) return bad("missing \"latest\"");
  if (!j.contains("checkpoints") || !j["checkpoints"].is_array()) return bad("missing \"checkpoints\" array");
  std::vector<IndexEntry> entries;
  for (const auto& e : j["checkpoints"]) {
    if (!e.is_object() || !e.contains("file") || !e["file"].is_string() || !e.contains("step") ||
        !e["step"].is_number_integer())
      return bad("malformed entry in \"checkpoints\"");
    const std::string file = e["file"].get<std::string>();
    if (file.empty() || file.find('/') != std::string::npos) return bad("entry file '" + file + "' is not a plain name");
    const std::string base = e.contains("base") && e["base"].is_string() ? e["base"].get<std::string>() : "";
    if (base.find('/') != std::string::npos) return bad("entry base '" + base + "' is not a plain name");
    entries.push_back({file, e["step"].get<int64_t>(), base});
  }
  *latest = j["latest"].get<std::string>();
  if (entries.empty() || entries.back().file != *latest) return bad("\"latest\" is not the last entry of \"checkpoints\"");
  return entries;
}

std::string IndexJson(const std::vector<IndexEntry>& entries) {
  nlohmann::json j;
  j["format"] = kIndexFormat;
  j["version"] = 1;
  j["latest"] = entries.back().file;
  j["latest_step"] = entries.back().step;
  j["checkpoints"] = nlohmann::json::array();
  for (const IndexEntry& e : entries) {
    nlohmann::json x = {{"file", e.file}, {"step", e.step}};
    if (!e.base.empty()) x["base"] = e.base;
    j["checkpoints"].push_back(std::move(x));
  }
  return j.dump(2) + "\n";
}

// Deletes ckpt-*.bin.tmp.* and checkpoint.tmp.* left by crashed saves.
Status RemoveStaleTemporaries(const std::string& model_dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(model_dir, ec);
  if (ec) return IOError(model_dir + ": list directory: " + ec.message());
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    const bool stale = (name.rfind("ckpt-", 0) == 0 && name.find(".bin.tmp.") != std::string::npos) ||
                       name.rfind("checkpoint.tmp.", 0) == 0;
    if (!stale) continue;
    if (::unlink(entry.path().c_str()) != 0 && errno != ENOENT)
      return ErrnoError(entry.path().string(), "delete stale temporary", errno);
  }
  return Status::OK();
}

}  // namespace

int64_t NamedTensor::num_elements() const { return NumElements(shape); }

TensorRef TensorRef::Of(const NamedTensor& t) {
  const void* data = t.dtype == DType::kF32 ? static_cast<const void*>(t.f32.data())
                                            : static_cast<const void*>(t.i64.data());
  return {t.name, t.dtype, t.shape, data};
}

const NamedTensor* Checkpoint::Find(std::string_view name) const {
  for (const NamedTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

Status ForEachTensorChunk(const TensorRef& t, const std::function<Status(std::string_view)>& fn) {
  const size_t data_len = static_cast<size_t>(NumElements(t.shape)) * DTypeSize(t.dtype);
  if (data_len == 0) return Status::OK();
  if (t.rows == nullptr) return fn(std::string_view(static_cast<const char*>(t.data), data_len));
  const size_t row_bytes = data_len / t.rows->size();  // gathered rows, through a bounded buffer
  const size_t per_chunk = std::max<size_t>(1, (size_t{4} << 20) / row_bytes);
  std::string chunk;
  for (size_t i = 0; i < t.rows->size(); i += per_chunk) {
    const size_t n = std::min(per_chunk, t.rows->size() - i);
    chunk.resize(n * row_bytes);
    for (size_t j = 0; j < n; ++j)
      std::memcpy(chunk.data() + j * row_bytes,
                  static_cast<const char*>(t.data) + static_cast<size_t>((*t.rows)[i + j]) * row_bytes, row_bytes);
    CTRAIN_RETURN_IF_ERROR(fn(chunk));
  }
  return Status::OK();
}

std::string CheckpointFileName(int64_t step) { return "ckpt-" + std::to_string(step) + ".bin"; }

Status SaveCheckpoint(const std::string& model_dir, int64_t step, std::span<const TensorRef> tensors,
                      const nlohmann::json& meta, const CheckpointOptions& options) {
  CTRAIN_RETURN_IF_ERROR(ValidateForSave(step, tensors, options));
  std::error_code ec;
  std::filesystem::create_directories(model_dir, ec);
  if (ec) return IOError(model_dir + ": create directory: " + ec.message());

  // Previous index (if any): a malformed one is reported, not overwritten.
  std::string latest;
  std::vector<IndexEntry> entries;
  {
    auto old = ReadIndex(model_dir, &latest);
    if (old.ok()) {
      entries = std::move(old).value();
    } else if (old.status().code() != StatusCode::kNotFound) {
      return old.status();
    }
  }
  CTRAIN_RETURN_IF_ERROR(RemoveStaleTemporaries(model_dir));

  const std::string file_name = CheckpointFileName(step);
  const std::string path = JoinPath(model_dir, file_name);
  CTRAIN_ASSIGN_OR_RETURN(auto out, io::OpenWritableFile(path, io::WriteOptions{.atomic = true}));

  const std::string meta_text = meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (meta_text.size() > UINT32_MAX) return InvalidArgumentError("checkpoint: meta JSON over 4 GiB");
  std::string buf;
  buf.append(kMagic, 8);
  PutU32(&buf, kVersion);
  PutU32(&buf, static_cast<uint32_t>(tensors.size()));
  PutU64(&buf, static_cast<uint64_t>(step));
  PutU32(&buf, static_cast<uint32_t>(meta_text.size()));
  PutU32(&buf, io::Crc32c(buf.data(), buf.size()));
  buf += meta_text;
  PutU32(&buf, io::Crc32c(meta_text.data(), meta_text.size()));
  uint64_t written = buf.size();
  CTRAIN_RETURN_IF_ERROR(out->Append(buf));

  for (const TensorRef& t : tensors) {
    const uint64_t data_len = static_cast<uint64_t>(NumElements(t.shape)) * DTypeSize(t.dtype);
    buf.clear();
    PutU32(&buf, static_cast<uint32_t>(t.name.size()));
    buf.push_back(static_cast<char>(t.dtype));
    buf.push_back(static_cast<char>(t.shape.size()));
    PutU16(&buf, 0);
    buf += t.name;
    for (int64_t d : t.shape) PutU64(&buf, static_cast<uint64_t>(d));
    PutU64(&buf, data_len);
    PutU32(&buf, io::Crc32c(buf.data(), buf.size()));
    CTRAIN_RETURN_IF_ERROR(out->Append(buf));
    uint32_t crc = 0;
    CTRAIN_RETURN_IF_ERROR(ForEachTensorChunk(t, [&](std::string_view chunk) {
      crc = io::Crc32c(chunk.data(), chunk.size(), crc);
      return out->Append(chunk);
    }));
    buf.clear();
    PutU32(&buf, crc);
    CTRAIN_RETURN_IF_ERROR(out->Append(buf));
    written += 8 + t.name.size() + 8 * t.shape.size() + 8 + 4 + data_len + 4;
  }
  buf.clear();
  PutU64(&buf, written + kFooterSize);
  buf.append(kFooterMagic, 8);
  CTRAIN_RETURN_IF_ERROR(out->Append(buf));
  CTRAIN_RETURN_IF_ERROR(out->Close());  // fsync + rename into place
  CTRAIN_RETURN_IF_ERROR(SyncDir(model_dir));

  // New index: previous entries (minus a re-save of the same file) + this one, last keep_last.
  std::erase_if(entries, [&](const IndexEntry& e) { return e.file == file_name; });
  entries.push_back({file_name, step, options.base});
  std::vector<IndexEntry> dropped;
  if (entries.size() > static_cast<size_t>(options.keep_last)) {
    // The newest keep_last entries stay, and the full checkpoint each kept incremental one extends (an
    // incremental checkpoint is unreadable without it); an older incremental one goes with its base.
    const size_t n_drop = entries.size() - options.keep_last;
    std::unordered_set<std::string> needed;
    for (size_t i = n_drop; i < entries.size(); ++i)
      if (!entries[i].base.empty()) needed.insert(entries[i].base);
    std::vector<IndexEntry> kept;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i < n_drop && needed.count(entries[i].file) == 0) dropped.push_back(entries[i]);
      else kept.push_back(entries[i]);
    }
    entries = std::move(kept);
  }
  CTRAIN_RETURN_IF_ERROR(io::WriteStringToFileAtomic(JoinPath(model_dir, kIndexName), IndexJson(entries)));
  CTRAIN_RETURN_IF_ERROR(SyncDir(model_dir));
  for (const IndexEntry& e : dropped) {
    const std::string old = JoinPath(model_dir, e.file);
    if (::unlink(old.c_str()) != 0 && errno != ENOENT)
      return ErrnoError(old, "delete old checkpoint (the new one was saved)", errno);
  }
  return Status::OK();
}

Status SaveCheckpoint(const std::string& model_dir, int64_t step, const std::vector<NamedTensor>& tensors,
                      const nlohmann::json& meta, const CheckpointOptions& options) {
  std::vector<TensorRef> refs;
  refs.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const NamedTensor& t = tensors[i];
    const int64_t n = t.num_elements();
    const size_t have = t.dtype == DType::kF32 ? t.f32.size() : t.i64.size();
    if (n >= 0 && have != static_cast<size_t>(n))
      return InvalidArgumentError("checkpoint: tensor " + std::to_string(i) + " '" + t.name + "': shape " +
                                  ShapeStr(t.shape) + " needs " + std::to_string(n) + " elements, has " +
                                  std::to_string(have));
    refs.push_back(TensorRef::Of(t));
  }
  return SaveCheckpoint(model_dir, step, refs, meta, options);
}

StatusOr<Checkpoint> LoadCheckpoint(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoError(path, "stat checkpoint", errno);
  CTRAIN_ASSIGN_OR_RETURN(auto file, io::OpenSequentialFile(path));
  Reader r(file.get(), path, static_cast<uint64_t>(st.st_size));
  Checkpoint ckpt;
  ckpt.path = path;

  char header[kHeaderSize];
  CTRAIN_RETURN_IF_ERROR(r.Read(header, kHeaderSize, "file header"));
  if (std::memcmp(header, kMagic, 8) != 0) return r.Corrupt(0, "bad magic: not a ctrain checkpoint");
  const uint32_t header_crc = io::Crc32c(header, 28);
  if (GetU32(header + 28) != header_crc) return r.Corrupt(28, "file header crc mismatch");
  const uint32_t version = GetU32(header + 8);
  if (version != kVersion)
    return r.Corrupt(8, "unsupported version " + std::to_string(version) + " (this build reads 1)");
  const uint32_t n_tensors = GetU32(header + 12);
  ckpt.step = static_cast<int64_t>(GetU64(header + 16));
  const uint32_t meta_len = GetU32(header + 24);

  std::string meta_text(meta_len, '\0');
  const uint64_t meta_at = r.offset();
  CTRAIN_RETURN_IF_ERROR(r.Read(meta_text.data(), meta_len, "meta JSON"));
  CTRAIN_RETURN_IF_ERROR(r.ReadCrc(io::Crc32c(meta_text.data(), meta_len), "meta JSON"));
  ckpt.meta = nlohmann::json::parse(meta_text, nullptr, /*allow_exceptions=*/false);
  if (ckpt.meta.is_discarded()) return r.Corrupt(meta_at, "meta is not valid JSON");

  ckpt.tensors.resize(n_tensors);
  for (uint32_t i = 0; i < n_tensors; ++i) CTRAIN_RETURN_IF_ERROR(ReadTensor(r, i, &ckpt.tensors[i]));

  const uint64_t footer_at = r.offset();
  char footer[kFooterSize];
  CTRAIN_RETURN_IF_ERROR(r.Read(footer, kFooterSize, "footer"));
  if (std::memcmp(footer + 8, kFooterMagic, 8) != 0) return r.Corrupt(footer_at + 8, "bad footer magic");
  if (GetU64(footer) != footer_at + kFooterSize)
    return r.Corrupt(footer_at, "footer file length " + std::to_string(GetU64(footer)) + " != " +
                                    std::to_string(footer_at + kFooterSize));
  CTRAIN_RETURN_IF_ERROR(r.ExpectEof());
  return ckpt;
}

namespace {

// ReadIndex for a restore: a directory without an index but with checkpoint files lost its index (deleted, or
// copied without it); reading it as "nothing saved" would train afresh over trained files.
StatusOr<std::vector<IndexEntry>> ReadIndexToRestore(const std::string& model_dir, std::string* latest) {
  StatusOr<std::vector<IndexEntry>> entries = ReadIndex(model_dir, latest);
  if (entries.ok() || entries.status().code() != StatusCode::kNotFound) return entries;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(model_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("ckpt-") && name.ends_with(".bin")) files.push_back(name);
  }
  if (files.empty()) return entries;
  std::sort(files.begin(), files.end());
  std::string list;
  for (size_t i = 0; i < files.size() && i < 3; ++i) list += (i ? ", " : "") + files[i];
  if (files.size() > 3) list += ", ... (" + std::to_string(files.size()) + " files)";
  return DataLossError(JoinPath(model_dir, kIndexName) + " does not exist, but " + model_dir +
                       " holds checkpoint files (" + list + "): the index was deleted, or the directory copied "
                       "without it. Restore it, or give another (empty) model dir; nothing is trained over them");
}

}  // namespace

StatusOr<std::string> LatestCheckpointPath(const std::string& model_dir) {
  std::string latest;
  CTRAIN_ASSIGN_OR_RETURN(auto entries, ReadIndexToRestore(model_dir, &latest));
  const std::string path = JoinPath(model_dir, latest);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return DataLossError(JoinPath(model_dir, kIndexName) + " names " + latest + " but " + path +
                           " does not exist (deleted or copied without it?)");
    return ErrnoError(path, "stat checkpoint", errno);
  }
  return path;
}

StatusOr<Checkpoint> LoadLatestCheckpoint(const std::string& model_dir) {
  std::string latest;
  CTRAIN_ASSIGN_OR_RETURN(auto entries, ReadIndexToRestore(model_dir, &latest));
  CTRAIN_ASSIGN_OR_RETURN(std::string path, LatestCheckpointPath(model_dir));
  CTRAIN_ASSIGN_OR_RETURN(Checkpoint ckpt, LoadCheckpoint(path));
  if (ckpt.step != entries.back().step)
    return DataLossError(path + ": holds step " + std::to_string(ckpt.step) + " but the index says " +
                         std::to_string(entries.back().step));
  return ckpt;
}

}  // namespace ctrain::train
