#include "core/row_convert.hpp"

namespace xb {

// No AVX-512 variants: AVX-512 CPUs run the AVX2 ones.
const RowConverters& row_converters(Isa isa) {
    return table_for_isa(isa, "row_converters", &row_converters_scalar, &row_converters_avx2, &row_converters_avx2);
}

const RowConverters& row_converters() {
    static const RowConverters& active = row_converters(active_isa());
    return active;
}

}  // namespace xb
