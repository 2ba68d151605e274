// Clang thread-safety annotations (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html),
// as Abseil's base/thread_annotations.h spells them. Under clang with
// -Wthread-safety (scripts/thread_safety.sh, a CI stage) the compiler checks
// that every CTRAIN_GUARDED_BY member is only touched with its mutex held; other
// compilers see nothing.
#pragma once

#if defined(__clang__)
#define CTRAIN_TSA(x) __attribute__((x))
#else
#define CTRAIN_TSA(x)
#endif

#define CTRAIN_CAPABILITY(x) CTRAIN_TSA(capability(x))
#define CTRAIN_SCOPED_CAPABILITY CTRAIN_TSA(scoped_lockable)
#define CTRAIN_GUARDED_BY(x) CTRAIN_TSA(guarded_by(x))
#define CTRAIN_PT_GUARDED_BY(x) CTRAIN_TSA(pt_guarded_by(x))
#define CTRAIN_REQUIRES(...) CTRAIN_TSA(requires_capability(__VA_ARGS__))
#define CTRAIN_REQUIRES_SHARED(...) CTRAIN_TSA(requires_shared_capability(__VA_ARGS__))
#define CTRAIN_ACQUIRE(...) CTRAIN_TSA(acquire_capability(__VA_ARGS__))
#define CTRAIN_ACQUIRE_SHARED(...) CTRAIN_TSA(acquire_shared_capability(__VA_ARGS__))
#define CTRAIN_RELEASE(...) CTRAIN_TSA(release_capability(__VA_ARGS__))
#define CTRAIN_RELEASE_SHARED(...) CTRAIN_TSA(release_shared_capability(__VA_ARGS__))
#define CTRAIN_RELEASE_GENERIC(...) CTRAIN_TSA(release_generic_capability(__VA_ARGS__))
#define CTRAIN_EXCLUDES(...) CTRAIN_TSA(locks_excluded(__VA_ARGS__))
#define CTRAIN_NO_THREAD_SAFETY_ANALYSIS CTRAIN_TSA(no_thread_safety_analysis)
