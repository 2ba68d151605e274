// Test helper: the write end of a FIFO, opened without hanging the test.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace ctrain::testing {

// Opens the write end of `fifo` once a reader has it open, and returns a
// blocking descriptor; -1 after 10 s (a blocking open would hang the test if
// the reader failed early).
inline int OpenFifoWriter(const std::string& fifo) {
  for (int i = 0; i < 1000; ++i) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return fd;
    }
    ::usleep(10 * 1000);
  }
  return -1;
}

}  // namespace ctrain::testing
