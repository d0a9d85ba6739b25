#include "model_kind.h"

#include <climits>
#include <cstring>
#include <string>

namespace hearth {

namespace {

/** llama.cpp's BERT-family architectures (encoders with sequence pooling, no output head). */
const char * const kEncoderArchitectures[] = { "bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3",
                                               "modern-bert", "neo-bert", "eurobert" };

std::string architecture(const llama_model * model) {
    char arch[128];
    if (llama_model_meta_val_str(model, "general.architecture", arch, sizeof arch) < 0) {
        return "";
    }
    return arch;
}

}  // namespace

bool servesEmbeddingsOnly(const llama_model * model) {
    const std::string arch = architecture(model);
    for (const char * known : kEncoderArchitectures) {
        if (arch == known) {
            return true;
        }
    }
    char value[16];
    const std::string key = arch + ".attention.causal";
    return llama_model_meta_val_str(model, key.c_str(), value, sizeof value) >= 0 && std::strcmp(value, "false") == 0;
}

int32_t trainedContextLength(const llama_model * model) {
    const int32_t n = llama_model_n_ctx_train(model);
    return n > 0 ? n : INT32_MAX;
}

}  // namespace hearth
