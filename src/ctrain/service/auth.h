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

// The training job a call comes from: gRPC metadata "ctrain-training-job"
// (--training-job-name; `ctrain launch` gives every role of a job the same
// one). A server of job A refuses a call of job B with PERMISSION_DENIED
// "this <role> serves training job "A"; the caller is of training job "B"
// ...". A call without a name, or a server without one, is not refused (the
// operator's `status`/`shutdown`, processes started by hand).
inline constexpr const char* kTrainingJobHeader = "ctrain-training-job";
void AttachTrainingJob(grpc::ClientContext* context, const std::string& training_job_name);
grpc::Status CheckTrainingJob(const grpc::ServerContext& context, const std::string& served, const std::string& role);

// Both checks of every RPC: the token, then the training job.
grpc::Status CheckCaller(const grpc::ServerContext& context, const std::string& token, const std::string& served_job,
                         const std::string& role);

}  // namespace ctrain::service
