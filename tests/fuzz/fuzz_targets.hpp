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
// A GGUF model the whole way a user's file goes: written to a file, opened as the config
// (`-c model.gguf`), its decoder built (at most kMaxComputeLayers layers, 2 tokens over a cache of
// 4), its weights read from the file into a CPU buffer, and the graph computed once on one thread.
int gguf_compute(const uint8_t* data, size_t size);
// How far gguf_compute takes an input: refused with a status (the file, its model or its
// weights), skipped as too costly for a fuzzer's unit of work, or computed (tests check the seeds
// reach the end, so that the harness covers the whole path).
enum class ComputeStage { Refused, Skipped, Computed };
ComputeStage gguf_compute_stage(const uint8_t* data, size_t size);
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
