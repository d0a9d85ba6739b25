#include "live_loops.h"

#include <cstdlib>
#include <mutex>
#include <set>

#include "slot_loop.h"

namespace hearth {

namespace {

std::mutex g_liveMutex;
std::set<SlotLoop *> g_live;
bool g_atexitRegistered = false;

void stopLiveLoopsAtExit() {
    // Holding the lock keeps an owner from freeing its loop meanwhile (join() unregisters under it).
    std::lock_guard<std::mutex> lock(g_liveMutex);
    for (SlotLoop * loop : g_live) {
        loop->requestStop(true);
        loop->joinThread();
    }
}

}  // namespace

void registerLiveLoop(SlotLoop * loop) {
    std::lock_guard<std::mutex> lock(g_liveMutex);
    g_live.insert(loop);
    if (!g_atexitRegistered) {
        g_atexitRegistered = true;
        std::atexit(stopLiveLoopsAtExit);
    }
}

void unregisterLiveLoop(SlotLoop * loop) {
    std::lock_guard<std::mutex> lock(g_liveMutex);
    g_live.erase(loop);
}

}  // namespace hearth
