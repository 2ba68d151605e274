// Mapping between ctrain::Status and grpc::Status. Both use the canonical
// codes of google.rpc.Code (https://grpc.github.io/grpc/core/md_doc_statuscodes.html),
// so the mapping keeps the code and the message.
#pragma once

#include <string_view>

#include <grpcpp/support/status.h>

#include "ctrain/base/status.h"

namespace ctrain::service {

grpc::Status ToGrpcStatus(const Status& s);

// `what` names the call for the message: "<what>: <grpc message>". For
// UNAVAILABLE / DEADLINE_EXCEEDED the peer is named by the caller.
Status FromGrpcStatus(const grpc::Status& s, std::string_view what);

}  // namespace ctrain::service
