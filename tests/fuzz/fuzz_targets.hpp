// The fuzz targets: each takes arbitrary bytes and must return without crashing, hanging, leaking
// or allocating without bound, whatever the bytes. libFuzzer drives them through fuzz_main.cpp
// (XB_FUZZ=ON, scripts/fuzz); the unit tests run every committed seed and past finding through
// them (test_fuzz_regressions.cpp), so a fixed bug stays fixed in every build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace xb::fuzz {

int config(const uint8_t* data, size_t size);      // a JSON config: parse, build the graph, resolve placement
int expression(const uint8_t* data, size_t size);  // a param expression
int npy(const uint8_t* data, size_t size);         // a .npy file image
int gguf(const uint8_t* data, size_t size);        // a GGUF file image: header, metadata, tensor infos
int gguf_model(const uint8_t* data, size_t size);  // a GGUF model: hyperparameters, decoder, tensor roles
int report(const uint8_t* data, size_t size);      // report tables of arbitrary cells in every format
// A JSON config built, placed and scheduled over SIM0 and the CPU (or the config's own backends),
// then written as DOT and as the scheduler's report; aborts when the DOT text is malformed.
int sched_report(const uint8_t* data, size_t size);

// What is wrong with a DOT text as write_dot writes it (an unterminated string, an edge to an
// undeclared id), or "" when nothing is.
std::string dot_problem(std::string_view dot);

using Target = int (*)(const uint8_t*, size_t);
// The target of that name (as above), or nullptr.
Target find_target(std::string_view name);

}  // namespace xb::fuzz
