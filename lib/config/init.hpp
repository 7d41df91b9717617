// Initial values of weights and inputs: seeded random (uniform, normal), constant, arange, causal
// mask, or read from a .npy or GGUF file. Random values are a pure function of (seed, tensor
// name, element index): the same on every machine and thread count, and independent of the
// order in which tensors are initialised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config_spec.hpp"
#include "formats/gguf.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb::config {

// The seed of one tensor's random values.
uint64_t tensor_seed(uint64_t config_seed, std::string_view tensor_name);

// GGUF files opened by inits, parsed once however many tensors they give.
class InitFiles {
public:
    Result<const GgufReader*> gguf(const std::string& path);

private:
    std::map<std::string, std::unique_ptr<GgufReader>> gguf_;
};

// Writes the contiguous bytes of t's values into `out` (exactly t's size), per `init`: straight into
// host memory when the tensor lives there.
Status init_into(const Tensor& t, const InitSpec& init, uint64_t seed, InitFiles& files, std::string_view source,
                 std::span<std::byte> out);
// A gguf init (InitKind::Gguf) in pieces of at most `chunk` bytes given to `sink` with their offset
// in the tensor: a tensor bound for a device is read without a whole copy in host memory.
Status init_in_chunks(const Tensor& t, const InitSpec& init, InitFiles& files, std::string_view source, size_t chunk,
                      const GgufReader::ChunkSink& sink);
// The contiguous bytes of a tensor of t's type and shape, per `init`. Errors name `source` (the
// config file) and the init's JSON path, and the data file with its offset where one is read.
Result<std::vector<std::byte>> init_values(const Tensor& t, const InitSpec& init, uint64_t seed, InitFiles& files,
                                           std::string_view source);

}  // namespace xb::config
