// The row loops compiled for AVX-512 (F, BW, VL) with 512-bit vectors preferred (this file only;
// see lib/CMakeLists.txt). Memory-bound loops: the wider stores keep fewer of them in flight per
// byte, which is what moved add and mul with a broadcast row on an AVX-512 CPU. rope keeps the
// generic loop (its AVX2 form is a shuffle kernel of that set's own). The reductions add in the
// same lane order as every other set, so their results are the same bits.
#include "cpu_kernels/row_loops_impl.hpp"

namespace xb::cpu_kernels {

const RowLoops& row_loops_avx512() {
    static constexpr RowLoops kTable = make_row_loops(Isa::Avx512);
    return kTable;
}

}  // namespace xb::cpu_kernels
