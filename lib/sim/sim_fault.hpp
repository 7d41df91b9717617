// Fault injection: a deliberately wrong result, so that tools comparing backends can prove that
// they catch a wrong one.
#pragma once

#include "core/tensor.hpp"

namespace xb::sim {

// Perturbs a computed node's output in place (host storage). size 0: its first element gets +1 and
// every other element is scaled by 1.01. size F > 0: the elements are scaled by 1+F and 1-F in
// turn, an error of NMSE F^2. Integers: only the first element changes, by +1.
void perturb_output(Tensor& node, double size = 0);

}  // namespace xb::sim
