#include "ctrain/data/record_index.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ctrain/io/endian.h"
#include "ctrain/io/file.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::data {
namespace {

constexpr uint64_t kMinGranule = uint64_t{64} << 10;
constexpr uint64_t kMaxEntries = 4096;
constexpr size_t kIndexBlock = size_t{1} << 20;  // reads that extend the index
constexpr size_t kWalkBlock = size_t{64} << 10;  // a split's own walk (<= one granule)
constexpr size_t kMaxCachedFiles = 4096;

uint64_t GranuleOf(uint64_t size) { return std::max(kMinGranule, (size + kMaxEntries - 1) / kMaxEntries); }

// Buffered positional reads; counts what it reads.
class BlockReader {
 public:
  // Reads blocks of `block` bytes, but none past `limit` unless asked for.
  BlockReader(const io::RandomAccessFile& f, size_t block, uint64_t limit, uint64_t* bytes)
      : f_(f), block_(block), limit_(limit), bytes_(bytes) {}
  // Up to n bytes at `off` (fewer only at end of file). `gap`: the distance
  // to the previous read position; when it is a large part of a block, only
  // n bytes are read (a block would hold a few headers and mostly payload).
  StatusOr<std::string_view> At(uint64_t off, size_t n, uint64_t gap) {
    if (off < start_ || off + n > start_ + buf_.size()) {
      const uint64_t upto = limit_ > off ? limit_ - off : 0;
      buf_.resize(gap * 8 < block_ ? static_cast<size_t>(std::max<uint64_t>(n, std::min<uint64_t>(block_, upto))) : n);
      CTRAIN_ASSIGN_OR_RETURN(size_t got, f_.ReadAt(off, buf_.data(), buf_.size()));
      buf_.resize(got);
      start_ = off;
      *bytes_ += got;
    }
    const size_t at = static_cast<size_t>(off - start_);
    return std::string_view(buf_.data() + at, std::min(n, buf_.size() - at));
  }

 private:
  const io::RandomAccessFile& f_;
  size_t block_;
  uint64_t limit_;
  uint64_t* bytes_;
  std::string buf_;
  uint64_t start_ = 0;
};

std::string Where(const std::string& path, uint64_t index, uint64_t offset) {
  return path + ": record " + std::to_string(index) + " at offset " + std::to_string(offset) + ": ";
}

// The record after the one whose header is at `pos` (index `index`), checking
// the header as TFRecordReader does.
StatusOr<uint64_t> NextRecordStart(BlockReader& r, const std::string& path, uint64_t size, uint64_t pos,
                                   uint64_t index, uint64_t max_record_bytes, uint64_t* gap) {
  CTRAIN_ASSIGN_OR_RETURN(std::string_view h, r.At(pos, io::kTFRecordHeaderBytes, *gap));
  auto truncated = [&](const char* part, uint64_t expected, uint64_t got) {
    return OutOfRangeError(Where(path, index, pos) + "truncated record (EOF inside the " + part + "), expected " +
                           std::to_string(expected) + " bytes, got " + std::to_string(got));
  };
  if (h.size() < io::kTFRecordHeaderBytes) return truncated("length header", io::kTFRecordHeaderBytes, h.size());
  if (!io::LooksLikeTFRecordHeader(h))
    return DataLossError(Where(path, index, pos) + "corrupted record: length crc mismatch");
  const uint64_t len = io::DecodeLE64(h.data());
  if (len > max_record_bytes)
    return ResourceExhaustedError(Where(path, index, pos) + "record length " + std::to_string(len) +
                                  " exceeds max_record_bytes " + std::to_string(max_record_bytes));
  const uint64_t rest = size - pos - io::kTFRecordHeaderBytes;
  if (rest < len) return truncated("payload", len, rest);
  if (rest - len < io::kTFRecordFooterBytes) return truncated("payload crc", io::kTFRecordFooterBytes, rest - len);
  *gap = io::kTFRecordHeaderBytes + len + io::kTFRecordFooterBytes;
  return pos + *gap;
}

// The sparse index of one file version (see the header).
struct FileIndex {
  std::mutex mu;
  uint64_t granule = kMinGranule;
  // TFRecord: entries[k] = (first record start >= k*G, its index); text: (k*G, newlines before it).
  std::vector<std::pair<uint64_t, uint64_t>> entries;
  // How far it was built: TFRecord, the next record start and its index;
  // text, the bytes scanned and the newlines in them.
  uint64_t frontier = 0, count = 0;
};

struct CacheEntry {
  dev_t dev = 0;
  ino_t ino = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  std::shared_ptr<FileIndex> index;
};

std::mutex g_mu;
std::map<std::string, CacheEntry>* g_cache = new std::map<std::string, CacheEntry>;  // never destroyed

// The index of `path` (this version of it; a changed file gets a new one).
std::shared_ptr<FileIndex> IndexOf(const std::string& path, uint64_t size, bool tfrecord) {
  struct stat st {};
  const bool have = ::stat(path.c_str(), &st) == 0;
  const std::string key = (tfrecord ? "t:" : "x:") + path;
  std::lock_guard<std::mutex> l(g_mu);
  auto it = g_cache->find(key);
  if (have && it != g_cache->end() && it->second.dev == st.st_dev && it->second.ino == st.st_ino &&
      it->second.size == size && it->second.mtime_ns == st.st_mtim.tv_sec * int64_t{1000000000} + st.st_mtim.tv_nsec)
    return it->second.index;
  auto index = std::make_shared<FileIndex>();
  index->granule = GranuleOf(size);
  if (!have) return index;  // not cached: cannot tell a changed file from this one
  if (g_cache->size() >= kMaxCachedFiles) g_cache->clear();
  CacheEntry& e = (*g_cache)[key];
  e.dev = st.st_dev;
  e.ino = st.st_ino;
  e.size = size;
  e.mtime_ns = st.st_mtim.tv_sec * int64_t{1000000000} + st.st_mtim.tv_nsec;
  e.index = index;
  return index;
}

}  // namespace

std::pair<uint64_t, uint64_t> SplitByteRange(uint64_t size, int32_t index, int32_t count) {
  const unsigned __int128 s = size;
  const auto n = static_cast<unsigned __int128>(std::max(count, 1));
  return {static_cast<uint64_t>(s * static_cast<unsigned>(index) / n),
          static_cast<uint64_t>(s * static_cast<unsigned>(index + 1) / n)};
}

StatusOr<RangeStart> FindTFRecordRangeStart(const std::string& path, uint64_t size, uint64_t begin,
                                            uint64_t max_record_bytes) {
  RangeStart out;
  if (begin == 0) return out;
  if (begin >= size) {
    out.offset = size;
    return out;
  }
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> f, io::OpenRandomAccessFile(path));
  std::shared_ptr<FileIndex> ix = IndexOf(path, size, /*tfrecord=*/true);
  std::pair<uint64_t, uint64_t> from;
  {
    std::lock_guard<std::mutex> l(ix->mu);
    BlockReader r(*f, kIndexBlock, begin + io::kTFRecordHeaderBytes, &out.index_bytes);
    uint64_t gap = 0;
    auto fill = [&] {
      while (ix->entries.size() * ix->granule <= ix->frontier && ix->entries.size() * ix->granule <= size)
        ix->entries.emplace_back(ix->frontier, ix->count);
    };
    fill();
    while (ix->frontier < begin) {
      CTRAIN_ASSIGN_OR_RETURN(uint64_t next, NextRecordStart(r, path, size, ix->frontier, ix->count, max_record_bytes, &gap));
      ix->frontier = next;
      ++ix->count;
      fill();
    }
    from = ix->entries[begin / ix->granule];
  }
  BlockReader r(*f, kWalkBlock, begin + io::kTFRecordHeaderBytes, &out.walk_bytes);
  uint64_t pos = from.first, index = from.second, gap = 0;
  while (pos < begin) {
    CTRAIN_ASSIGN_OR_RETURN(pos, NextRecordStart(r, path, size, pos, index, max_record_bytes, &gap));
    ++index;
  }
  out.offset = pos;
  out.index = index;
  return out;
}

StatusOr<RangeStart> FindTextRangeStart(const std::string& path, uint64_t size, uint64_t begin) {
  RangeStart out;
  if (begin == 0) return out;
  const uint64_t x = std::min(begin, size) - 1;  // the reader drops [x, next '\n']
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> f, io::OpenRandomAccessFile(path));
  std::shared_ptr<FileIndex> ix = IndexOf(path, size, /*tfrecord=*/false);
  std::pair<uint64_t, uint64_t> from;
  std::string buf;
  {
    std::lock_guard<std::mutex> l(ix->mu);
    while (ix->frontier <= x) {
      buf.resize(static_cast<size_t>(std::min<uint64_t>(kIndexBlock, size - ix->frontier)));
      CTRAIN_ASSIGN_OR_RETURN(size_t n, f->ReadAt(ix->frontier, buf.data(), buf.size()));
      out.index_bytes += n;
      if (n == 0) return OutOfRangeError(path + ": the file shrank while it was read (at byte " +
                                         std::to_string(ix->frontier) + ")");
      uint64_t at = ix->frontier;
      const uint64_t end = ix->frontier + n;
      while (at < end) {
        if (ix->entries.size() * ix->granule == at) ix->entries.emplace_back(at, ix->count);
        const uint64_t stop = std::min(end, ix->entries.size() * ix->granule);
        const char* p = buf.data() + (at - ix->frontier);
        ix->count += static_cast<uint64_t>(std::count(p, p + (stop - at), '\n'));
        at = stop;
      }
      ix->frontier = end;
    }
    from = ix->entries[x / ix->granule];
  }
  // Newlines in [k*G, x).
  uint64_t count = from.second;
  buf.resize(kWalkBlock);
  for (uint64_t at = from.first; at < x;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), x - at));
    CTRAIN_ASSIGN_OR_RETURN(size_t n, f->ReadAt(at, buf.data(), want));
    out.walk_bytes += n;
    if (n == 0) return OutOfRangeError(path + ": the file shrank while it was read (at byte " + std::to_string(at) + ")");
    count += static_cast<uint64_t>(std::count(buf.data(), buf.data() + n, '\n'));
    at += n;
  }
  out.offset = x;
  out.index = count;
  return out;
}

void ClearRecordIndexCache() {
  std::lock_guard<std::mutex> l(g_mu);
  g_cache->clear();
}

}  // namespace ctrain::data
