#include "ctrain/base/lazy_alloc.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace ctrain {

StatusOr<void*> AllocateLazily(size_t bytes, const char* what) {
  if (bytes == 0) return static_cast<void*>(nullptr);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return ResourceExhaustedError(std::string(what) + ": cannot reserve " + std::to_string(bytes) +
                                  " bytes of address space: " + std::strerror(errno));
  // Rows are read at random: 2 MiB pages (where the kernel's transparent huge pages allow them, "madvise" or
  // "always") save most TLB misses. Only a hint: refused or unsupported, the memory is the same.
  if (bytes >= (size_t{2} << 20)) madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

void FreeLazily(void* p, size_t bytes) {
  if (p != nullptr && bytes > 0) munmap(p, bytes);
}

}  // namespace ctrain
