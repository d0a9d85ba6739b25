// Measurement tool for bench/json-schema-coverage.ts, not shipped: runs llama.cpp's own JSON Schema -> GBNF
// converter (common/json-schema-to-grammar.cpp, what llama-server uses for response_format) on each line of
// stdin (one JSON Schema per line) and writes one JSON line per schema: {"grammar": "..."} or {"error": "..."}.
#include "json-schema-to-grammar.h"

#include <iostream>
#include <string>

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        common_json out = common_json::object();
        try {
            out["grammar"] = json_schema_to_grammar(common_json::parse(line), /* force_gbnf */ true);
        } catch (const std::exception & e) {
            out["error"] = std::string(e.what());
        }
        std::cout << out.dump() << std::endl;
    }
    return 0;
}
