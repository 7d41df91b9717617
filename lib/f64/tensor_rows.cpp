#include "f64/tensor_rows.hpp"

#include <cstring>
#include <vector>

#include "core/quant.hpp"
#include "exact/dequantize.hpp"

namespace xb::f64 {

namespace {

// Declared address of row (i1, i2, i3) of t.
const std::byte* row_address(const Tensor& t, int64_t i1, int64_t i2, int64_t i3) {
    return static_cast<const std::byte*>(t.data) + static_cast<size_t>(i1) * t.nb[1] + static_cast<size_t>(i2) * t.nb[2] +
           static_cast<size_t>(i3) * t.nb[3];
}

template <typename T>
void store(std::byte* to, T v) {
    std::memcpy(to, &v, sizeof v);
}

// One row's n values into wide storage `row` (element i at row + 2 * i * nb0).
Status store_row(const Tensor& node, std::byte* row, const double* v) {
    const int64_t n = node.ne[0];
    const size_t step = 2 * node.nb[0];
    switch (node.type) {
        case DType::F32:
            for (int64_t i = 0; i < n; ++i) store(row + i * step, v[i]);
            return Status::ok();
        case DType::F16:
            for (int64_t i = 0; i < n; ++i) store(row + i * step, f32_to_f16(static_cast<float>(v[i])));
            return Status::ok();
        case DType::BF16:
            for (int64_t i = 0; i < n; ++i) store(row + i * step, f32_to_bf16(static_cast<float>(v[i])));
            return Status::ok();
        case DType::I32:
            for (int64_t i = 0; i < n; ++i) store(row + i * step, static_cast<int32_t>(v[i]));
            return Status::ok();
        case DType::I64:
            for (int64_t i = 0; i < n; ++i) store(row + i * step, static_cast<int64_t>(v[i]));
            return Status::ok();
        default: break;
    }
    if (!can_quantize(node.type)) {
        return Status(StatusCode::NotSupported, std::string("F64: cannot write '") + node.display_name() + "': " +
                                                    dtype_name(node.type) + " has no quantizer");
    }
    std::vector<float> values(v, v + n);
    const size_t block = type_size(node.type);
    std::vector<std::byte> blocks(row_size(node.type, n));
    quantize_row(node.type, values.data(), blocks.data(), n);
    for (size_t b = 0; b < blocks.size() / block; ++b) std::memcpy(row + 2 * b * block, blocks.data() + b * block, block);
    return Status::ok();
}

}  // namespace

TensorRows::TensorRows(const Tensor& t) : t_(t), buffer_(*f64_storage(t)), ne_{t.ne[0], t.ne[1], t.ne[2], t.ne[3]} {}

void TensorRows::read_row(int64_t i1, int64_t i2, int64_t i3, double* out) const {
    const std::byte* row = buffer_.wide(row_address(t_, i1, i2, i3));
    const int64_t n = ne_[0];
    if (t_.type == DType::F32) {
        const size_t step = 2 * t_.nb[0];
        for (int64_t i = 0; i < n; ++i) std::memcpy(&out[i], row + i * step, sizeof(double));
        return;
    }
    // Every other type is held as its own bytes: gather the row's elements (or blocks, which are
    // contiguous in a quantized row) and read them exactly.
    const size_t unit = type_size(t_.type);
    const size_t step = 2 * (is_quantized(t_.type) ? unit : t_.nb[0]);
    const int64_t units = n / blck_size(t_.type);
    std::vector<std::byte> packed(static_cast<size_t>(units) * unit);
    for (int64_t u = 0; u < units; ++u) std::memcpy(packed.data() + u * unit, row + u * step, unit);
    exact::dequantize_row_exact(t_.type, packed.data(), out, n);
}

Status write_node(Tensor& node, const exact::NodeValues& values) {
    F64Buffer* buffer = f64_storage(node);
    XB_CHECK_MSG(buffer != nullptr, "F64: a node outside F64 memory");
    const exact::RefArray& v = values.values;
    if (!values.rows.empty()) {
        for (const auto& [i1, i2, i3] : values.rows) {
            XB_RETURN_IF_ERROR(store_row(node, buffer->wide(row_address(node, i1, i2, i3)), v.row(i1, i2, i3)));
        }
        return Status::ok();
    }
    for (int64_t i3 = 0; i3 < node.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < node.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < node.ne[1]; ++i1)
                XB_RETURN_IF_ERROR(store_row(node, buffer->wide(row_address(node, i1, i2, i3)), v.row(i1, i2, i3)));
    return Status::ok();
}

}  // namespace xb::f64
