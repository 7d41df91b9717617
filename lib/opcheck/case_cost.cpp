#include "opcheck/case_cost.hpp"

#include <algorithm>

#include "core/dtype.hpp"

namespace xb::opcheck {

namespace {

// Bytes of t's elements, whatever its strides (a view is read element by element).
double logical_bytes(const Tensor& t) {
    return static_cast<double>(t.nelements()) / static_cast<double>(blck_size(t.type)) *
           static_cast<double>(type_size(t.type));
}

const Tensor* storage_root(const Tensor& t) { return t.is_view() ? t.view_src : &t; }

// Default: every source read once, the output written once. A source that is the output's own
// storage (cpy's destination) is written, not read.
double read_write_bytes(const Tensor& op) {
    double bytes = logical_bytes(op);
    for (const Tensor* s : op.src) {
        if (s != nullptr && storage_root(*s) != storage_root(op)) bytes += logical_bytes(*s);
    }
    return bytes;
}

CaseCost memory_bound(double bytes) { return {bytes, 0.0, false}; }
CaseCost compute_bound(double bytes, double flops) { return {bytes, flops, true}; }

}  // namespace

CaseCost op_cost(const Tensor& op) {
    const auto n = [](int64_t v) { return static_cast<double>(v); };
    const Tensor* a = op.src[0];
    const Tensor* b = op.src[1];
    switch (op.op) {
        case Op::MulMat: {  // [k, m] x [k, n] per batch: k*m*n multiply-adds
            CaseCost c = compute_bound(read_write_bytes(op), 2.0 * n(a->ne[0]) * n(op.nelements()));
            c.compute_bound = op.ne[1] > kMemoryBoundColumns;
            return c;
        }
        case Op::MulMatId: {  // [k, m] x one column per (slot, token) pair, with the pair's expert
            // Of the experts only those the pairs can choose are read: at most one per pair.
            const Tensor* ids = op.src[2];
            const double pairs = n(ids->ne[0]) * n(ids->ne[1]);
            const double experts = n(a->ne[2]);
            const double read = logical_bytes(*a) * std::min(pairs, experts) / experts;
            CaseCost c = compute_bound(read + logical_bytes(*b) + logical_bytes(*ids) + logical_bytes(op),
                                       2.0 * n(a->ne[0]) * n(op.nelements()));
            c.compute_bound = ids->ne[1] > kMemoryBoundColumns;
            return c;
        }
        case Op::OutProd:  // sum over ne01 of outer products
            return compute_bound(read_write_bytes(op), 2.0 * n(op.nelements()) * n(a->ne[1]));
        case Op::FlashAttnExt: {  // q.k (d) and p.v (dv) per query, key and head
            const Tensor* v = op.src[2];
            const double pairs = n(op.src[0]->ne[1]) * n(b->ne[1]) * n(op.src[0]->ne[2]) * n(op.src[0]->ne[3]);
            return compute_bound(read_write_bytes(op), 2.0 * pairs * n(op.src[0]->ne[0] + v->ne[0]));
        }
        case Op::GetRows:  // only the gathered rows are read
            return memory_bound(2.0 * logical_bytes(op) + logical_bytes(*b));
        case Op::SetRows: {  // src (src0) read, as many elements written into dst's rows, indices (src1) read
            const double written = n(a->nelements()) * static_cast<double>(type_size(op.type));
            return memory_bound(logical_bytes(*a) + written + logical_bytes(*b));
        }
        default:
            return memory_bound(read_write_bytes(op));
    }
}

}  // namespace xb::opcheck
