#include "cpu_kernels/row_loops.hpp"

namespace xb::cpu_kernels {

const RowLoops& row_loops(Isa isa) {
    return table_for_isa(isa, "row_loops", &row_loops_scalar, &row_loops_avx2, &row_loops_avx512);
}

const RowLoops& row_loops() {
    static const RowLoops& active = row_loops(active_isa());
    return active;
}

}  // namespace xb::cpu_kernels
