// Loop events as handed to JavaScript (both the slot loop's and the relay's deliveries): one flat array,
// kEventSlots slots per event, decoded by native/binding.ts decodeLoopEvents into NativeLoopEvent objects.
// Building plain objects property by property here cost a fifth of the main thread's time per token
// (key strings internalized, hidden-class transitions); JavaScript builds the same objects from literals.
//
//   slot 0: EventKind (its number)   1: job   2, 3, 4: numbers   5: a string   6: an object or a string
//   Ready       6 = { type: 'ready', contextSize, ... }      LoadFailed  5 = message
//   Prompt      2 = promptTokens, 3 = cachedTokens, 4 = promptSteps
//   Text        2 = tokens, 5 = text, 6 = logprobs (absent unless asked for)
//   Done        2 = promptTokens, 3 = cachedTokens, 4 = completionTokens, 5 = finishReason, 6 = the stop string (absent unless one ended it)
//   Error       5 = code, 6 = message                        Disposed    -
// Unused slots are holes. JavaScript thread only.
#pragma once

#include <vector>

#include "loop_types.h"
#include "napi.h"

namespace hearth {

constexpr uint32_t kEventSlots = 7;

Napi::Array eventsToJs(Napi::Env env, const std::vector<LoopEvent> & events);

}  // namespace hearth
