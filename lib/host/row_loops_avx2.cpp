// The row loops compiled for AVX2 + FMA (this file only; see lib/CMakeLists.txt).
#include "host/row_loops_impl.hpp"

namespace xb::host {

const RowLoops& row_loops_avx2() {
    static constexpr RowLoops kTable = make_row_loops(Isa::Avx2);
    return kTable;
}

}  // namespace xb::host
