// Service authentication: a shared bearer token, checked on every RPC.
//
// The token comes from --token-file F (the file's content, trailing newline
// stripped) or else the CTRAIN_SERVICE_TOKEN environment variable; empty = no
// token (only sensible on loopback: see docs/data-service.md#security).
// Clients send it as the gRPC metadata "authorization: Bearer <token>";
// servers with a token answer a call that lacks it, or has another one, with
// UNAUTHENTICATED. The comparison takes the same time for every wrong token of
// a given length.
#pragma once

#include <string>
#include <string_view>

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>

#include "ctrain/base/status.h"

namespace ctrain::service {

inline constexpr const char* kTokenEnv = "CTRAIN_SERVICE_TOKEN";

// `token_file` empty: the environment's token (or none). Errors: NotFound /
// IOError naming the file; InvalidArgument for an empty file or a token with
// bytes outside printable ASCII (gRPC metadata values must be printable).
StatusOr<std::string> LoadToken(const std::string& token_file);

// OK when no token is required or the call carries it; else UNAUTHENTICATED
// ("missing service token" / "wrong service token").
grpc::Status CheckToken(const grpc::ServerContext& context, const std::string& token);

// Adds the token (if any) to an outgoing call.
void AttachToken(grpc::ClientContext* context, const std::string& token);

}  // namespace ctrain::service
