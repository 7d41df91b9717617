// Fault injection: a deliberately wrong result, so that tools comparing backends can prove that
// they catch a wrong one.
#pragma once

#include "core/tensor.hpp"

namespace xb::sim {

// The default fault_size: an NMSE of 0.25 at the faulted node, far above every per-node tolerance
// of the compare tools (the loosest, a node that quantizes to q4_0, is 7e-3), so that a fault left
// at its default is always a wrong result.
inline constexpr double kDefaultFaultSize = 0.5;

// Perturbs a computed node's output in place (host storage). Floats, f16, bf16 and quantized
// types: element n is scaled by 1+size for even n and by 1-size for odd n, and an element that is
// 0 becomes +size or -size in the same turn (so that a node of zeros is perturbed too): an error
// of NMSE about size^2. Integers: the first element is increased by 1.
void perturb_output(Tensor& node, double size = kDefaultFaultSize);

}  // namespace xb::sim
