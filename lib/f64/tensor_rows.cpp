#include "f64/tensor_rows.hpp"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/quant.hpp"
#include "core/size_math.hpp"
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

// Integer results (argmax, argsort: indices) as their type; a value that is not one is an error, not
// a wrapped integer.
template <typename T>
Status store_integers(const Tensor& node, std::byte* row, size_t step, const double* v) {
    for (int64_t i = 0; i < node.ne[0]; ++i) {
        const std::optional<T> value = checked_integer<T>(v[i]);
        if (!value) {
            return Status(StatusCode::InvalidArgument, "F64: node '" + node.display_name() + "' (" + dtype_name(node.type) +
                                                           ") would hold " + std::to_string(v[i]) + ", not an integer of its type");
        }
        store(row + i * step, *value);
    }
    return Status::ok();
}

// One row's n values into `row`, the storage place of the node's first element of the row (element i
// F64Buffer::stride(i * nb0) further on).
Status store_row(const Tensor& node, std::byte* row, const double* v) {
    const int64_t n = node.ne[0];
    const size_t step = F64Buffer::stride(node.nb[0], node.type);
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
        case DType::I32: return store_integers<int32_t>(node, row, step, v);
        case DType::I64: return store_integers<int64_t>(node, row, step, v);
        default: break;
    }
    if (!can_quantize(node.type)) {
        return Status(StatusCode::NotSupported, std::string("F64: cannot write '") + node.display_name() + "': " +
                                                    dtype_name(node.type) + " has no quantizer");
    }
    // A quantized row's blocks are contiguous: quantized in place.
    const std::vector<float> values(v, v + n);
    quantize_row(node.type, values.data(), row, n);
    return Status::ok();
}

}  // namespace

TensorRows::TensorRows(const Tensor& t) : t_(t), buffer_(*f64_storage(t)), ne_{t.ne[0], t.ne[1], t.ne[2], t.ne[3]} {}

void TensorRows::read_row(int64_t i1, int64_t i2, int64_t i3, double* out) const {
    const std::byte* row = buffer_.place(row_address(t_, i1, i2, i3), t_.type);
    const int64_t n = ne_[0];
    const size_t unit = type_size(t_.type);
    if (t_.type == DType::F32) {
        const size_t step = F64Buffer::stride(t_.nb[0], DType::F32);
        for (int64_t i = 0; i < n; ++i) std::memcpy(&out[i], row + i * step, sizeof(double));
    } else if (is_quantized(t_.type) || t_.nb[0] == unit) {
        exact::dequantize_row_exact(t_.type, row, out, n);  // contiguous: blocks, or packed elements
    } else {
        for (int64_t i = 0; i < n; ++i) exact::dequantize_row_exact(t_.type, row + i * t_.nb[0], &out[i], 1);
    }
}

Status write_node(Tensor& node, const exact::NodeValues& values) {
    F64Buffer* buffer = f64_storage(node);
    XB_CHECK_MSG(buffer != nullptr, "F64: a node outside F64 memory");
    const exact::RefArray& v = values.values;
    if (!values.rows.empty()) {
        for (size_t r = 0; r < values.rows.size(); ++r) {
            const auto& [i1, i2, i3] = values.rows[r];
            const double* row = v.values().data() + r * static_cast<size_t>(v.ne()[0]);
            XB_RETURN_IF_ERROR(store_row(node, buffer->place(row_address(node, i1, i2, i3), node.type), row));
        }
        return Status::ok();
    }
    for (int64_t i3 = 0; i3 < node.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < node.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < node.ne[1]; ++i1)
                XB_RETURN_IF_ERROR(store_row(node, buffer->place(row_address(node, i1, i2, i3), node.type), v.row(i1, i2, i3)));
    return Status::ok();
}

}  // namespace xb::f64
