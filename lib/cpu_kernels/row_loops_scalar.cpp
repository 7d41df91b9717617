// The row loops for the baseline instruction set (SSE2 on x86-64).
#include "cpu_kernels/row_loops_impl.hpp"

namespace xb::cpu_kernels {

const RowLoops& row_loops_scalar() {
    static constexpr RowLoops kTable = make_row_loops(Isa::Scalar);
    return kTable;
}

}  // namespace xb::cpu_kernels
