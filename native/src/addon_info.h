// Which llama.cpp / ggml the addon was compiled against (headers extracted from node-llama-cpp's
// source bundle by native/build.ts) versus which it runs against (node-llama-cpp's prebuilt libraries).
#pragma once

#include <string>

#ifndef HEARTH_HEADER_LLAMA_VERSION
#define HEARTH_HEADER_LLAMA_VERSION "unknown"
#endif
#ifndef HEARTH_HEADER_GGML_VERSION
#define HEARTH_HEADER_GGML_VERSION "unknown"
#endif
#ifndef HEARTH_HEADER_COMMIT
#define HEARTH_HEADER_COMMIT "unknown"
#endif

namespace hearth {

struct VersionCheck {
    bool ok = false;
    std::string runtimeLlama;  // llama_version(), e.g. "0.5.0-dev"
    std::string runtimeGgml;   // ggml_version()
    std::string runtimeGgmlCommit;
    std::string message;       // why not ok
};

/** Compares the compiled-in header versions with the loaded libraries; a mismatch means a different ABI. */
VersionCheck checkVersions();

}  // namespace hearth
