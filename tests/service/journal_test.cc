#include "ctrain/service/journal.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/io/crc32c.h"
#include "ctrain/io/endian.h"
#include "ctrain/io/tfrecord.h"
#include "testing/temp_dir.h"

namespace ctrain::service {
namespace {

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

std::string Dir(const std::string& name) { return ctrain::testing::TestTempDir("journal_test", name); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

std::string Frame(const std::string& payload) {
  std::string out;
  io::AppendTFRecord(&out, payload);
  return out;
}

std::string Frames(const Strings& payloads) {
  std::string out;
  for (const std::string& p : payloads) io::AppendTFRecord(&out, p);
  return out;
}

std::unique_ptr<Journal> MustOpen(const std::string& dir, Strings* records, JournalOpenInfo* info = nullptr) {
  auto j = Journal::Open(dir, records, info);
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  return j.ok() ? std::move(j).value() : nullptr;
}

TEST(JournalTest, RoundTripIsTFRecordFraming) {
  const std::string dir = Dir("roundtrip") + "/a/b";  // created with its parents
  const Strings payloads = {"", "x", std::string("bin\0ary\xff", 8), std::string(1 << 20, 'p')};
  {
    Strings records;
    JournalOpenInfo info;
    info.records = 99;
    auto j = MustOpen(dir, &records, &info);
    ASSERT_NE(j, nullptr);
    EXPECT_TRUE(records.empty());
    EXPECT_EQ(info.records, 0u);
    EXPECT_EQ(info.bytes, 0u);
    EXPECT_EQ(info.torn_tail_bytes, 0u);
    EXPECT_FALSE(info.removed_temp);
    for (const std::string& p : payloads) ASSERT_TRUE(j->Append(p).ok());
    EXPECT_EQ(j->records(), 4u);
    EXPECT_EQ(j->bytes(), 16u + 17u + 24u + (1u << 20) + 16u);
    EXPECT_EQ(j->path(), dir + "/journal");
    // Exactly the TFRecord bytes, and the file is always complete (synced, not buffered).
    EXPECT_EQ(ReadFile(j->path()), Frames(payloads));
    EXPECT_EQ(fs::file_size(j->path()), j->bytes());
  }
  // Any TFRecord reader reads a journal.
  auto reader = io::TFRecordReader::Open(dir + "/journal", {.compression = io::Compression::kNone});
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  Strings via_tfrecord;
  std::string_view rec;
  for (;;) {
    auto more = (*reader)->Next(&rec);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    via_tfrecord.emplace_back(rec);
  }
  EXPECT_EQ(via_tfrecord, payloads);

  Strings records = {"kept"};  // replay appends to what the vector holds
  JournalOpenInfo info;
  auto j = MustOpen(dir, &records, &info);
  ASSERT_NE(j, nullptr);
  Strings expected = {"kept"};
  expected.insert(expected.end(), payloads.begin(), payloads.end());
  EXPECT_EQ(records, expected);
  EXPECT_EQ(info.records, 4u);
  EXPECT_EQ(info.bytes, fs::file_size(dir + "/journal"));
  EXPECT_EQ(j->records(), 4u);
  EXPECT_EQ(j->bytes(), info.bytes);
}

TEST(JournalTest, ReopenAppends) {
  const std::string dir = Dir("reopen");
  for (const char* p : {"a", "b", "c"}) {
    Strings records;
    auto j = MustOpen(dir, &records);
    ASSERT_NE(j, nullptr);
    ASSERT_TRUE(j->Append(p).ok());
  }
  Strings records;
  auto j = MustOpen(dir, nullptr);  // verify only
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(j->records(), 3u);
  j.reset();
  j = MustOpen(dir, &records);
  EXPECT_EQ(records, (Strings{"a", "b", "c"}));
}

// Writes `before` + every proper prefix of `last`'s record: the prefix is a
// torn tail, dropped; the records before it survive and appends go on at its offset.
void CheckEveryCut(const std::string& name, const Strings& before, const std::string& last) {
  const std::string dir = Dir(name);
  const std::string good = Frames(before);
  const std::string tail = Frame(last);
  for (size_t cut = 1; cut < tail.size(); ++cut) {
    SCOPED_TRACE("cut " + std::to_string(cut) + " of " + std::to_string(tail.size()));
    WriteFile(dir + "/journal", good + tail.substr(0, cut));
    Strings records;
    JournalOpenInfo info;
    auto j = MustOpen(dir, &records, &info);
    ASSERT_NE(j, nullptr);
    EXPECT_EQ(records, before);
    EXPECT_EQ(info.records, before.size());
    EXPECT_EQ(info.bytes, good.size());
    EXPECT_EQ(info.torn_tail_offset, good.size());
    EXPECT_EQ(info.torn_tail_bytes, cut);
    EXPECT_EQ(fs::file_size(dir + "/journal"), good.size());  // truncated on disk
    ASSERT_TRUE(j->Append("next").ok());
    j.reset();
    records.clear();
    j = MustOpen(dir, &records, &info);
    Strings expected = before;
    expected.push_back("next");
    EXPECT_EQ(records, expected);
    EXPECT_EQ(info.torn_tail_bytes, 0u);
  }
}

TEST(JournalTest, TornTailAtEveryCutIsDropped) {
  CheckEveryCut("torn", {"first", "second record"}, "the third record");
  CheckEveryCut("torn_only", {}, "only");
  CheckEveryCut("torn_empty_payload", {"x"}, "");
}

// Flips each byte of record `index` in turn: always DataLoss naming the file,
// the record and its offset, and the file is left exactly as it was.
void CheckEveryFlip(const std::string& name, const Strings& payloads, size_t index) {
  const std::string dir = Dir(name);
  const std::string path = dir + "/journal";
  const std::string good = Frames(payloads);
  const size_t offset = Frames(Strings(payloads.begin(), payloads.begin() + index)).size();
  const size_t size = Frame(payloads[index]).size();
  for (size_t i = offset; i < offset + size; ++i) {
    SCOPED_TRACE("flipped byte " + std::to_string(i));
    std::string bad = good;
    bad[i] ^= 0x40;
    WriteFile(path, bad);
    Strings records;
    auto j = Journal::Open(dir, &records);
    ASSERT_FALSE(j.ok());
    EXPECT_EQ(j.status().code(), StatusCode::kDataLoss) << j.status().ToString();
    const std::string where = path + ": record " + std::to_string(index) + " at offset " + std::to_string(offset) + ": ";
    EXPECT_NE(j.status().message().find(where), std::string_view::npos) << j.status().ToString();
    EXPECT_NE(j.status().message().find("crc mismatch"), std::string_view::npos) << j.status().ToString();
    EXPECT_TRUE(records.empty());     // nothing replayed on error
    EXPECT_EQ(ReadFile(path), bad);   // never truncated or "repaired"
  }
}

TEST(JournalTest, FlippedByteInEarlierRecordIsDataLoss) {
  CheckEveryFlip("flip_middle", {"alpha", "bravo charlie", "delta"}, 1);
  CheckEveryFlip("flip_first", {"alpha", "bravo"}, 0);
}

// A complete last record (the file ends exactly at its end) with any wrong
// byte is corruption, not a torn tail: a crash only leaves proper prefixes.
TEST(JournalTest, FlippedByteInCompleteLastRecordIsDataLoss) {
  CheckEveryFlip("flip_last", {"alpha", "bravo", "the last record"}, 2);
  CheckEveryFlip("flip_only", {"only"}, 0);
}

std::string HeaderClaiming(uint64_t length) {
  char h[12];
  io::EncodeLE64(h, length);
  io::EncodeLE32(h + 8, io::MaskCrc(io::Crc32c(h, 8)));
  return std::string(h, sizeof h);
}

TEST(JournalTest, AbsurdLengthIsDataLossEvenAtTheTail) {
  const std::string dir = Dir("absurd");
  for (uint64_t length : {kMaxJournalRecordBytes + 1, uint64_t{1} << 63, ~uint64_t{0}}) {
    SCOPED_TRACE(length);
    // A CRC-valid header whose record would run past the end of the file
    // would be a torn tail, but a length over the limit is never written.
    WriteFile(dir + "/journal", Frame("ok") + HeaderClaiming(length) + "abc");
    auto j = Journal::Open(dir, nullptr);
    ASSERT_FALSE(j.ok());
    EXPECT_EQ(j.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(j.status().message().find("record 1 at offset 18: corrupted record: length " + std::to_string(length) +
                                        " exceeds the limit of 67108864 bytes"),
              std::string_view::npos)
        << j.status().ToString();
  }
  // Within the limit, the same header at the tail is a torn record.
  WriteFile(dir + "/journal", Frame("ok") + HeaderClaiming(kMaxJournalRecordBytes) + "abc");
  JournalOpenInfo info;
  Strings records;
  auto j = MustOpen(dir, &records, &info);
  EXPECT_EQ(records, (Strings{"ok"}));
  EXPECT_EQ(info.torn_tail_offset, 18u);
  EXPECT_EQ(info.torn_tail_bytes, 15u);
}

TEST(JournalTest, OversizedPayloadIsRejectedAndJournalStaysUsable) {
  const std::string dir = Dir("oversized");
  Strings records;
  auto j = MustOpen(dir, &records);
  ASSERT_NE(j, nullptr);
  const std::string big(kMaxJournalRecordBytes + 1, 'b');
  Status s = j->Append(big);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(dir + "/journal: journal record of 67108865 bytes exceeds the limit"),
            std::string_view::npos)
      << s.ToString();
  s = j->Rewrite({"a", big});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("rewrite record 1 of 67108865 bytes"), std::string_view::npos) << s.ToString();
  EXPECT_EQ(j->bytes(), 0u);
  ASSERT_TRUE(j->Append("fine").ok());
  EXPECT_EQ(j->records(), 1u);
  j.reset();
  j = MustOpen(dir, &records);
  EXPECT_EQ(records, (Strings{"fine"}));
}

TEST(JournalTest, SecondOpenFailsWhileFirstIsAlive) {
  const std::string dir = Dir("lock");
  Strings records;
  auto first = MustOpen(dir, &records);
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(first->Append("mine").ok());

  auto second = Journal::Open(dir, &records);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(second.status().message(),
            dir + ": journal directory is in use by another process (pid " + std::to_string(::getpid()) + " holds " +
                dir + "/LOCK); stop it or use another work directory");
  EXPECT_TRUE(records.empty());

  // Another process is refused too (exit code 0 = refused with FailedPrecondition).
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto j = Journal::Open(dir, nullptr);
    ::_exit(!j.ok() && j.status().code() == StatusCode::kFailedPrecondition ? 0 : 1);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;

  first.reset();
  auto third = MustOpen(dir, &records);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(records, (Strings{"mine"}));
  EXPECT_EQ(ReadFile(dir + "/LOCK"), "pid " + std::to_string(::getpid()) + "\n");
}

TEST(JournalTest, RewriteThenAppendThenReopen) {
  const std::string dir = Dir("rewrite");
  Strings records;
  auto j = MustOpen(dir, &records);
  ASSERT_NE(j, nullptr);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(j->Append("event-" + std::to_string(i)).ok());
  ASSERT_TRUE(j->Rewrite({"snapshot-1", "snapshot-2"}).ok());
  EXPECT_EQ(j->records(), 2u);
  EXPECT_EQ(j->bytes(), Frames({"snapshot-1", "snapshot-2"}).size());
  ASSERT_TRUE(j->Append("after").ok());
  EXPECT_EQ(j->records(), 3u);
  EXPECT_EQ(ReadFile(dir + "/journal"), Frames({"snapshot-1", "snapshot-2", "after"}));
  EXPECT_EQ(j->bytes(), fs::file_size(dir + "/journal"));
  EXPECT_FALSE(fs::exists(dir + "/journal.tmp"));
  j.reset();
  j = MustOpen(dir, &records);
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(records, (Strings{"snapshot-1", "snapshot-2", "after"}));

  // Compacting to nothing leaves an empty, appendable journal.
  ASSERT_TRUE(j->Rewrite({}).ok());
  EXPECT_EQ(j->bytes(), 0u);
  EXPECT_EQ(j->records(), 0u);
  ASSERT_TRUE(j->Append("fresh").ok());
  j.reset();
  records.clear();
  j = MustOpen(dir, &records);
  EXPECT_EQ(records, (Strings{"fresh"}));
}

TEST(JournalTest, TempOfAnInterruptedRewriteIsRemoved) {
  const std::string dir = Dir("stale_temp");
  {
    Strings records;
    auto j = MustOpen(dir, &records);
    ASSERT_TRUE(j->Append("old").ok());
  }
  WriteFile(dir + "/journal.tmp", Frame("half a compaction"));
  Strings records;
  JournalOpenInfo info;
  auto j = MustOpen(dir, &records, &info);
  EXPECT_TRUE(info.removed_temp);
  EXPECT_FALSE(fs::exists(dir + "/journal.tmp"));
  EXPECT_EQ(records, (Strings{"old"}));
}

TEST(JournalTest, ConcurrentAppendsKeepEachThreadsOrder) {
  const std::string dir = Dir("threads");
  constexpr int kThreads = 4, kEach = 50;
  {
    Strings records;
    auto j = MustOpen(dir, &records);
    ASSERT_NE(j, nullptr);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) EXPECT_TRUE(j->Append(std::to_string(t) + ":" + std::to_string(i)).ok());
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(j->records(), static_cast<uint64_t>(kThreads * kEach));
  }
  Strings records;
  auto j = MustOpen(dir, &records);
  ASSERT_EQ(records.size(), static_cast<size_t>(kThreads * kEach));
  std::vector<int> next(kThreads, 0);
  for (const std::string& r : records) {
    const int t = std::stoi(r.substr(0, r.find(':')));
    EXPECT_EQ(r, std::to_string(t) + ":" + std::to_string(next[t]));
    ++next[t];
  }
}

TEST(JournalTest, OpenErrorsNameThePath) {
  const std::string base = Dir("errors");
  WriteFile(base + "/plain", "not a directory");
  auto j = Journal::Open(base + "/plain/sub", nullptr);
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find(base + "/plain/sub"), std::string_view::npos) << j.status().ToString();

  fs::create_directories(base + "/dir/journal");  // the journal is a directory
  j = Journal::Open(base + "/dir", nullptr);
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find(base + "/dir/journal"), std::string_view::npos) << j.status().ToString();

  EXPECT_EQ(Journal::Open("", nullptr).status().code(), StatusCode::kInvalidArgument);
}

// A child appends "rec-<i>" in a loop and is killed with SIGKILL at a random
// moment, several times on the same directory. After each kill the journal
// opens, every record is intact, and they are exactly rec-0, rec-1, ...: a
// prefix of what was written that holds every acknowledged record (Append
// returned) and at most one more.
TEST(JournalTest, KillNineAtRandomMomentsLeavesAPrefix) {
  const std::string dir = Dir("kill9");
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // The child publishes how many records it has appended (and synced).
  void* shared = ::mmap(nullptr, sizeof(std::atomic<uint64_t>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* acked = new (shared) std::atomic<uint64_t>(0);
  uint64_t torn_seen = 0;
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const uint64_t start = acked->load();
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      Strings records;
      auto j = Journal::Open(dir, &records);
      if (!j.ok() || records.size() < start) ::_exit(2);
      for (uint64_t i = records.size();; ++i) {
        if (!(*j)->Append("rec-" + std::to_string(i)).ok()) ::_exit(3);
        acked->store(i + 1);
      }
    }
    // Let it get going, then kill it at a random moment.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (acked->load() < start + 10 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 20000)(rng)));
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
    ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << "child ended otherwise: " << wstatus;
    const uint64_t acknowledged = acked->load();
    ASSERT_GE(acknowledged, start + 10) << "the child did not append in 10 s";

    Strings records;
    JournalOpenInfo info;
    auto j = MustOpen(dir, &records, &info);
    ASSERT_NE(j, nullptr);
    if (info.torn_tail_bytes > 0) ++torn_seen;
    ASSERT_GE(records.size(), acknowledged);
    ASSERT_LE(records.size(), acknowledged + 1);
    for (size_t i = 0; i < records.size(); ++i) ASSERT_EQ(records[i], "rec-" + std::to_string(i));
    acked->store(records.size());
  }
  std::printf("kill -9 rounds: %llu records in the end, %llu torn tails truncated\n",
              static_cast<unsigned long long>(acked->load()), static_cast<unsigned long long>(torn_seen));
  ::munmap(shared, sizeof(std::atomic<uint64_t>));
}

}  // namespace
}  // namespace ctrain::service
