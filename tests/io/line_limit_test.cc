// Text lines have a length cap (io::LineReader's max_line_bytes, --max-line-bytes):
// a stream without newlines ends in a located error, never in unbounded growth.
// Inputs are generated streams; no test holds more than a few KB.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "ctrain/io/criteo.h"
#include "ctrain/io/file.h"
#include "ctrain/io/libffm.h"
#include "ctrain/io/libsvm.h"

namespace ctrain::io {
namespace {

// An endless stream: `prefix`, then the byte `fill` forever (like /dev/zero).
class EndlessFile final : public SequentialFile {
 public:
  EndlessFile(std::string prefix, char fill) : prefix_(std::move(prefix)), fill_(fill) {}
  StatusOr<size_t> Read(char* buf, size_t n) override {
    for (size_t i = 0; i < n; ++i, ++pos_) buf[i] = pos_ < prefix_.size() ? prefix_[pos_] : fill_;
    return n;
  }
  const std::string& name() const override { return name_; }
  uint64_t position() const override { return pos_; }

 private:
  std::string prefix_;
  char fill_;
  uint64_t pos_ = 0;
  std::string name_ = "endless";
};

TEST(LineLimit, LineReaderStopsAtTheCap) {
  EndlessFile f("1 0:1\n0 0:2\n", 'a');
  LineReader lines(&f, 16, 1000);
  std::string_view line;
  ASSERT_TRUE(*lines.Next(&line));
  EXPECT_EQ(line, "1 0:1");
  ASSERT_TRUE(*lines.Next(&line));
  EXPECT_EQ(line, "0 0:2");
  StatusOr<bool> r = lines.Next(&line);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "endless:3: line longer than 1000 bytes (no newline within 1000 bytes; raise --max-line-bytes if it is "
            "real)");
  EXPECT_GE(f.position(), 1001u);
  EXPECT_LE(f.position(), 1001u + 12u);  // read no further than the cap needs
}

TEST(LineLimit, ExactlyTheCapIsAcceptedOneMoreIsNot) {
  const std::string at_cap(100, 'x'), over(101, 'y');
  auto read_all = [](const std::string& text) {
    auto f = NewMemoryFile("mem", text);
    LineReader lines(f.get(), 8, 100);
    std::string_view line;
    size_t n = 0;
    for (;;) {
      StatusOr<bool> r = lines.Next(&line);
      if (!r.ok()) return std::string(r.status().message()).substr(0, 40) + " after " + std::to_string(n);
      if (!*r) return "ok " + std::to_string(n);
      EXPECT_LE(line.size(), 100u);
      ++n;
    }
  };
  EXPECT_EQ(read_all(at_cap + "\n" + at_cap), "ok 2");                 // terminated and unterminated
  EXPECT_EQ(read_all(at_cap + "\n" + over + "\n"), "mem:2: line longer than 100 bytes (no ne after 1");
  EXPECT_EQ(read_all(at_cap + "\n" + over), "mem:2: line longer than 100 bytes (no ne after 1");  // at EOF
  // A big initial buffer does not lift the cap.
  auto f = NewMemoryFile("mem", over + "\n");
  LineReader big(f.get(), 1 << 16, 100);
  std::string_view line;
  EXPECT_FALSE(big.Next(&line).ok());
}

TEST(LineLimit, EveryTextReaderHonoursTheCap) {
  LibSvmOptions lo;
  lo.field_size = 1;
  lo.max_line_bytes = 64;
  auto svm = LibSvmReader::Open(std::make_unique<EndlessFile>("1 0:1\n", '\0'), lo).value();
  float label;
  int64_t id;
  float value;
  int32_t n;
  ASSERT_TRUE(*svm->Next(&label, &id, &value, &n));
  StatusOr<bool> r = svm->Next(&label, &id, &value, &n);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("endless:2: line longer than 64 bytes"), std::string::npos)
      << r.status().message();

  CriteoReaderOptions co;
  co.format = CriteoFormat::kTsv;
  co.max_line_bytes = 64;
  auto criteo = CriteoReader::Open(std::make_unique<EndlessFile>("", '7'), co).value();
  CriteoRow row;
  r = criteo->Next(&row);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("endless:1: line longer than 64 bytes"), std::string::npos)
      << r.status().message();

  auto ffm = LibFfmReader::Open(std::make_unique<EndlessFile>("", ' '), 64).value();
  const std::vector<FfmTriple>* triples = nullptr;
  r = ffm->Next(&label, &triples);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("endless:1: line longer than 64 bytes"), std::string::npos)
      << r.status().message();
}

// The feature map loader reads lines too: /dev/zero stops at the default cap
// (64 MiB of buffer, the most this suite allocates) instead of growing.
TEST(LineLimit, FeatureMapFromDevZeroIsRefused) {
  StatusOr<CriteoVocabulary> v = CriteoVocabulary::LoadFeatureMap("/dev/zero");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(std::string(v.status().message()).substr(0, 53), "/dev/zero:1: line longer than 67108864 bytes (no newl");
}

}  // namespace
}  // namespace ctrain::io
