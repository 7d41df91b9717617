#include "host/row_loops.hpp"

namespace xb::host {

// No AVX-512 variant: the loops are memory-bound at AVX2 width, so AVX-512 CPUs run the AVX2 ones.
const RowLoops& row_loops(Isa isa) {
    return table_for_isa(isa, "row_loops", &row_loops_scalar, &row_loops_avx2, &row_loops_avx2);
}

const RowLoops& row_loops() {
    static const RowLoops& active = row_loops(active_isa());
    return active;
}

}  // namespace xb::host
