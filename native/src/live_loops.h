// Process-wide registry of slot loops whose thread may still run. process.exit() skips Node-API
// cleanup hooks, so an atexit handler stops and joins them before llama.cpp's own statics are destroyed
// (it is registered after the first model load, when those statics exist, so it runs before them).
#pragma once

namespace hearth {

class SlotLoop;

/** Called on the loop thread once its model is loaded. */
void registerLiveLoop(SlotLoop * loop);

/** Called by SlotLoop::join(); blocks while the atexit handler is stopping loops. */
void unregisterLiveLoop(SlotLoop * loop);

}  // namespace hearth
