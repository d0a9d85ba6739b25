// Names the calling thread (Linux: its `comm`, at most 15 characters), so per-thread CPU accounting and profilers
// (bench/lib/thread-cpu.ts, perf, top -H) can tell Hearth's threads apart. Threads it then creates start with the
// same name. A no-op elsewhere.
#pragma once

#ifdef __linux__
#include <pthread.h>
#endif

namespace hearth {

inline void nameThisThread(const char * name) {
#ifdef __linux__
    pthread_setname_np(pthread_self(), name);
#else
    (void) name;
#endif
}

}  // namespace hearth
