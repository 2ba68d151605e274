#include "ctrain/base/status.h"

#include <cerrno>
#include <cstring>

namespace ctrain {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kUnknown: return "Unknown";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kDeadlineExceeded: return "DeadlineExceeded";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kPermissionDenied: return "PermissionDenied";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kAborted: return "Aborted";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kUnimplemented: return "Unimplemented";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kDataLoss: return "DataLoss";
    case StatusCode::kUnauthenticated: return "Unauthenticated";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string_view msg) {
  if (code != StatusCode::kOk) rep_ = std::make_unique<Rep>(Rep{code, std::string(msg)});
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(rep_->code));
  s += ": ";
  s += rep_->msg;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += rep_->msg;
  return Status(rep_->code, m);
}

Status InvalidArgumentError(std::string_view m) { return Status(StatusCode::kInvalidArgument, m); }
Status NotFoundError(std::string_view m) { return Status(StatusCode::kNotFound, m); }
Status DataLossError(std::string_view m) { return Status(StatusCode::kDataLoss, m); }
Status UnauthenticatedError(std::string_view m) { return Status(StatusCode::kUnauthenticated, m); }
Status OutOfRangeError(std::string_view m) { return Status(StatusCode::kOutOfRange, m); }
Status IOError(std::string_view m) { return Status(StatusCode::kUnavailable, m); }
Status FailedPreconditionError(std::string_view m) { return Status(StatusCode::kFailedPrecondition, m); }
Status ResourceExhaustedError(std::string_view m) { return Status(StatusCode::kResourceExhausted, m); }
Status UnimplementedError(std::string_view m) { return Status(StatusCode::kUnimplemented, m); }
Status InternalError(std::string_view m) { return Status(StatusCode::kInternal, m); }
Status DeadlineExceededError(std::string_view m) { return Status(StatusCode::kDeadlineExceeded, m); }
Status CancelledError(std::string_view m) { return Status(StatusCode::kCancelled, m); }
Status AbortedError(std::string_view m) { return Status(StatusCode::kAborted, m); }
Status AlreadyExistsError(std::string_view m) { return Status(StatusCode::kAlreadyExists, m); }
Status PermissionDeniedError(std::string_view m) { return Status(StatusCode::kPermissionDenied, m); }
Status UnavailableError(std::string_view m) { return Status(StatusCode::kUnavailable, m); }

Status ErrnoError(std::string_view path, std::string_view what, int err) {
  std::string m(path);
  m += ": ";
  m += what;
  m += ": ";
  m += std::strerror(err);
  switch (err) {
    case ENOENT: return NotFoundError(m);
    case EACCES:
    case EPERM: return PermissionDeniedError(m);
    case EEXIST: return AlreadyExistsError(m);
    case ENOSPC:
    case ENOMEM: return ResourceExhaustedError(m);
    case EINVAL:
    case EISDIR:
    case ENOTDIR: return InvalidArgumentError(m);
    default: return IOError(m);
  }
}

}  // namespace ctrain
