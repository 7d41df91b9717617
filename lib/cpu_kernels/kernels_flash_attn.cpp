// flash_attn_ext: softmax(q k^T * scale + slope * mask) v with an online softmax over blocks of
// keys, never materialising the score matrix.
//
// Two paths over the same blocks of kFlashKeyBlock keys:
//   - one query row at a time (decoding: one query per head), its scores by the row kernels' dot
//     products and V accumulated by their axpy;
//   - tiles of up to kFlashQueryTile queries of one head (a batch of tokens): the tile's scores for
//     a block are one small matrix product (the mul_mat tiles, cpu_kernels/matmul_tiles.hpp) and so is
//     their product with the block's V, transposed once for the whole tile. Each K and V row is
//     then read once per tile instead of once per query.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/op_math.hpp"
#include "core/ops.hpp"
#include "cpu_kernels/kernels.hpp"
#include "cpu_kernels/matmul_tiles.hpp"
#include "cpu_kernels/row_iter.hpp"
#include "cpu_kernels/row_kernels.hpp"
#include "cpu_kernels/row_loops.hpp"

namespace xb::cpu_kernels {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Keys scored at a time (a multiple of every tile width).
constexpr int64_t kFlashKeyBlock = 64;
// Queries of one head scored together, and the fewest that take the tiled path: below it the
// transposed V block would cost more than it saves.
constexpr int64_t kFlashQueryTile = 16;
constexpr int64_t kFlashMinTiledQueries = 4;

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

float& f32_at(const Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return *reinterpret_cast<float*>(t.element_ptr(i0, i1, i2, i3));
}

// What every query of (head h, sequence s) shares: its K/V head, ALiBi slope and mask plane.
struct HeadView {
    int64_t kvh;
    float slope;
    int64_t mask_plane2, mask_plane3;

    HeadView(const Tensor& dst, const FlashAttnParams& fp, int64_t h, int64_t s) {
        const int64_t n_head = dst.src[0]->ne[2];
        kvh = h / (n_head / dst.src[1]->ne[2]);
        slope = alibi_slope_f32(static_cast<int>(h), static_cast<int>(n_head), fp.max_bias);
        const Tensor* mask = dst.src[3];
        mask_plane2 = mask ? h % mask->ne[2] : 0;
        mask_plane3 = mask ? s % mask->ne[3] : 0;
    }
    // slope * mask[query iq, key ic], 0 without a mask.
    float mask_value(const Tensor* mask, int64_t iq, int64_t ic) const {
        if (mask == nullptr) return 0.0f;
        return slope * load_as_f32(mask->type, mask->element_ptr(ic, iq, mask_plane2, mask_plane3));
    }
};

// A raw score q.k turned into its logit: scaled, capped, masked.
float logit(const FlashAttnParams& fp, float dot, float mask_value) {
    float score = dot * fp.score_scale();
    if (fp.softcap != 0.0f) score = fp.softcap * std::tanh(score);
    return score + mask_value;
}

// The factor a query row's accumulator is multiplied by at the end: 1 / sum, after head h's sink
// (src[4], when there are sinks) has joined the row's maximum and sum with no value
// (core/op_math.hpp's fold_sink). Every key masked out and no sink: zeros rather than 0/0. A NaN
// score left run_sum NaN: exact softmax's sum, and so every weight, is NaN, and so is the row.
float normaliser(const Tensor& dst, int64_t h, float run_max, double run_sum) {
    double scale = 1.0;
    if (const Tensor* sinks = dst.src[4]) {
        const SinkFold f = fold_sink(run_max, static_cast<float>(run_sum), static_cast<const float*>(sinks->data)[h]);
        scale = f.scale;
        run_sum = f.sum;
    }
    return run_sum == 0.0 ? 0.0f : static_cast<float>(scale / run_sum);
}

// --- one query row ---------------------------------------------------------------------------------

// The dot product with K rows and the axpy of V rows, chosen once per computation: the row
// kernels for packed f32/f16/bf16 rows, element-by-element conversion otherwise.
class KvRows {
public:
    KvRows(const Tensor& k, const Tensor& v) : k_(k), v_(v), dot_(kernel(k).first), axpy_(kernel(v).second) {}

    float dot(const float* q, const std::byte* row, int64_t n) const {
        if (dot_ != nullptr) return dot_(q, row, n);
        float sum = 0.0f;
        for (int64_t i = 0; i < n; ++i) sum += q[i] * load_as_f32(k_.type, row + i * k_.nb[0]);
        return sum;
    }
    void axpy(float* acc, float s, const std::byte* row, int64_t n) const {
        if (axpy_ != nullptr) return axpy_(acc, s, row, n);
        for (int64_t i = 0; i < n; ++i) acc[i] += s * load_as_f32(v_.type, row + i * v_.nb[0]);
    }

private:
    static std::pair<RowKernels::DotFn, RowKernels::AxpyFn> kernel(const Tensor& t) {
        const std::optional<RowType> rt = row_type(t.type);
        if (!rt || t.nb[0] != type_size(t.type)) return {nullptr, nullptr};
        const RowKernels& table = row_kernels();
        return {table.dot[static_cast<int>(*rt)], table.axpy[static_cast<int>(*rt)]};
    }

    const Tensor& k_;
    const Tensor& v_;
    RowKernels::DotFn dot_;
    RowKernels::AxpyFn axpy_;
};

// One query row (iq, h, s): online softmax over all keys, V accumulated in `acc` (f32 scratch).
void flash_attn_row(const Tensor& dst, const FlashAttnParams& fp, const KvRows& rows, int64_t iq, int64_t h, int64_t s,
                    float* q_buf, float* acc) {
    const Tensor& q = *dst.src[0];
    const Tensor& k = *dst.src[1];
    const Tensor& v = *dst.src[2];
    const Tensor* mask = dst.src[3];
    const int64_t d = q.ne[0];
    const int64_t dv = v.ne[0];
    const HeadView head(dst, fp, h, s);

    for (int64_t i = 0; i < d; ++i) q_buf[i] = f32_at(q, i, iq, h, s);
    std::fill(acc, acc + dv, 0.0f);
    // Keys in blocks: the block's scores, their maximum, then one rescale of what is accumulated
    // (when the maximum grows) and the block's weights through the set's exp with their sum.
    const RowLoops& loops = row_loops();
    const RowKernels::ExpSumFn exp_sum = row_kernels().exp_sum;
    float run_max = kNegInf;
    double run_sum = 0.0;
    float w[kFlashKeyBlock];
    for (int64_t k0 = 0; k0 < k.ne[1]; k0 += kFlashKeyBlock) {
        const int64_t nk = std::min<int64_t>(kFlashKeyBlock, k.ne[1] - k0);
        for (int64_t j = 0; j < nk; ++j) {
            const float mv = head.mask_value(mask, iq, k0 + j);
            // Masked out: weight 0, and its V row is never read.
            w[j] = mv == kNegInf ? kNegInf : logit(fp, rows.dot(q_buf, k.element_ptr(0, k0 + j, head.kvh, s), d), mv);
        }
        const float block_max = loops.max(w, nk);
        if (block_max == kNegInf) continue;  // every key of the block masked out
        if (std::isnan(block_max)) {
            run_sum = kNaN;  // a NaN score (NaN in q or an attended K row): the whole row is NaN
            continue;
        }
        if (block_max > run_max) {
            const float ms = std::exp(run_max - block_max);  // 0 while nothing is accumulated
            loops.scale(acc, acc, dv, ms, 0.0f);
            run_sum *= ms;
            run_max = block_max;
        }
        run_sum += exp_sum(w, nk, run_max);
        for (int64_t j = 0; j < nk; ++j) {
            if (w[j] != 0.0f) rows.axpy(acc, w[j], v.element_ptr(0, k0 + j, head.kvh, s), dv);
        }
    }
    const float inv = normaliser(dst, h, run_max, run_sum);
    for (int64_t i = 0; i < dv; ++i) f32_at(dst, i, h, iq, s) = acc[i] * inv;
}

size_t row_slice_floats(const Tensor& dst) { return static_cast<size_t>(dst.src[0]->ne[0] + dst.src[2]->ne[0]); }

// --- a tile of queries -----------------------------------------------------------------------------

// The tile path's per-thread scratch, in floats: rows padded to the tiles' width.
struct TileScratch {
    int64_t dp;   // query/key row length, padded
    int64_t dv;
    float* q;     // [kFlashQueryTile][dp]
    float* k;     // [kFlashKeyBlock][dp]: K rows converted, when they are not usable in place
    float* v;     // [kFlashKeyBlock][dv]: V rows converted, when they are not packed f32
    float* vt;    // [dv][kFlashKeyBlock]: the block's V transposed
    float* w;     // [kFlashQueryTile][kFlashKeyBlock]: scores, then weights
    float* pv;    // [kFlashQueryTile][dv]
    float* acc;   // [kFlashQueryTile][dv]
    float* run_max;  // [kFlashQueryTile]
    double* run_sum; // [kFlashQueryTile]
    std::vector<const float*> vt_rows;  // the rows of vt, for the tiles

    static int64_t padded_d(const Tensor& dst) { return round_up(dst.src[0]->ne[0], matmul_tiles().width); }
    static size_t floats(const Tensor& dst) {
        const int64_t dp = padded_d(dst), dv = dst.src[2]->ne[0];
        return static_cast<size_t>(kFlashQueryTile * dp + kFlashKeyBlock * dp + kFlashKeyBlock * dv + dv * kFlashKeyBlock +
                                   kFlashQueryTile * kFlashKeyBlock + 2 * kFlashQueryTile * dv + 3 * kFlashQueryTile);
    }
    TileScratch(const Tensor& dst, float* base) : dp(padded_d(dst)), dv(dst.src[2]->ne[0]) {
        q = base;
        k = q + kFlashQueryTile * dp;
        v = k + kFlashKeyBlock * dp;
        vt = v + kFlashKeyBlock * dv;
        w = vt + dv * kFlashKeyBlock;
        pv = w + kFlashQueryTile * kFlashKeyBlock;
        acc = pv + kFlashQueryTile * dv;
        run_max = acc + kFlashQueryTile * dv;
        // 8-byte aligned: every size above is a multiple of kFlashQueryTile floats.
        run_sum = reinterpret_cast<double*>(run_max + kFlashQueryTile);
        for (int64_t i = 0; i < dv; ++i) vt_rows.push_back(vt + i * kFlashKeyBlock);
    }
};

// K rows of a block as f32 rows of dp floats: in place when packed f32 of a whole number of
// vectors, else converted into scratch.
void key_rows(const Tensor& k, int64_t k0, int64_t nk, int64_t kvh, int64_t s, const TileScratch& t, const float** rows) {
    const int64_t d = k.ne[0];
    const bool in_place = k.type == DType::F32 && k.nb[0] == sizeof(float) && d == t.dp && k.nb[1] % sizeof(float) == 0;
    for (int64_t j = 0; j < nk; ++j) {
        const std::byte* src = k.element_ptr(0, k0 + j, kvh, s);
        if (in_place) {
            rows[j] = reinterpret_cast<const float*>(src);
        } else {
            load_row_f32(k.type, src, k.nb[0], d, t.dp, t.k + j * t.dp);
            rows[j] = t.k + j * t.dp;
        }
    }
}

// vt[i][j] = V[k0 + j][i] for the block's keys (columns past nk zero). Keys that no query of the
// tile attends are zero columns: their V row is never read (an unwritten cache slot may hold
// anything). Returns false when a key attended by only some queries has a non-finite V element,
// where 0 * V would give those others NaN: the caller then accumulates that block row by row.
bool transposed_values(const Tensor& v, int64_t k0, int64_t nk, int64_t kvh, int64_t s, const bool* attended_by_all,
                       const bool* attended_by_none, const TileScratch& t) {
    const int64_t dv = t.dv;
    const bool packed_f32 = v.type == DType::F32 && v.nb[0] == sizeof(float) && v.nb[1] % sizeof(float) == 0;
    const float* rows = t.v;
    int64_t row_stride = dv;
    if (packed_f32) {
        rows = reinterpret_cast<const float*>(v.element_ptr(0, k0, kvh, s));
        row_stride = static_cast<int64_t>(v.nb[1] / sizeof(float));
    } else {
        for (int64_t j = 0; j < nk; ++j) {
            if (!attended_by_none[j]) load_row_f32(v.type, v.element_ptr(0, k0 + j, kvh, s), v.nb[0], dv, dv, t.v + j * dv);
        }
    }
    int64_t hidden[kFlashKeyBlock];  // the keys no query attends
    int64_t n_hidden = 0;
    bool finite = true;
    for (int64_t j = 0; j < nk; ++j) {
        if (attended_by_none[j]) hidden[n_hidden++] = j;
        if (attended_by_none[j] || attended_by_all[j]) continue;
        const float* r = rows + j * row_stride;
        for (int64_t i = 0; i < dv; ++i) finite = finite && std::isfinite(r[i]);
    }
    if (!finite) return false;
    const RowKernels::Transpose32Fn transpose = row_kernels().transpose32;
    transpose(reinterpret_cast<const uint32_t*>(rows), row_stride, reinterpret_cast<uint32_t*>(t.vt), kFlashKeyBlock, dv, nk);
    if (n_hidden == 0 && nk == kFlashKeyBlock) return true;
    for (int64_t i = 0; i < dv; ++i) {
        float* col = t.vt + i * kFlashKeyBlock;
        for (int64_t h = 0; h < n_hidden; ++h) col[hidden[h]] = 0.0f;
        std::fill(col + nk, col + kFlashKeyBlock, 0.0f);
    }
    return true;
}

// Queries [iq0, iq0 + nq) of head h, sequence s.
void flash_attn_tile(const Tensor& dst, const FlashAttnParams& fp, const KvRows& rows, int64_t iq0, int64_t nq, int64_t h,
                     int64_t s, const TileScratch& t) {
    const Tensor& q = *dst.src[0];
    const Tensor& k = *dst.src[1];
    const Tensor& v = *dst.src[2];
    const Tensor* mask = dst.src[3];
    const int64_t dv = t.dv;
    const HeadView head(dst, fp, h, s);
    const RowLoops& loops = row_loops();
    const RowKernels::ExpSumFn exp_sum = row_kernels().exp_sum;
    const int width = matmul_tiles().width;

    const float* q_rows[kFlashQueryTile];
    const float* w_rows[kFlashQueryTile];
    for (int64_t a = 0; a < nq; ++a) {
        load_row_f32(q.type, q.element_ptr(0, iq0 + a, h, s), q.nb[0], q.ne[0], t.dp, t.q + a * t.dp);
        q_rows[a] = t.q + a * t.dp;
        w_rows[a] = t.w + a * kFlashKeyBlock;
        t.run_max[a] = kNegInf;
        t.run_sum[a] = 0.0;
    }
    std::fill(t.acc, t.acc + nq * dv, 0.0f);
    const float* k_rows[kFlashKeyBlock];
    bool attended_by_all[kFlashKeyBlock], attended_by_none[kFlashKeyBlock];

    for (int64_t k0 = 0; k0 < k.ne[1]; k0 += kFlashKeyBlock) {
        const int64_t nk = std::min<int64_t>(kFlashKeyBlock, k.ne[1] - k0);
        key_rows(k, k0, nk, head.kvh, s, t, k_rows);
        tile_dots(k_rows, nk, q_rows, nq, t.dp, t.w, kFlashKeyBlock);  // w[a][j] = q_a . k_j
        std::fill(attended_by_all, attended_by_all + nk, true);
        std::fill(attended_by_none, attended_by_none + nk, true);
        const float score_scale = fp.score_scale();
        float m[kFlashKeyBlock];
        for (int64_t a = 0; a < nq; ++a) {
            float* w = t.w + a * kFlashKeyBlock;
            // The query's mask values for the block as f32 (a packed row converted at once).
            if (mask != nullptr) {
                load_row_f32(mask->type, mask->element_ptr(k0, iq0 + a, head.mask_plane2, head.mask_plane3), mask->nb[0], nk, nk, m);
            } else {
                std::fill(m, m + nk, 0.0f);
            }
            for (int64_t j = 0; j < nk; ++j) {
                const bool masked = m[j] == kNegInf;
                attended_by_all[j] = attended_by_all[j] && !masked;
                attended_by_none[j] = attended_by_none[j] && masked;
            }
            if (fp.softcap != 0.0f) {
                for (int64_t j = 0; j < nk; ++j) w[j] = m[j] == kNegInf ? kNegInf : logit(fp, w[j], head.slope * m[j]);
            } else {
                // logit() without the cap, in a form the compiler vectorises; a masked key's score
                // is -inf even where its K row is not finite.
                for (int64_t j = 0; j < nk; ++j) w[j] = m[j] == kNegInf ? kNegInf : w[j] * score_scale + head.slope * m[j];
            }
            const float block_max = loops.max(w, nk);
            if (std::isnan(block_max)) {
                t.run_sum[a] = kNaN;  // a NaN score: the whole row is NaN (flash_attn_row)
                std::fill(w, w + nk, 0.0f);
            } else if (block_max != kNegInf) {
                if (block_max > t.run_max[a]) {
                    const float ms = std::exp(t.run_max[a] - block_max);  // 0 while nothing is accumulated
                    loops.scale(t.acc + a * dv, t.acc + a * dv, dv, ms, 0.0f);
                    t.run_sum[a] *= ms;
                    t.run_max[a] = block_max;
                }
                t.run_sum[a] += exp_sum(w, nk, t.run_max[a]);
            } else {
                std::fill(w, w + nk, 0.0f);  // every key masked for this query: no weight
            }
            std::fill(w + nk, w + kFlashKeyBlock, 0.0f);
        }
        // A block that no query attends (the unwritten end of a cache) adds nothing.
        if (std::all_of(attended_by_none, attended_by_none + nk, [](bool none) { return none; })) continue;
        if (transposed_values(v, k0, nk, head.kvh, s, attended_by_all, attended_by_none, t)) {
            tile_dots(t.vt_rows.data(), dv, w_rows, nq, round_up(nk, width), t.pv, dv);  // pv[a][i] = w_a . V[:, i]
            for (int64_t a = 0; a < nq; ++a) loops.binary[static_cast<int>(BinaryOp::Add)](t.acc + a * dv, t.pv + a * dv, t.acc + a * dv, dv);
        } else {
            for (int64_t a = 0; a < nq; ++a) {
                for (int64_t j = 0; j < nk; ++j) {
                    if (w_rows[a][j] != 0.0f) rows.axpy(t.acc + a * dv, w_rows[a][j], v.element_ptr(0, k0 + j, head.kvh, s), dv);
                }
            }
        }
    }
    for (int64_t a = 0; a < nq; ++a) {
        const float inv = normaliser(dst, h, t.run_max[a], t.run_sum[a]);
        for (int64_t i = 0; i < dv; ++i) f32_at(dst, i, h, iq0 + a, s) = t.acc[a * dv + i] * inv;
    }
}

bool use_tiles(const Tensor& dst) { return dst.src[0]->ne[1] >= kFlashMinTiledQueries; }

size_t slice_bytes(const Tensor& dst) {
    return work_align_up((use_tiles(dst) ? TileScratch::floats(dst) : row_slice_floats(dst)) * sizeof(float));
}

}  // namespace

size_t flash_attn_ext_work_size(const Tensor& dst, int nth) {
    return static_cast<size_t>(std::max(nth, 1)) * slice_bytes(dst) + kWorkAlign;
}

void compute_flash_attn_ext(const ComputeParams& params, Tensor& dst) {
    const Tensor& q = *dst.src[0];
    const FlashAttnParams fp = FlashAttnParams::load(dst);

    float* slice = reinterpret_cast<float*>(params.aligned_work() + static_cast<size_t>(params.ith) * slice_bytes(dst));

    const KvRows rows(*dst.src[1], *dst.src[2]);
    const int64_t n_head = q.ne[2];
    const int64_t n_q = q.ne[1];
    if (use_tiles(dst)) {
        // Units numbered head fastest, then query tile, then sequence.
        const TileScratch scratch(dst, slice);
        const int64_t n_tiles = (n_q + kFlashQueryTile - 1) / kFlashQueryTile;
        const auto [u0, u1] = params.split(n_head * n_tiles * q.ne[3]);
        for (int64_t u = u0; u < u1; ++u) {
            const int64_t h = u % n_head;
            const int64_t iq0 = (u / n_head) % n_tiles * kFlashQueryTile;
            const int64_t s = u / n_head / n_tiles;
            flash_attn_tile(dst, fp, rows, iq0, std::min(kFlashQueryTile, n_q - iq0), h, s, scratch);
        }
        return;
    }
    // Rows numbered head fastest: neighbouring rows share K/V heads (GQA) and dst is written in order.
    const auto [r0, r1] = params.split(n_head * n_q * q.ne[3]);
    for (int64_t row = r0; row < r1; ++row) {
        const int64_t h = row % n_head;
        const int64_t iq = (row / n_head) % n_q;
        const int64_t s = row / n_head / n_q;
        flash_attn_row(dst, fp, rows, iq, h, s, slice, slice + q.ne[0]);
    }
}

}  // namespace xb::cpu_kernels
