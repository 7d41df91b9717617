// Mixture-of-experts kernels: mul_mat_id (each token's product with the experts its ids pick) and
// add_id (per-expert biases).
//
// mul_mat_id first has thread 0 group the (slot, token) pairs by expert (a counting sort that keeps
// their order) and list the experts some pair uses; an id out of [0, n_as) is reported and its pair
// dropped. Experts no token chose are never read. An expert chosen by fewer than kTileMinColumns
// pairs is a "few" expert, the others "many" ones (only batches of tokens have those); thread 0
// places the few experts' pairs first. After a barrier:
// - the threads make the pairs' columns ready: a few expert's quantized to the activation blocks of
//   the experts' type (or packed f32), a many expert's gathered as packed f32;
// - units of (few expert, block of kRowBlock rows) go to the threads through a shared counter
//   (WorkQueue); each dots its rows with the expert's columns through the row kernels' or the
//   quantized dot products (cpu_kernels/quant_dot.hpp), reading each row once per kMaxDotColumns
//   columns: no barrier per expert (as ggml's per-expert chunk counters). Decoding (one token) and
//   small batches, whose pairs spread over many experts, end here;
// - for each many expert in turn every thread runs compute_mul_mat (the tile, packed or quantized
//   machinery of mul_mat, with its own activation quantization) on a node made of the expert's
//   matrix and its gathered columns, into a scratch block of results, then the threads scatter the
//   results to their (slot, token) places in dst.
#include <algorithm>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "core/op_math.hpp"
#include "cpu_kernels/kernels.hpp"
#include "cpu_kernels/matmul_tiles.hpp"
#include "cpu_kernels/quant_dot.hpp"
#include "cpu_kernels/row_iter.hpp"
#include "cpu_kernels/row_kernels.hpp"
#include "cpu_kernels/row_loops.hpp"

namespace xb::cpu_kernels {

namespace {

constexpr int64_t kRowBlock = 16;

int32_t load_id(const Tensor& ids, int64_t slot, int64_t token) {
    int32_t v;
    std::memcpy(&v, ids.element_ptr(slot, token), sizeof v);
    return v;
}

// A mul_mat node over one expert: its matrix of `as`, `n` gathered packed f32 columns, and a packed
// f32 result [m, n]. Pointers may be null when only the work size is wanted.
struct ExpertNode {
    Tensor a, b, d;
    ExpertNode(const Tensor& as, int64_t e, int64_t n, float* columns, float* results) {
        a.type = as.type;
        a.ne = {as.ne[0], as.ne[1], 1, 1};
        a.nb = as.nb;
        a.data = as.data != nullptr ? as.element_ptr(0, 0, e) : nullptr;
        b.type = DType::F32;
        b.ne = {as.ne[0], n, 1, 1};
        b.nb = contiguous_strides(DType::F32, b.ne);
        b.data = columns;
        d.type = DType::F32;
        d.ne = {as.ne[1], n, 1, 1};
        d.nb = contiguous_strides(DType::F32, d.ne);
        d.data = results;
        d.op = Op::MulMat;
        d.src[0] = &a;
        d.src[1] = &b;
    }
};

// Experts chosen by this many pairs or more go through compute_mul_mat (its tiles), fewer through
// the row dots.
constexpr int64_t kManyPairs = kTileMinColumns;

// The work buffer: the grouping; the pairs' columns made ready for the row dots and one f32 row per
// thread for columns of b that are not packed f32; when some expert can have kManyPairs pairs, the
// gathered f32 columns, the results [m] of every pair, and the work of the experts' mul_mat.
struct IdLayout {
    int64_t n_as = 0, n_used = 0, n_t = 0, k = 0, m = 0;
    int64_t pairs = 0;          // n_used * n_t
    bool quantized = false;
    bool many_possible = false; // pairs >= kManyPairs
    size_t queue_at = 0;        // the WorkQueue's counter
    size_t groups_at = 0;       // GroupCounts
    size_t start_at = 0;        // int64 [n_as]: expert e's pairs are list[start[e], start[e] + count[e])
    size_t count_at = 0;        // int64 [n_as]
    size_t list_at = 0;         // int64 [pairs]: pair (slot + n_used * token), grouped by expert
    size_t active_at = 0;       // int32 [n_as]: the experts with pairs, the few ones first
    size_t act_at = 0;          // the pairs' ready columns, in list order
    size_t act_row = 0;         // bytes of one ready column
    size_t scratch_at = 0;      // one f32 row per thread
    size_t scratch_per_thread = 0;
    size_t columns_at = 0;      // many experts: f32 [k] per pair, in list order
    size_t results_at = 0;      // many experts: f32 [m] per pair, in list order
    size_t sub_at = 0;          // many experts: the experts' mul_mat work
    size_t sub_bytes = 0;
    size_t total = 0;
};

// What group_pairs counted.
struct GroupCounts {
    int64_t grouped = 0;      // pairs with a valid id
    int64_t few_pairs = 0;    // the few experts' pairs: list[0, few_pairs)
    int32_t n_active = 0;     // experts with pairs
    int32_t n_few = 0;        // of them, the few ones: active[0, n_few)
};

// The most work the mul_mat of one expert over kManyPairs to `pairs` columns asks for (the path it
// takes, and with it the work, changes with the column count).
size_t expert_work_size(const Tensor& as, int64_t pairs, int nth) {
    size_t most = 0;
    const auto consider = [&](int64_t n) {
        const ExpertNode node(as, 0, n, nullptr, nullptr);
        most = std::max(most, mul_mat_work_size(node.d, nth));
    };
    for (int64_t n = kManyPairs; n <= std::min<int64_t>(pairs, 128); ++n) consider(n);
    if (pairs > 128) consider(pairs);
    return most;
}

IdLayout id_layout(const Tensor& dst, int nth) {
    const Tensor& as = *dst.src[0];
    const Tensor& ids = *dst.src[2];
    IdLayout l;
    l.n_as = as.ne[2];
    l.n_used = ids.ne[0];
    l.n_t = ids.ne[1];
    l.k = as.ne[0];
    l.m = as.ne[1];
    l.pairs = l.n_used * l.n_t;
    l.quantized = is_quantized(as.type);
    l.many_possible = l.pairs >= kManyPairs;
    l.act_row = l.quantized ? activation_row_bytes(as.type, l.k) : static_cast<size_t>(l.k) * sizeof(float);
    const auto n_as = static_cast<size_t>(l.n_as);
    const auto pairs = static_cast<size_t>(l.pairs);
    l.queue_at = 0;
    l.groups_at = WorkQueue::kSlotBytes;
    l.start_at = l.groups_at + work_align_up(sizeof(GroupCounts));
    l.count_at = l.start_at + work_align_up(n_as * sizeof(int64_t));
    l.list_at = l.count_at + work_align_up(n_as * sizeof(int64_t));
    l.active_at = l.list_at + work_align_up(pairs * sizeof(int64_t));
    l.act_at = l.active_at + work_align_up(n_as * sizeof(int32_t));
    l.scratch_at = l.act_at + work_align_up(l.act_row * pairs);
    l.scratch_per_thread = work_align_up(static_cast<size_t>(l.k) * sizeof(float));
    l.total = l.scratch_at + l.scratch_per_thread * static_cast<size_t>(std::max(nth, 1));
    if (l.many_possible) {
        l.columns_at = l.total;
        l.results_at = l.columns_at + work_align_up(pairs * static_cast<size_t>(l.k) * sizeof(float));
        l.sub_at = l.results_at + work_align_up(pairs * static_cast<size_t>(l.m) * sizeof(float));
        l.sub_bytes = work_align_up(expert_work_size(as, l.pairs, nth));
        l.total = l.sub_at + l.sub_bytes;
    }
    return l;
}

// Pointers into the work buffer after id_layout.
struct IdWork {
    std::byte* queue;
    GroupCounts* groups;
    int64_t* start;
    int64_t* count;
    int64_t* list;
    int32_t* active;
    std::byte* act;
    float* scratch;   // this thread's
    float* columns;   // many experts (null when none can be)
    float* results;
    std::byte* sub;
};

IdWork id_work(const ComputeParams& p, const IdLayout& l) {
    std::byte* w = p.aligned_work();
    const auto at = [&](size_t offset) { return l.many_possible ? w + offset : nullptr; };
    return {w + l.queue_at,
            reinterpret_cast<GroupCounts*>(w + l.groups_at),
            reinterpret_cast<int64_t*>(w + l.start_at),
            reinterpret_cast<int64_t*>(w + l.count_at),
            reinterpret_cast<int64_t*>(w + l.list_at),
            reinterpret_cast<int32_t*>(w + l.active_at),
            w + l.act_at,
            reinterpret_cast<float*>(w + l.scratch_at + l.scratch_per_thread * static_cast<size_t>(p.ith)),
            reinterpret_cast<float*>(at(l.columns_at)),
            reinterpret_cast<float*>(at(l.results_at)),
            at(l.sub_at)};
}

// Step 1 (thread 0): counting sort of the pairs by expert, the few experts' places first.
void group_pairs(const ComputeParams& p, const Tensor& ids, const IdLayout& l, const IdWork& w) {
    std::fill(w.count, w.count + l.n_as, 0);
    bool reported = false;
    for (int64_t t = 0; t < l.n_t; ++t) {
        for (int64_t e = 0; e < l.n_used; ++e) {
            const int32_t id = load_id(ids, e, t);
            if (id < 0 || id >= l.n_as) {
                if (!std::exchange(reported, true)) {
                    p.report(Status(StatusCode::OutOfRange, "mul_mat_id: expert id " + std::to_string(id) +
                                                                " out of range [0, " + std::to_string(l.n_as) + ")"));
                }
                continue;
            }
            ++w.count[id];
        }
    }
    GroupCounts g;
    for (const bool many : {false, true}) {
        for (int64_t e = 0; e < l.n_as; ++e) {
            if (w.count[e] == 0 || (w.count[e] >= kManyPairs) != many) continue;
            w.active[g.n_active++] = static_cast<int32_t>(e);
            w.start[e] = g.grouped;
            g.grouped += w.count[e];
        }
        if (!many) {
            g.n_few = g.n_active;
            g.few_pairs = g.grouped;
        }
    }
    *w.groups = g;
    // The pairs in order, each at its expert's next free place: count[] counts them again as they
    // are placed, through exactly expert e's places, and ends as it was.
    for (int64_t e = 0; e < l.n_as; ++e) w.count[e] = 0;
    for (int64_t t = 0; t < l.n_t; ++t) {
        for (int64_t e = 0; e < l.n_used; ++e) {
            const int32_t id = load_id(ids, e, t);
            if (id >= 0 && id < l.n_as) w.list[w.start[id] + w.count[id]++] = e + l.n_used * t;
        }
    }
}

// b's row that pair p reads: the slot's own, or the token's only one.
RowIndex pair_row(const Tensor& b, const IdLayout& l, int64_t pair) {
    return RowIndex{(pair % l.n_used) % b.ne[1], pair / l.n_used, 0};
}

// Step 2: the columns of the pairs at list positions [q0, q1) (few experts' pairs), ready for the
// dots.
void prepare_columns(const Tensor& as, const Tensor& b, const IdLayout& l, const IdWork& w, int64_t q0, int64_t q1) {
    const QuantDot& table = quant_dot();
    const bool packed = packed_f32_rows(b);
    for (int64_t q = q0; q < q1; ++q) {
        const RowIndex r = pair_row(b, l, w.list[q]);
        std::byte* out = w.act + l.act_row * static_cast<size_t>(q);
        const float* x = nullptr;
        if (packed) {
            x = f32_row(b, r);
        } else {
            const std::byte* row = row_ptr(b, r);
            float* dst = l.quantized ? w.scratch : reinterpret_cast<float*>(out);
            for (int64_t i = 0; i < l.k; ++i) dst[i] = load_at(b, row, i);
            x = dst;
        }
        if (l.quantized) {
            table.quantize_activations(as.type, x, out, l.k);
        } else if (x != reinterpret_cast<const float*>(out)) {
            std::memcpy(out, x, static_cast<size_t>(l.k) * sizeof(float));
        }
    }
}

// Dots of one weight row with up to kMaxDotColumns consecutive ready columns.
class RowDots {
public:
    explicit RowDots(const Tensor& as) : as_(as) {
        if (is_quantized(as.type)) {
            quant_ = quant_dot().dot[static_cast<int>(as.type)];
            return;
        }
        const std::optional<RowType> rt = row_type(as.type);
        if (rt && as.nb[0] == type_size(as.type)) float_ = row_kernels().dot[static_cast<int>(*rt)];
    }

    void operator()(const std::byte* row, const std::byte* cols, size_t stride, int ncols, int64_t k, float* out) const {
        if (quant_ != nullptr) return quant_(k, row, cols, stride, ncols, out);
        for (int c = 0; c < ncols; ++c) {
            const auto* x = reinterpret_cast<const float*>(cols + stride * static_cast<size_t>(c));
            if (float_ != nullptr) {
                out[c] = float_(x, row, k);
                continue;
            }
            float sum = 0.0f;
            for (int64_t i = 0; i < k; ++i) sum += x[i] * load_at(as_, row, i);
            out[c] = sum;
        }
    }

private:
    const Tensor& as_;
    QuantDot::DotFn quant_ = nullptr;
    RowKernels::DotFn float_ = nullptr;
};

// Step 3: rows [i0, i1) of few expert e against every column of the expert.
void expert_block(const Tensor& as, Tensor& dst, const IdLayout& l, const IdWork& w, const RowDots& dots, int64_t e,
                  int64_t i0, int64_t i1) {
    const std::byte* matrix = as.element_ptr(0, 0, e);
    const int64_t first = w.start[e];
    const int64_t count = w.count[e];
    for (int64_t j0 = 0; j0 < count; j0 += kMaxDotColumns) {
        const int ncols = static_cast<int>(std::min<int64_t>(kMaxDotColumns, count - j0));
        const std::byte* cols = w.act + l.act_row * static_cast<size_t>(first + j0);
        std::byte* out[kMaxDotColumns];
        for (int c = 0; c < ncols; ++c) {
            const int64_t pair = w.list[first + j0 + c];
            out[c] = dst.element_ptr(0, pair % l.n_used, pair / l.n_used);
        }
        for (int64_t i = i0; i < i1; ++i) {
            float result[kMaxDotColumns];
            dots(matrix + i * static_cast<int64_t>(as.nb[1]), cols, l.act_row, ncols, l.k, result);
            for (int c = 0; c < ncols; ++c) *reinterpret_cast<float*>(out[c] + i * static_cast<int64_t>(dst.nb[0])) = result[c];
        }
    }
}

}  // namespace

size_t mul_mat_id_work_size(const Tensor& dst, int nth) { return id_layout(dst, nth).total + kWorkAlign; }

namespace {

// Step 4: the many experts, one at a time: gather their pairs' columns, then mul_mat per expert
// (all threads, a barrier after each: the next one reuses the work), then scatter.
void many_experts(const ComputeParams& p, const Tensor& as, const Tensor& b, Tensor& dst, const IdLayout& l,
                  const IdWork& w, const GroupCounts& g) {
    const auto [q0, q1] = p.split(g.grouped - g.few_pairs);
    for (int64_t q = g.few_pairs + q0; q < g.few_pairs + q1; ++q) {
        const std::byte* src = row_ptr(b, pair_row(b, l, w.list[q]));
        load_row_f32(b.type, src, b.nb[0], l.k, l.k, w.columns + q * l.k);
    }
    p.barrier();

    ComputeParams sub = p;
    sub.work = std::span<std::byte>(w.sub, l.sub_bytes);
    for (int32_t i = g.n_few; i < g.n_active; ++i) {
        const int64_t e = w.active[i];
        const int64_t first = w.start[e];
        ExpertNode node(as, e, w.count[e], w.columns + first * l.k, w.results + first * l.m);
        compute_mul_mat(sub, node.d);
        p.barrier();
    }

    for (int64_t q = g.few_pairs + q0; q < g.few_pairs + q1; ++q) {
        const int64_t pair = w.list[q];
        const float* result = w.results + q * l.m;
        std::byte* out = dst.element_ptr(0, pair % l.n_used, pair / l.n_used);
        for (int64_t i = 0; i < l.m; ++i) *reinterpret_cast<float*>(out + i * static_cast<int64_t>(dst.nb[0])) = result[i];
    }
}

}  // namespace

void compute_mul_mat_id(const ComputeParams& p, Tensor& dst) {
    const Tensor& as = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const Tensor& ids = *dst.src[2];
    const IdLayout l = id_layout(dst, p.nth);
    if (l.pairs == 0 || l.m == 0) return;  // the same for every thread: no barrier is skipped by some only
    const IdWork w = id_work(p, l);
    WorkQueue queue(w.queue);
    if (p.ith == 0) {
        group_pairs(p, ids, l, w);
        queue.reset();
    }
    p.barrier();
    const GroupCounts g = *w.groups;  // the same for every thread from here

    const auto [q0, q1] = p.split(g.few_pairs);
    prepare_columns(as, b, l, w, q0, q1);
    p.barrier();
    const RowDots dots(as);
    const int64_t row_blocks = (l.m + kRowBlock - 1) / kRowBlock;
    queue.for_each(static_cast<int64_t>(g.n_few) * row_blocks, p.nth, [&](int64_t u) {
        const int64_t e = w.active[u / row_blocks];
        const int64_t i0 = (u % row_blocks) * kRowBlock;
        expert_block(as, dst, l, w, dots, e, i0, std::min(l.m, i0 + kRowBlock));
    });
    if (g.n_active > g.n_few) many_experts(p, as, b, dst, l, w, g);
}

void compute_add_id(const ComputeParams& p, Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor& b = *dst.src[1];
    const Tensor& ids = *dst.src[2];
    if (dst.is_empty()) return;
    const int64_t n = dst.ne[0];
    const int64_t n_as = b.ne[1];
    const bool fast = packed_f32_rows(a) && packed_f32_rows(dst);
    const RowLoops::BinaryFn add = row_loops().binary[static_cast<int>(BinaryOp::Add)];
    const auto range = p.split(dst.nrows());
    bool reported = false;
    for (int64_t row = range.begin; row < range.end; ++row) {
        const RowIndex r = row_index(dst, row);
        const int32_t id = load_id(ids, r.i1, r.i2);
        if (id < 0 || id >= n_as) {
            if (!std::exchange(reported, true)) {
                p.report(Status(StatusCode::OutOfRange, "add_id: expert id " + std::to_string(id) + " out of range [0, " +
                                                            std::to_string(n_as) + ")"));
            }
            continue;
        }
        // b's rows are packed f32 (the builder checks it).
        const auto* bias = reinterpret_cast<const float*>(b.element_ptr(0, id));
        if (fast) {
            add(f32_row(a, r), bias, f32_row(dst, r), n);
            continue;
        }
        const std::byte* x = row_ptr(a, r);
        std::byte* y = row_ptr(dst, r);
        for (int64_t i = 0; i < n; ++i) store_at(dst, y, i, load_at(a, x, i) + bias[i]);
    }
}

}  // namespace xb::cpu_kernels
