#include "ctrain/service/server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <fstream>
#include <sstream>

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include "ctrain/service/auth.h"

namespace ctrain::service {

StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open the " + std::string(flag) + " file");
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().empty()) return InvalidArgumentError(path + ": the " + std::string(flag) + " file is empty");
  return ss.str();
}

std::string JoinHostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos && host.front() != '[') return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

Status CheckHostPort(const std::string& address, const std::string& flag) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
    return InvalidArgumentError(flag + " \"" + address + "\" is not HOST:PORT");
  const std::string port = address.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
      std::stoi(port) > 65535)
    return InvalidArgumentError(flag + " \"" + address + "\": the port must be a number in [1, 65535]");
  return Status::OK();
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

namespace {
bool Authenticated(const ServerConfig& c) { return !c.token.empty() || (!c.tls_cert.empty() && !c.tls_ca.empty()); }
}  // namespace

Status CheckExposure(const ServerConfig& config) {
  if (IsLoopbackHost(config.bind) || Authenticated(config) || config.insecure) return Status::OK();
  return FailedPreconditionError(
      "refusing to listen on " + config.bind + " beyond loopback without authentication: anyone who reaches the "
      "port could use it; set a token (--token-file or " + std::string(kTokenEnv) + ", the same on every host), or "
      "TLS with client certificates (--tls-cert, --tls-key, --tls-client-ca), or give --insecure on a network only "
      "the job's hosts reach (docs/data-service.md#security)");
}

std::string ExposureWarning(const ServerConfig& config) {
  if (IsLoopbackHost(config.bind) || Authenticated(config)) return "";
  return "listening on " + config.bind +
         " beyond loopback without authentication (--insecure): anyone who reaches this port can use it; set "
         "--token-file or " + std::string(kTokenEnv) + " (docs/data-service.md#security)";
}

StatusOr<std::string> ResolveBindAddress(const std::string& host) {
  std::string h = host;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  in6_addr a6;
  in_addr a4;
  if (::inet_pton(AF_INET, h.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, h.c_str(), &a6) == 1) return h;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int rc = ::getaddrinfo(h.c_str(), nullptr, &hints, &res); rc != 0 || res == nullptr)
    return NotFoundError("cannot resolve host \"" + host + "\" to an address to listen on: " + ::gai_strerror(rc));
  std::string v4, v6;
  for (addrinfo* p = res; p != nullptr; p = p->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {0};
    if (p->ai_family == AF_INET && v4.empty()) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(p->ai_addr)->sin_addr, buf, sizeof buf);
      v4 = buf;
    } else if (p->ai_family == AF_INET6 && v6.empty()) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(p->ai_addr)->sin6_addr, buf, sizeof buf);
      v6 = buf;
    }
  }
  ::freeaddrinfo(res);
  if (v4.empty() && v6.empty()) return NotFoundError("host \"" + host + "\" resolves to no IPv4 or IPv6 address");
  return !v4.empty() ? v4 : v6;
}

bool CanConnect(const std::string& host, int port, std::chrono::milliseconds timeout) {
  std::string h = host;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(h.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || res == nullptr) return false;
  bool ok = false;
  for (addrinfo* p = res; p != nullptr && !ok; p = p->ai_next) {
    const int fd = ::socket(p->ai_family, p->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, p->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, p->ai_addr, p->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd pfd{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      ok = ::poll(&pfd, 1, static_cast<int>(timeout.count())) == 1 &&
           ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return ok;
}

StatusOr<RunningServer> StartServer(const ServerConfig& config, const std::vector<grpc::Service*>& services) {
  CTRAIN_RETURN_IF_ERROR(CheckExposure(config));
  if (config.port < 0 || config.port > 65535)
    return InvalidArgumentError("--port must be in [0, 65535], got " + std::to_string(config.port));
  if (config.tls_cert.empty() != config.tls_key.empty())
    return InvalidArgumentError("--tls-cert and --tls-key go together");
  if (!config.tls_ca.empty() && config.tls_cert.empty())
    return InvalidArgumentError("--tls-ca on a server needs --tls-cert and --tls-key");
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (config.tls_cert.empty()) {
    creds = grpc::InsecureServerCredentials();
  } else {
    grpc::SslServerCredentialsOptions ssl(config.tls_ca.empty()
                                              ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                              : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    CTRAIN_ASSIGN_OR_RETURN(pair.private_key, ReadPem(config.tls_key, "--tls-key"));
    CTRAIN_ASSIGN_OR_RETURN(pair.cert_chain, ReadPem(config.tls_cert, "--tls-cert"));
    ssl.pem_key_cert_pairs.push_back(pair);
    if (!config.tls_ca.empty()) {
      CTRAIN_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem(config.tls_ca, "--tls-ca"));
    }
    creds = grpc::SslServerCredentials(ssl);
  }
  RunningServer rs;
  const std::string listen = JoinHostPort(config.bind, config.port);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, creds, &rs.port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<int64_t>(config.max_receive_message_bytes, INT32_MAX)));
  builder.SetMaxSendMessageSize(static_cast<int>(std::min<int64_t>(config.max_send_message_bytes, INT32_MAX)));
  // No SO_REUSEPORT: a second server on a taken port must fail, not share it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  for (grpc::Service* s : services) builder.RegisterService(s);
  rs.server = builder.BuildAndStart();
  if (rs.server == nullptr || rs.port == 0)
    return UnavailableError("cannot listen on " + listen + " (address in use, or not an address of this host)");
  rs.address = JoinHostPort(config.bind, rs.port);
  return rs;
}

}  // namespace ctrain::service
