// Zero-filled memory committed page by page on first touch (anonymous mmap
// with MAP_NORESERVE): large tables whose rows are used sparsely (the keyed
// embedding table's arena, train/key_index.h) cost resident memory only for
// the pages written. Reading an untouched page reads zeros without
// committing it.
//
// Thread safety: pure functions; the memory is the caller's.
#pragma once

#include <cstddef>

#include "ctrain/base/status.h"

namespace ctrain {

// `bytes` zeroed bytes, 4096-byte aligned (bytes 0 gives nullptr).
// Errors: ResourceExhausted naming `what` and the size when the address space
// cannot be reserved.
StatusOr<void*> AllocateLazily(size_t bytes, const char* what);
// Releases memory from AllocateLazily (nullptr is ignored).
void FreeLazily(void* p, size_t bytes);

}  // namespace ctrain
