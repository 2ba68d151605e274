// Client side of the ctrain services: channels with the same TLS and token
// settings as the servers (server.h, auth.h), and the retry loop that waits
// for a peer that is not up yet.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include "ctrain/base/status.h"

namespace ctrain::service {

struct ChannelConfig {
  std::string token;        // sent on every call (auth.h)
  // The training job this client belongs to, sent on every call (auth.h
  // kTrainingJobHeader); "" = none. A server of another job refuses the call.
  std::string training_job_name;
  // TLS: ca = the servers' CA (PEM path); cert + key = this client's
  // certificate for mutual TLS. Empty ca: plaintext.
  std::string tls_ca, tls_cert, tls_key;
  // Largest message accepted (batch frames) and sent.
  int64_t max_receive_message_bytes = int64_t{1} << 30;
  int64_t max_send_message_bytes = int64_t{64} << 20;
};

// A channel to "host:port". Errors: NotFound / InvalidArgument for the PEM files.
StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target, const ChannelConfig& config);

// Sets the token and, when `timeout` > 0, a deadline on a call's context.
void PrepareContext(grpc::ClientContext* context, const ChannelConfig& config,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

// Retries a call that fails with UNAVAILABLE (the peer is not up, or went
// away) with exponential backoff (50 ms doubling to 1 s, jittered), printing
// "ctrain: waiting for <what> (<N> s): <last error>" to `log` every
// `notice_every` while it waits. Other errors end the wait at once.
// Gives up with the last error after `max_wait` (0 = never; DeadlineExceeded
// "gave up waiting for <what> after N s (<limit_flag>): <last error>") or when
// `stop` becomes non-zero (Cancelled).
struct RetryOptions {
  std::chrono::milliseconds max_wait{0};
  std::string limit_flag;  // the flag that sets max_wait, named in the error ("" = none)
  std::chrono::milliseconds notice_every{5000};
  const std::atomic<int>* stop = nullptr;
  std::function<void(const std::string&)> log;  // null: stderr
};
Status RetryUnavailable(const std::string& what, const RetryOptions& options, const std::function<Status()>& call);

}  // namespace ctrain::service
