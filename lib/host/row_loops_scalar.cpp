// The row loops for the baseline instruction set (SSE2 on x86-64).
#include "host/row_loops_impl.hpp"

namespace xb::host {

const RowLoops& row_loops_scalar() {
    static constexpr RowLoops kTable = make_row_loops(Isa::Scalar);
    return kTable;
}

}  // namespace xb::host
