// libFuzzer target: arbitrary bytes as a dispatcher journal (service/journal.h).
//
// Byte 0 picks how the rest becomes the file dir/journal:
//   even: the rest is the file as is;
//   odd:  the rest, split at '\n', is a list of payloads, framed correctly;
//         then byte 1 says how many bytes to cut off the end, and bytes 2-3
//         (little-endian, modulo the size) which byte to flip, when byte 0 & 2.
//         (Random bytes almost never carry valid CRCs; this mode reaches the
//         torn-tail and corruption rules deep inside real journals.)
// Journal::Open runs on it and must return OK or DataLoss, never crash. Checks:
//   - OK: the replayed records re-frame to exactly the first info.bytes bytes
//     of the file, info.bytes + info.torn_tail_bytes is the file size, the
//     file was cut to info.bytes, and the journal takes one more append;
//   - DataLoss: the message names the file and the file is left untouched;
//   - odd mode: a flipped byte inside a complete record is always DataLoss,
//     and without a flip the records are the payloads that fit.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ctrain/io/tfrecord.h"
#include "ctrain/service/journal.h"

namespace {

using ctrain::StatusCode;
using ctrain::service::Journal;
using ctrain::service::JournalOpenInfo;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

// tmpfs when there is one: the journal fsyncs.
// Never destroyed, so the exit handler may still use it.
const std::string& FuzzDir() {
  static const std::string* dir = [] {
    const std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    auto* d = new std::string(base + "/journal_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(FuzzDir(), ec);
    });
    return d;
  }();
  return *dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string file;
  std::vector<std::string> payloads;
  uint64_t complete_end = 0;   // odd mode: end of the last record left whole
  int64_t flipped = -1;        // odd mode: the flipped byte, if any
  if ((mode & 1) == 0) {
    file.assign(reinterpret_cast<const char*>(data + 1), size - 1);
  } else {
    if (size < 4) return 0;
    std::string rest(reinterpret_cast<const char*>(data + 4), size - 4);
    for (size_t start = 0;;) {
      const size_t nl = rest.find('\n', start);
      payloads.push_back(rest.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
    std::vector<uint64_t> ends;
    for (const std::string& p : payloads) {
      ctrain::io::AppendTFRecord(&file, p);
      ends.push_back(file.size());
    }
    file.resize(file.size() - std::min<size_t>(data[1], file.size()));
    size_t whole = 0;
    while (whole < ends.size() && ends[whole] <= file.size()) ++whole;
    complete_end = whole == 0 ? 0 : ends[whole - 1];
    payloads.resize(whole);
    if ((mode & 2) && !file.empty()) {
      flipped = (data[2] | (data[3] << 8)) % file.size();
      file[flipped] ^= static_cast<char>(mode | 1);  // never zero
    }
  }

  const std::string& dir = FuzzDir();
  const std::string path = dir + "/journal";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(file.data(), static_cast<std::streamsize>(file.size()));
    Check(out.good());
  }
  std::vector<std::string> records;
  JournalOpenInfo info;
  auto journal = Journal::Open(dir, &records, &info);
  const uint64_t size_after = std::filesystem::file_size(path);
  if (!journal.ok()) {
    Check(journal.status().code() == StatusCode::kDataLoss);
    Check((mode & 1) == 0 || flipped >= 0);  // a journal cut anywhere always opens
    Check(journal.status().message().rfind(path + ": record ", 0) == 0);
    Check(size_after == file.size());
    Check(records.empty());
    return 0;
  }
  Check(flipped < 0 || static_cast<uint64_t>(flipped) >= complete_end);  // corruption is never taken for a tear
  std::string reframed;
  for (const std::string& r : records) ctrain::io::AppendTFRecord(&reframed, r);
  Check(reframed.size() == info.bytes && file.compare(0, info.bytes, reframed) == 0);
  Check(info.bytes + info.torn_tail_bytes == file.size());
  Check(info.torn_tail_bytes == 0 || info.torn_tail_offset == info.bytes);
  Check(info.records == records.size() && (*journal)->records() == records.size());
  Check(size_after == info.bytes && (*journal)->bytes() == info.bytes);
  if ((mode & 1) && flipped < 0) Check(records == payloads);
  Check((*journal)->Append("x").ok() && (*journal)->bytes() == info.bytes + 17);
  return 0;
}
