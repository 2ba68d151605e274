#include "ctrain/data/batch.h"

#include <cmath>
#include <bit>
#include <cstring>

namespace ctrain::data {

void Batch::Clear() {
  labels.clear();
  ids.clear();
  values.clear();
  row_splits.clear();
  field_splits.clear();
}

void Batch::Reserve(int64_t rows, int32_t fields) {
  labels.reserve(rows);
  ids.reserve(rows * fields);
  values.reserve(rows * fields);
}

void Batch::AppendRow(float label, std::span<const int64_t> row_ids, std::span<const float> row_values) {
  labels.push_back(label);
  ids.insert(ids.end(), row_ids.begin(), row_ids.end());
  values.insert(values.end(), row_values.begin(), row_values.end());
}

void Batch::AppendMultiHotRow(float label, std::span<const int64_t> row_ids, std::span<const float> row_values,
                              std::span<const int32_t> field_lengths) {
  if (field_splits.empty()) field_splits.push_back(static_cast<int64_t>(ids.size()));
  labels.push_back(label);
  ids.insert(ids.end(), row_ids.begin(), row_ids.end());
  values.insert(values.end(), row_values.begin(), row_values.end());
  int64_t at = field_splits.back();
  for (int32_t n : field_lengths) field_splits.push_back(at += n);
}

std::span<const int64_t> Batch::row_ids(int64_t b) const {
  if (multi_hot()) {
    const int64_t lo = field_splits[b * field_size], hi = field_splits[(b + 1) * field_size];
    return {ids.data() + lo, static_cast<size_t>(hi - lo)};
  }
  if (variable_length()) return {ids.data() + row_splits[b], static_cast<size_t>(row_splits[b + 1] - row_splits[b])};
  return {ids.data() + b * field_size, static_cast<size_t>(field_size)};
}

std::span<const float> Batch::row_values(int64_t b) const {
  if (multi_hot()) {
    const int64_t lo = field_splits[b * field_size], hi = field_splits[(b + 1) * field_size];
    return {values.data() + lo, static_cast<size_t>(hi - lo)};
  }
  if (variable_length())
    return {values.data() + row_splits[b], static_cast<size_t>(row_splits[b + 1] - row_splits[b])};
  return {values.data() + b * field_size, static_cast<size_t>(field_size)};
}

Status Batch::Validate() const {
  const int64_t B = size();
  if (field_size < 0) return InvalidArgumentError("batch: negative field_size");
  if (ids.size() != values.size())
    return InvalidArgumentError("batch: ids has " + std::to_string(ids.size()) + " entries but values has " +
                                std::to_string(values.size()));
  if (variable_length() && multi_hot()) return InvalidArgumentError("batch: both row_splits and field_splits are set");
  if (multi_hot()) {
    const int64_t slots = B * field_size;
    if (static_cast<int64_t>(field_splits.size()) != slots + 1 || field_splits.front() != 0 ||
        field_splits.back() != static_cast<int64_t>(ids.size()))
      return InvalidArgumentError("batch: field_splits must have B*F+1 = " + std::to_string(slots + 1) +
                                  " entries from 0 to nnz = " + std::to_string(ids.size()) + ", found " +
                                  std::to_string(field_splits.size()) + " entries");
    for (int64_t s = 0; s < slots; ++s)
      if (field_splits[s + 1] < field_splits[s])
        return InvalidArgumentError("batch: field_splits not monotone at row " + std::to_string(s / field_size) +
                                    " field " + std::to_string(s % field_size));
  } else if (variable_length()) {
    if (static_cast<int64_t>(row_splits.size()) != B + 1 || row_splits.front() != 0 ||
        row_splits.back() != static_cast<int64_t>(ids.size()))
      return InvalidArgumentError("batch: row_splits must have B+1 entries from 0 to nnz");
    for (int64_t b = 0; b < B; ++b)
      if (row_splits[b + 1] < row_splits[b]) return InvalidArgumentError("batch: row_splits not monotone at row " + std::to_string(b));
  } else if (static_cast<int64_t>(ids.size()) != B * field_size) {
    return InvalidArgumentError("batch: expected B*F = " + std::to_string(B * field_size) + " ids, found " +
                                std::to_string(ids.size()));
  }
  for (int64_t b = 0; b < B; ++b)
    if (!std::isfinite(labels[b])) return InvalidArgumentError("batch: label of row " + std::to_string(b) + " is not finite");
  return Status::OK();
}

namespace {
template <typename T>
void Put(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}
template <typename T>
void PutArray(std::string* out, const std::vector<T>& v) {
  out->append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}
constexpr char kMagic[4] = {'C', 'T', 'B', '1'};
constexpr size_t kHeader = 4 + 4 + 8 + 4 + 8;
}  // namespace

static_assert(std::endian::native == std::endian::little, "wire format assumes little-endian hosts");

void Batch::SerializeTo(std::string* out) const {
  const int64_t B = size();
  const int64_t nnz = static_cast<int64_t>(ids.size());
  out->reserve(out->size() + kHeader + B * 4 + nnz * 12 + (row_splits.size() + field_splits.size()) * 8);
  out->append(kMagic, 4);
  Put<uint32_t>(out, (variable_length() ? 1u : 0u) | (multi_hot() ? 2u : 0u));
  Put<int64_t>(out, B);
  Put<int32_t>(out, field_size);
  Put<int64_t>(out, nnz);
  PutArray(out, labels);
  PutArray(out, ids);
  PutArray(out, values);
  if (variable_length()) PutArray(out, row_splits);
  if (multi_hot()) PutArray(out, field_splits);
}

std::string Batch::Serialize() const {
  std::string s;
  SerializeTo(&s);
  return s;
}

StatusOr<Batch> Batch::Deserialize(std::string_view bytes) {
  Batch b;
  CTRAIN_RETURN_IF_ERROR(DeserializeInto(bytes, &b));
  return b;
}

Status Batch::DeserializeInto(std::string_view bytes, Batch* out) {
  auto err = [](size_t off, const std::string& what) {
    return DataLossError("batch wire format: byte offset " + std::to_string(off) + ": " + what);
  };
  if (bytes.size() < kHeader) return err(bytes.size(), "buffer shorter than the 28-byte header");
  if (std::memcmp(bytes.data(), kMagic, 4) != 0) return err(0, "bad magic (expected \"CTB1\")");
  uint32_t flags;
  int64_t B, nnz;
  int32_t F;
  std::memcpy(&flags, bytes.data() + 4, 4);
  std::memcpy(&B, bytes.data() + 8, 8);
  std::memcpy(&F, bytes.data() + 16, 4);
  std::memcpy(&nnz, bytes.data() + 20, 8);
  if (flags > 3) return err(4, "unknown flags " + std::to_string(flags));
  if (flags == 3) return err(4, "flags set both variable-length and multi-hot");
  if (B < 0 || F < 0 || nnz < 0) return err(8, "negative size");
  const bool var = flags & 1;
  const bool multi = flags & 2;
  const uint64_t body = kHeader;
  // Check sizes before allocating (guards against overflow with division).
  const uint64_t remain = bytes.size() - body;
  if (static_cast<uint64_t>(B) > remain / 4 || static_cast<uint64_t>(nnz) > remain / 12)
    return err(body, "declared sizes exceed the buffer");
  // B*F+1 split entries of 8 bytes each: check F against the buffer before multiplying.
  if (multi && F > 0 && static_cast<uint64_t>(B) > remain / 8 / static_cast<uint64_t>(F))
    return err(body, "declared sizes exceed the buffer");
  const uint64_t slots = static_cast<uint64_t>(B) * static_cast<uint64_t>(F);
  uint64_t need = static_cast<uint64_t>(B) * 4 + static_cast<uint64_t>(nnz) * 12 +
                  (var ? (static_cast<uint64_t>(B) + 1) * 8 : 0) + (multi ? (slots + 1) * 8 : 0);
  if (need != remain)
    return err(body, "payload is " + std::to_string(remain) + " bytes, header implies " + std::to_string(need));
  if (!var && !multi && static_cast<uint64_t>(nnz) != static_cast<uint64_t>(B) * static_cast<uint64_t>(F))
    return err(20, "nnz != B*F for a fixed-length batch");
  Batch& b = *out;
  b.field_size = F;
  b.row_splits.clear();
  b.field_splits.clear();
  const char* p = bytes.data() + body;
  b.labels.resize(B);
  std::memcpy(b.labels.data(), p, B * 4);
  p += B * 4;
  b.ids.resize(nnz);
  std::memcpy(b.ids.data(), p, nnz * 8);
  p += nnz * 8;
  b.values.resize(nnz);
  std::memcpy(b.values.data(), p, nnz * 4);
  p += nnz * 4;
  if (var) {
    b.row_splits.resize(B + 1);
    std::memcpy(b.row_splits.data(), p, (B + 1) * 8);
  }
  if (multi) {
    b.field_splits.resize(slots + 1);
    std::memcpy(b.field_splits.data(), p, (slots + 1) * 8);
  }
  Status s = b.Validate();
  if (!s.ok()) return DataLossError(std::string("batch wire format: ") + std::string(s.message()));
  return Status::OK();
}

}  // namespace ctrain::data
