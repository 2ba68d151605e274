// Journal: a durable, append-only log of opaque records in one directory.
// The data-service dispatcher journals its state with it in --work-dir and
// replays it after a restart (docs/data-service.md, "Dispatcher journal").
//
// Files in the directory:
//   journal      the records, back to back.
//   journal.tmp  a compaction in progress (Rewrite); removed by Open.
//   LOCK         flock(2)ed by the one process that owns the directory; holds
//                "pid <N>\n" of that process, for the error a second one gets.
//
// Record format: exactly TFRecord framing (io/tfrecord.h), so any TFRecord
// reader can dump a journal:
//   uint64 length                      little-endian, payload bytes
//   uint32 masked_crc32c(length's 8 bytes)
//   byte   payload[length]
//   uint32 masked_crc32c(payload)
// (CRC-32C and the mask in io/crc32c.h.) No file header; an empty file is an
// empty journal. A payload is at most kMaxJournalRecordBytes.
//
// Torn tail versus corruption. Append writes a whole record with one write(2)
// at the end of the file and fdatasyncs it before returning. A process that
// dies (kill -9, crash) in the middle of an Append can therefore leave only a
// PROPER PREFIX of a correct record at the end of the file, never wrong bytes.
// Open reads the file from the start; at each record offset O:
//   - the bytes from O to the end of the file are fewer than 12 (a short
//     header), or the 12-byte header has a valid length CRC, a length within
//     the limit, and the record it announces runs past the end of the file:
//       => torn tail. It is truncated away (the file is cut to O and synced),
//          and reported in JournalOpenInfo (offset O, bytes dropped). Not an
//          error: this is the normal crash case, and such a record was never
//          acknowledged (its Append had not returned).
//   - the header's length CRC does not match, or the (CRC-proven) length is
//     over the limit, or a complete record's payload CRC does not match:
//       => DataLoss naming the file, the record index and the byte offset.
//          This holds for the LAST record too, even when the file ends exactly
//          at its end: a crash cannot produce a complete record with wrong
//          bytes, and the record may have been acknowledged (a successful
//          Append), so dropping it could silently undo a decision the
//          dispatcher already acted on. The file is left untouched; an
//          operator who accepts the loss truncates it to the offset given.
//   Nothing is ever skipped: records after a corrupt one are not read.
// (A journal on a file system that can expose unwritten or stale blocks after
// a power loss, e.g. ext4 data=writeback, may then show such a complete bad
// record at the tail; that, too, is DataLoss rather than a guess.)
//
// Durability: Append and Rewrite return only after the data (and, for a new
// file, its directory entry) is on stable storage. If either fails, the
// record may or may not be in the journal, and the Journal refuses every
// later write with the same error (FailedPrecondition): after a failed
// fsync the page cache can no longer be trusted, so the owner should exit and
// let the next Open replay what really reached the disk.
//
// Locking: Open takes flock(LOCK_EX|LOCK_NB) on dir/LOCK and holds it until
// the Journal is destroyed; the kernel drops it when the process ends in any
// way, so a lock is never stale. flock locks belong to the open file
// description: a second Open in the same process fails too, and a child made
// with fork() keeps the lock alive while it lives (the fd is O_CLOEXEC, so an
// exec drops it). The directory must be on a local file system with flock
// support; without it Open fails rather than run unguarded.
//
// Thread safety: Append, Rewrite, bytes() and records() may be called from
// any thread; one mutex serialises them (one fdatasync per Append, no group
// commit).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/mutex.h"
#include "ctrain/base/status.h"

namespace ctrain::service {

// Largest payload Append and Rewrite accept (larger is InvalidArgument) and
// Open reads (a CRC-valid larger length is DataLoss). 64 MiB.
inline constexpr uint64_t kMaxJournalRecordBytes = uint64_t{64} << 20;

// File names inside the journal directory.
inline constexpr const char* kJournalFileName = "journal";
inline constexpr const char* kJournalTempFileName = "journal.tmp";
inline constexpr const char* kJournalLockFileName = "LOCK";

// What Open found, for the owner to log.
struct JournalOpenInfo {
  uint64_t records = 0;           // intact records replayed
  uint64_t bytes = 0;             // journal size after Open (bytes of those records)
  uint64_t torn_tail_offset = 0;  // where the torn tail began (== bytes when there was one)
  uint64_t torn_tail_bytes = 0;   // bytes of the incomplete last record dropped (0: none)
  bool removed_temp = false;      // a journal.tmp of an interrupted Rewrite was removed
};

class Journal {
 public:
  // Opens the journal in `dir`: creates `dir` (and parents) if missing, locks
  // it, removes a stale journal.tmp, replays dir/journal (created empty if
  // missing) into *records (payloads in append order; appended to whatever
  // *records holds; records may be null to verify only), truncates a torn
  // tail, and leaves the file open for appends. `info`, if set, is filled.
  // Errors (the journal file itself is changed only when Open succeeds):
  //   FailedPrecondition  "<dir>: journal directory is in use by another
  //                        process (pid N holds <dir>/LOCK)"
  //   DataLoss            "<dir>/journal: record <i> at offset <o>: ..." (the
  //                        rule in the file comment)
  //   ErrnoError codes naming the path for the OS failures (mkdir, open,
  //   read, flock, ftruncate, fsync).
  static StatusOr<std::unique_ptr<Journal>> Open(const std::string& dir, std::vector<std::string>* records,
                                                 JournalOpenInfo* info = nullptr);

  ~Journal();  // closes the file and releases the lock; writes nothing
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Appends one record and fdatasyncs it; when this returns OK the record
  // survives any crash. Errors: InvalidArgument for a payload over
  // kMaxJournalRecordBytes (nothing written, the journal stays usable); an
  // ErrnoError naming the file for a failed write/fdatasync, after which the
  // journal is broken (see Durability above).
  Status Append(std::string_view payload);

  // Compaction: replaces the journal, atomically, by one holding exactly
  // `records` (typically a snapshot of the owner's state), and goes on
  // appending to it. Writes dir/journal.tmp, fsyncs it, renames it over
  // dir/journal and fsyncs the directory; a crash at any point leaves either
  // the old or the new journal. Errors: InvalidArgument for an oversized
  // record (nothing written); an error before the rename leaves the old
  // journal in place and usable; an error after it breaks the journal.
  Status Rewrite(const std::vector<std::string>& records);

  // Size of the journal file in bytes, and the records in it.
  uint64_t bytes() const;
  uint64_t records() const;
  const std::string& dir() const { return dir_; }
  // dir/journal.
  const std::string& path() const { return path_; }

 private:
  Journal(std::string dir, int lock_fd, int fd, uint64_t bytes, uint64_t records);
  Status CheckUsable() const CTRAIN_REQUIRES(mu_);

  const std::string dir_;
  const std::string path_;
  const int lock_fd_;
  mutable Mutex mu_;
  int fd_ CTRAIN_GUARDED_BY(mu_);          // open O_APPEND on path_
  uint64_t bytes_ CTRAIN_GUARDED_BY(mu_);
  uint64_t records_ CTRAIN_GUARDED_BY(mu_);
  Status broken_ CTRAIN_GUARDED_BY(mu_);   // the first write error, sticky
};

}  // namespace ctrain::service
