#include "ctrain/service/auth.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ctrain::service {
namespace {

constexpr std::string_view kHeader = "authorization";
constexpr std::string_view kBearer = "Bearer ";

Status CheckPrintable(const std::string& token, const std::string& from) {
  for (unsigned char c : token)
    if (c < 0x20 || c > 0x7e)
      return InvalidArgumentError(from + ": the service token may hold printable ASCII only (byte " +
                                  std::to_string(c) + " found)");
  return Status::OK();
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

StatusOr<std::string> LoadToken(const std::string& token_file) {
  if (token_file.empty()) {
    const char* env = std::getenv(kTokenEnv);
    std::string t = env ? env : "";
    CTRAIN_RETURN_IF_ERROR(CheckPrintable(t, kTokenEnv));
    return t;
  }
  std::ifstream in(token_file, std::ios::binary);
  if (!in) return NotFoundError(token_file + ": cannot open the token file");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return IOError(token_file + ": cannot read the token file");
  std::string t = ss.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  if (t.empty()) return InvalidArgumentError(token_file + ": the token file is empty");
  CTRAIN_RETURN_IF_ERROR(CheckPrintable(t, token_file));
  return t;
}

grpc::Status CheckToken(const grpc::ServerContext& context, const std::string& token) {
  if (token.empty()) return grpc::Status::OK;
  const auto& md = context.client_metadata();
  auto it = md.find(grpc::string_ref(kHeader.data(), kHeader.size()));
  if (it == md.end()) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing service token");
  std::string_view v(it->second.data(), it->second.size());
  if (v.substr(0, kBearer.size()) != kBearer || !ConstantTimeEquals(v.substr(kBearer.size()), token))
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong service token");
  return grpc::Status::OK;
}

void AttachToken(grpc::ClientContext* context, const std::string& token) {
  if (!token.empty()) context->AddMetadata(std::string(kHeader), std::string(kBearer) + token);
}

void AttachTrainingJob(grpc::ClientContext* context, const std::string& training_job_name) {
  if (!training_job_name.empty()) context->AddMetadata(kTrainingJobHeader, training_job_name);
}

grpc::Status CheckTrainingJob(const grpc::ServerContext& context, const std::string& served, const std::string& role) {
  if (served.empty()) return grpc::Status::OK;
  const auto& md = context.client_metadata();
  auto it = md.find(grpc::string_ref(kTrainingJobHeader));
  if (it == md.end()) return grpc::Status::OK;
  const std::string caller(it->second.data(), it->second.size());
  if (caller == served) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                      "this " + role + " serves training job \"" + served + "\"; the caller is of training job \"" +
                          caller + "\" (--training-job-name): two jobs must not share a service (another port, or "
                          "--port 0)");
}

grpc::Status CheckCaller(const grpc::ServerContext& context, const std::string& token, const std::string& served_job,
                         const std::string& role) {
  if (grpc::Status s = CheckToken(context, token); !s.ok()) return s;
  return CheckTrainingJob(context, served_job, role);
}

}  // namespace ctrain::service
