// What the CUDA kernels can compute (Device::supports_op) and the scratch memory each node needs.
// Pure host logic over tensor metadata: unit-tested without a GPU.
#pragma once

#include <cstddef>

#include "core/tensor.hpp"
#include "cuda/launch_config.hpp"

namespace xb::cuda {

// True when the CUDA backend computes `node` with these types, shapes and layouts (view ops and
// leafs compute nothing and are always supported). Every element of every tensor involved must be
// aligned to its type: the device faults on misaligned loads that the CPU tolerates.
bool supports_node(const Tensor& node);

// Device scratch that the node's kernels use while it is computed (packed GEMM operands, GEMM
// pointer arrays, quantized activations, rope's cos/sin table, flash attention's key splits); 0 for
// most ops. Reads data addresses: call after allocation.
size_t node_scratch_bytes(const Tensor& node);

// The shapes of a flash_attn_ext node that choose its kernel (launch_config.hpp's plan_flash).
// Reads K's and V's data addresses.
FlashShape flash_shape(const Tensor& node);

}  // namespace xb::cuda
