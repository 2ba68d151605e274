// Status and StatusOr<T>: the one error type of ctrain.
//
// Modelled on LevelDB's Status and Abseil's canonical codes (which gRPC shares,
// so an error can later cross the wire intact). An OK status costs one
// pointer-sized null; an error carries a code and a message of the form
// "<context>: <detail>", e.g. "DataLoss: tr.tfrecords record 17 offset 1234: data crc mismatch".
//
// Thread safety: a const Status may be read from many threads; mutation needs
// external synchronisation.
#pragma once

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ctrain {

// Canonical codes (numbering follows absl::StatusCode / grpc::StatusCode; do not change).
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,  // gRPC: the request lacks valid credentials (service token)
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;  // OK
  Status(StatusCode code, std::string_view msg);

  Status(const Status& s) : rep_(s.rep_ ? std::make_unique<Rep>(*s.rep_) : nullptr) {}
  Status& operator=(const Status& s) {
    if (this != &s) rep_ = s.rep_ ? std::make_unique<Rep>(*s.rep_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status OK() { return Status(); }
  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // The message without the code name; empty for OK.
  std::string_view message() const { return rep_ ? std::string_view(rep_->msg) : std::string_view(); }
  // "OK" or "<CodeName>: <message>".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <old message>" (no-op for OK).
  Status WithContext(std::string_view context) const;
  // Keeps the first error: if *this is OK, becomes `other`.
  void Update(const Status& other) {
    if (ok() && !other.ok()) *this = other;
  }
  void IgnoreError() const {}

 private:
  struct Rep {
    StatusCode code;
    std::string msg;
  };
  std::unique_ptr<Rep> rep_;
};

// Named factories (message is "context: detail" by convention).
Status InvalidArgumentError(std::string_view msg);
Status NotFoundError(std::string_view msg);
Status DataLossError(std::string_view msg);        // corruption: CRC mismatch, bad bytes
Status OutOfRangeError(std::string_view msg);      // truncation / clean EOF inside a record
Status IOError(std::string_view msg);              // OS I/O failure (kUnavailable)
Status FailedPreconditionError(std::string_view msg);
Status ResourceExhaustedError(std::string_view msg);
Status UnimplementedError(std::string_view msg);
Status InternalError(std::string_view msg);
Status DeadlineExceededError(std::string_view msg);
Status CancelledError(std::string_view msg);
Status AbortedError(std::string_view msg);
Status AlreadyExistsError(std::string_view msg);
Status PermissionDeniedError(std::string_view msg);
Status UnavailableError(std::string_view msg);
Status UnauthenticatedError(std::string_view msg);
// Maps errno (from a failed syscall on `path`) to a code: ENOENT -> NotFound, EACCES -> PermissionDenied, ...
Status ErrnoError(std::string_view path, std::string_view what, int err);

// StatusOr<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  explicit StatusOr() : status_(StatusCode::kUnknown, "uninitialised StatusOr") {}
  StatusOr(Status s) : status_(std::move(s)) { assert(!status_.ok() && "StatusOr from OK status"); }
  StatusOr(const T& v) : value_(v) {}
  StatusOr(T&& v) : value_(std::move(v)) {}

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace ctrain

#define CTRAIN_CONCAT_INNER_(a, b) a##b
#define CTRAIN_CONCAT_(a, b) CTRAIN_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define CTRAIN_RETURN_IF_ERROR(expr)                  \
  do {                                                \
    ::ctrain::Status _ctrain_st = (expr);             \
    if (!_ctrain_st.ok()) return _ctrain_st;          \
  } while (0)

// `lhs = value of expr` (a StatusOr) or return its status.
#define CTRAIN_ASSIGN_OR_RETURN(lhs, expr) \
  CTRAIN_ASSIGN_OR_RETURN_IMPL_(CTRAIN_CONCAT_(_ctrain_sor_, __LINE__), lhs, expr)
#define CTRAIN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
