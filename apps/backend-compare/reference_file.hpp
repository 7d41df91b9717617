// Node results kept in a GGUF file (one f32 tensor per computed node, named as the node), so that
// a run on a machine with a GPU can be checked later where there is none:
//   backend-compare -b CPU,CUDA0 --save-outputs cuda.gguf      (on the GPU machine)
//   backend-compare -b CPU --load-reference cuda.gguf          (anywhere)
#pragma once

#include <string>
#include <vector>

#include "formats/gguf.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb::tools {

class ReferenceWriter {
public:
    ReferenceWriter(const std::string& backend, const std::string& model, uint64_t seed);
    // Reads the node's current values (any backend) and keeps them under the node's name.
    Status add(const Tensor& node);
    Status write(const std::string& path) const { return writer_.write(path); }

private:
    GgufWriter writer_;
};

// The saved values of `node` (NotFound when the file has none; InvalidArgument when its shape
// differs).
Result<std::vector<float>> load_reference(const GgufReader& file, const Tensor& node);

}  // namespace xb::tools
