#include "ctrain/monitor/event_file.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace ctrain::monitor {
namespace {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void PutKey(std::string* out, int field, int wire_type) { PutVarint(out, (static_cast<uint64_t>(field) << 3) | wire_type); }
void PutFixed64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutDouble(std::string* out, int field, double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  PutKey(out, field, 1);
  PutFixed64(out, bits);
}
void PutBytes(std::string* out, int field, std::string_view s) {
  PutKey(out, field, 2);
  PutVarint(out, s.size());
  out->append(s);
}

}  // namespace

std::string EncodeScalarEvent(double wall_time, int64_t step, const std::vector<Scalar>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    PutBytes(&v, 1, tag);
    const float f = static_cast<float>(value);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    PutKey(&v, 2, 5);
    PutFixed32(&v, bits);
    PutBytes(&summary, 1, v);
  }
  std::string event;
  PutDouble(&event, 1, wall_time);
  PutKey(&event, 2, 0);
  PutVarint(&event, static_cast<uint64_t>(step));
  PutBytes(&event, 5, summary);
  return event;
}

std::string EncodeFileVersionEvent(double wall_time) {
  std::string event;
  PutDouble(&event, 1, wall_time);
  PutBytes(&event, 3, "brain.Event:2");
  return event;
}

StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IOError(dir + ": cannot create the event directory: " + ec.message());
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string path = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) + "." + host +
                           "." + std::to_string(::getpid());
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::TFRecordWriter> w, io::TFRecordWriter::Open(path));
  std::unique_ptr<EventFileWriter> e(new EventFileWriter(path, std::move(w)));
  CTRAIN_RETURN_IF_ERROR(e->w_->Write(EncodeFileVersionEvent(now)));
  CTRAIN_RETURN_IF_ERROR(e->w_->Flush());
  return e;
}

EventFileWriter::~EventFileWriter() { Close().IgnoreError(); }

Status EventFileWriter::Write(double wall_time, int64_t step, const std::vector<Scalar>& scalars) {
  return w_->Write(EncodeScalarEvent(wall_time, step, scalars));
}
Status EventFileWriter::Flush() { return w_->Flush(); }
Status EventFileWriter::Close() { return w_ ? w_->Close() : Status::OK(); }

}  // namespace ctrain::monitor
