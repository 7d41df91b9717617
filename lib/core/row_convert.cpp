#include "core/row_convert.hpp"

#include "core/status.hpp"

namespace xb {

const RowConverters& row_converters(Isa isa) {
    XB_CHECK_MSG(isa_supported(isa), "row_converters: this CPU does not run that instruction set");
    switch (isa) {
        case Isa::Scalar: return row_converters_scalar();
        // No AVX-512 variants: AVX-512 CPUs run the AVX2 ones.
        case Isa::Avx2: case Isa::Avx512: return row_converters_avx2();
    }
    return row_converters_scalar();
}

const RowConverters& row_converters() {
    static const RowConverters& active = row_converters(active_isa());
    return active;
}

}  // namespace xb
