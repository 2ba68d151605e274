#include "ctrain/service/grpc_status.h"

#include <string>

namespace ctrain::service {

grpc::Status ToGrpcStatus(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(s.code())), std::string(s.message()));
}

Status FromGrpcStatus(const grpc::Status& s, std::string_view what) {
  if (s.ok()) return Status::OK();
  int code = static_cast<int>(s.error_code());
  if (code < 0 || code > 16) code = static_cast<int>(StatusCode::kUnknown);
  return Status(static_cast<StatusCode>(code), std::string(what) + ": " + s.error_message());
}

}  // namespace ctrain::service
