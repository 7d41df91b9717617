#include "core/tensor_values.hpp"

#include <vector>

#include "core/quant.hpp"

namespace xb {

void rewrite_values(Tensor& t, const ValueRewrite& f) {
    if (t.data == nullptr || t.nelements() == 0) return;
    int64_t n = 0;
    std::vector<float> row(is_quantized(t.type) ? static_cast<size_t>(t.ne[0]) : 0);
    for (int64_t i3 = 0; i3 < t.ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < t.ne[2]; ++i2) {
            for (int64_t i1 = 0; i1 < t.ne[1]; ++i1) {
                if (is_quantized(t.type) && !can_quantize(t.type)) {
                    // A read-only format cannot be re-encoded: flip the low bit of each block's last
                    // byte instead (a quant, sign or scale bit), so that the values still change.
                    std::byte* p = t.element_ptr(0, i1, i2, i3);
                    for (size_t b = 0; b < row_size(t.type, t.ne[0]); b += type_size(t.type)) {
                        p[b + type_size(t.type) - 1] ^= std::byte{1};
                    }
                    n += t.ne[0];
                    continue;
                }
                if (is_quantized(t.type)) {
                    std::byte* p = t.element_ptr(0, i1, i2, i3);
                    dequantize_row(t.type, p, row.data(), t.ne[0]);
                    for (float& v : row) v = f(n++, v);
                    quantize_row(t.type, row.data(), p, t.ne[0]);
                    continue;
                }
                for (int64_t i0 = 0; i0 < t.ne[0]; ++i0) {
                    std::byte* p = t.element_ptr(i0, i1, i2, i3);
                    store_from_f32(t.type, p, f(n++, load_as_f32(t.type, p)));
                }
            }
        }
    }
}

}  // namespace xb
