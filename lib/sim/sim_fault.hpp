// Fault injection: a deliberately wrong result, so that tools comparing backends can prove that
// they catch a wrong one.
#pragma once

#include "core/tensor.hpp"

namespace xb::sim {

// Perturbs a computed node's output in place (host storage): its first element gets +1 and every
// other element is scaled by 1.01 (integers: only the first element changes, by +1).
void perturb_output(Tensor& node);

}  // namespace xb::sim
