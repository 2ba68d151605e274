#include "ctrain/train/parameter_table.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "ctrain/base/lazy_alloc.h"

namespace ctrain::train {
namespace {

constexpr size_t kAlign = 64;
constexpr int64_t kParallelPullFloats = int64_t{1} << 16;

float* AllocFloats(int64_t n, float value) {
  const size_t bytes = (static_cast<size_t>(n) * sizeof(float) + kAlign - 1) / kAlign * kAlign;
  float* p = static_cast<float*>(std::aligned_alloc(kAlign, bytes));
  if (p != nullptr) std::fill(p, p + n, value);
  return p;
}

std::string ShapeStr(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

Status IdRangeError(int64_t id, int64_t rows) {
  return InvalidArgumentError("feature id " + std::to_string(id) + " out of range [0, " + std::to_string(rows) +
                              "): increase --feature-size");
}

StatusOr<std::unique_ptr<LocalParameterTable>> LocalParameterTable::Create(
    std::string name, int64_t rows, int32_t dim, std::unique_ptr<optim::Optimizer> optimizer,
    const LocalTableOptions& options) {
  const std::string where = "parameter table '" + name + "'";
  if (rows < 1) return InvalidArgumentError(where + ": rows " + std::to_string(rows) + " must be >= 1");
  if (dim < 1) return InvalidArgumentError(where + ": dim " + std::to_string(dim) + " must be >= 1");
  if (optimizer == nullptr) return InvalidArgumentError(where + ": no optimizer");
  if (options.num_locks < 1 || options.rows_per_lock < 1)
    return InvalidArgumentError(where + ": num_locks and rows_per_lock must be >= 1");
  std::unique_ptr<LocalParameterTable> t(
      new LocalParameterTable(std::move(name), rows, dim, std::move(optimizer), options));
  if (t->table_ == nullptr || std::find(t->slots_.begin(), t->slots_.end(), nullptr) != t->slots_.end())
    return ResourceExhaustedError(where + ": cannot allocate " + std::to_string(rows) + " x " +
                                  std::to_string(dim) + " floats (+" + std::to_string(t->num_slots()) +
                                  " slots)");
  return t;
}

LocalParameterTable::LocalParameterTable(std::string name, int64_t rows, int32_t dim,
                                         std::unique_ptr<optim::Optimizer> optimizer,
                                         const LocalTableOptions& options)
    : name_(std::move(name)), rows_(rows), dim_(dim), optimizer_(std::move(optimizer)), options_(options) {
  const int64_t n = rows_ * dim_;
  if (options_.lazy) {
    auto lazy = [this](int64_t floats) {
      StatusOr<void*> p = AllocateLazily(static_cast<size_t>(floats) * sizeof(float), name_.c_str());
      return p.ok() ? static_cast<float*>(*p) : nullptr;
    };
    table_ = lazy(n);
    for (int k = 0; k < optimizer_->num_slots(); ++k) slots_.push_back(lazy(n));
  } else {
    table_ = AllocFloats(n, 0.0f);
    for (int k = 0; k < optimizer_->num_slots(); ++k) slots_.push_back(AllocFloats(n, optimizer_->SlotInit(k)));
  }
  if (options_.concurrency == TableConcurrency::kLocked)
    locks_ = std::make_unique<PaddedMutex[]>(options_.num_locks);
}

LocalParameterTable::~LocalParameterTable() {
  if (options_.lazy) {
    const size_t bytes = static_cast<size_t>(rows_ * dim_) * sizeof(float);
    FreeLazily(table_, bytes);
    for (float* s : slots_) FreeLazily(s, bytes);
    return;
  }
  std::free(table_);
  for (float* s : slots_) std::free(s);
}

void LocalParameterTable::ResetRow(int64_t row, const float* value) {
  float* dst = table_ + row * dim_;
  if (value != nullptr) std::memcpy(dst, value, static_cast<size_t>(dim_) * sizeof(float));
  else std::fill(dst, dst + dim_, 0.0f);
  for (int k = 0; k < num_slots(); ++k) std::fill(slots_[k] + row * dim_, slots_[k] + (row + 1) * dim_, optimizer_->SlotInit(k));
}

Status LocalParameterTable::Pull(std::span<const int64_t> ids, float* rows) {
  const int64_t n = static_cast<int64_t>(ids.size());
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= rows_) return IdRangeError(ids[i], rows_);
  const size_t row_bytes = static_cast<size_t>(dim_) * sizeof(float);
  if (options_.concurrency == TableConcurrency::kHogwild) {
#pragma omp parallel for schedule(static) if (n * dim_ >= kParallelPullFloats)
    for (int64_t i = 0; i < n; ++i) std::memcpy(rows + i * dim_, table_ + ids[i] * dim_, row_bytes);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      std::lock_guard<std::mutex> lock(LockFor(ids[i]));
      std::memcpy(rows + i * dim_, table_ + ids[i] * dim_, row_bytes);
    }
  }
  return Status::OK();
}

Status LocalParameterTable::Push(const SparseRows& grad, int64_t step) {
  const auto ids = grad.ids;
  const int64_t n = static_cast<int64_t>(ids.size());
  if (step < 1)
    return InvalidArgumentError("parameter table '" + name_ + "': step " + std::to_string(step) + " must be >= 1");
  if (grad.dim != dim_)
    return InvalidArgumentError("parameter table '" + name_ + "': gradient dim " + std::to_string(grad.dim) +
                                " != table dim " + std::to_string(dim_));
  if (n == 0) return Status::OK();
  if (grad.grad == nullptr) return InvalidArgumentError("parameter table '" + name_ + "': null gradient");
  for (int64_t i = 1; i < n; ++i) {
    if (ids[i] <= ids[i - 1])
      return InvalidArgumentError("parameter table '" + name_ + "': gradient ids not strictly increasing at index " +
                                  std::to_string(i) + " (" + std::to_string(ids[i - 1]) + " then " +
                                  std::to_string(ids[i]) + ")");
  }
  // Sorted: only the ends can be out of range; report the first offending id in order.
  if (ids.front() < 0) return IdRangeError(ids.front(), rows_);
  if (ids.back() >= rows_) return IdRangeError(*std::lower_bound(ids.begin(), ids.end(), rows_), rows_);

  float* const* slots = slots_.empty() ? nullptr : slots_.data();
  if (options_.concurrency == TableConcurrency::kHogwild) {
    optimizer_->ApplySparse(table_, slots, dim_, ids, grad.grad, step);
    return Status::OK();
  }
  // Runs of ids in the same row group share one lock acquisition; one lock is
  // held at a time, so there is no lock-order deadlock.
  const int64_t group = options_.rows_per_lock;
  int64_t begin = 0;
  while (begin < n) {
    const int64_t g = ids[begin] / group;
    int64_t end = begin + 1;
    while (end < n && ids[end] / group == g) ++end;
    {
      std::lock_guard<std::mutex> lock(LockFor(ids[begin]));
      optimizer_->ApplySparse(table_, slots, dim_, ids.subspan(begin, end - begin), grad.grad + begin * dim_, step);
    }
    begin = end;
  }
  return Status::OK();
}

std::vector<TensorRef> LocalParameterTable::CheckpointTensors() const {
  std::vector<TensorRef> out;
  out.push_back(TensorRef::F32(name_, {rows_, dim_}, table_));
  for (int k = 0; k < num_slots(); ++k)
    out.push_back(TensorRef::F32(name_ + "/" + std::string(optimizer_->SlotName(k)), {rows_, dim_}, slots_[k]));
  return out;
}

Status LocalParameterTable::Restore(const Checkpoint& ckpt, bool restore_slots) {
  const std::vector<int64_t> want = {rows_, dim_};
  std::vector<std::pair<std::string, float*>> targets = {{name_, table_}};
  if (restore_slots)
    for (int k = 0; k < num_slots(); ++k)
      targets.emplace_back(name_ + "/" + std::string(optimizer_->SlotName(k)), slots_[k]);
  // Check everything before copying anything.
  for (const auto& [tname, dst] : targets) {
    const NamedTensor* t = ckpt.Find(tname);
    if (t == nullptr) return NotFoundError(ckpt.path + ": no tensor '" + tname + "'");
    if (t->dtype != DType::kF32 || t->shape != want)
      return InvalidArgumentError(ckpt.path + ": tensor '" + tname + "' is " +
                                  (t->dtype == DType::kF32 ? "f32" : "i64") + " " + ShapeStr(t->shape) +
                                  ", table expects f32 " + ShapeStr(want));
  }
  for (const auto& [tname, dst] : targets) {
    const NamedTensor* t = ckpt.Find(tname);
    std::memcpy(dst, t->f32.data(), t->f32.size() * sizeof(float));
  }
  return Status::OK();
}

}  // namespace ctrain::train
