// A multi-layer perceptron stack built from the core ops: per layer
//   x = x + W2 act(W1 x + b1) + b2
// Used by the benchmarks and the config's `mlp` model builder.
#pragma once

#include <vector>

#include "core/context.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb {

struct MlpParams {
    int n_layers = 4;
    int n_embd = 1024;
    int n_hidden = 4096;
    int n_batch = 32;
    UnaryOp activation = UnaryOp::Gelu;
    DType weight_type = DType::F32;
};

struct Mlp {
    Tensor* input;   // f32 [n_embd, n_batch] (input)
    Tensor* output;  // f32 [n_embd, n_batch] (output)
    std::vector<Tensor*> weights;
};

Result<Mlp> build_mlp(Context& ctx, const MlpParams& params);

}  // namespace xb
