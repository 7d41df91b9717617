// flash_attn_ext: softmax(q k^T * scale + slope * mask) v with an online softmax over blocks of
// keys, never materialising the score matrix.
//
// Two paths over the same blocks of kFlashKeyBlock keys:
//   - one query row at a time (decoding: one query per head), its scores by the row kernels' dot
//     products and V accumulated by their axpy;
//   - tiles of query rows that share a K/V head (a batch of tokens, and the heads of a group in
//     grouped-query attention): the tile's scores for a block and their product with the block's V
//     are products of packed panels through the mul_mat micro-kernel (cpu_kernels/matmul_tiles.hpp).
//     Each K and V row is then converted and read once per tile instead of once per query, and
//     blocks that no row of the tile attends (a causal mask's future) are skipped whole.
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
// The fewest queries per head that take the tiled path: below it packing the K and V blocks would
// cost more than it saves.
constexpr int64_t kFlashMinTiledQueries = 4;

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

float& f32_at(const Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return *reinterpret_cast<float*>(t.element_ptr(i0, i1, i2, i3));
}

// What every query of (head h, sequence s) shares: its K/V head, ALiBi slope and mask plane.
struct HeadView {
    int64_t kvh = 0;
    float slope = 0.0f;
    int64_t mask_plane2 = 0, mask_plane3 = 0;

    HeadView() = default;
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

// The tile path's rows: every query row that reads one K/V head of one sequence, position by
// position and, within a position, the heads that share the K/V head (grouped-query attention),
// so that each K and V block is converted once for the queries of all those heads. A tile is up
// to kTileRows consecutive rows of that list; its scores and its product with V are products of
// packed panels through the mul_mat micro-kernel (GemmKernel, matmul_tiles.hpp):
//   scores  S[row][key] = sum_d Q[row][d] K[key][d]: panels of mr keys (K transposed) by nr rows;
//   values  O[row][i]  += sum_key P[row][key] V[key][i]: panels of mr value elements (V rows as they
//           are) by nr rows (the weights P transposed).
// Both accumulate along their sum one lane per key or value element, with no horizontal sums.
constexpr int64_t kTileRowsTarget = 64;
constexpr int64_t kMaxTileRows = kTileRowsTarget + kMaxPanelRows;  // the target rounded up to nr

struct TileLayout {
    GemmKernel gemm;
    int64_t d;      // query/key row length
    int64_t dv;     // value row length
    int64_t dvp;    // dv padded to a whole number of mr panels
    int64_t rows;   // rows per tile: a multiple of nr
    int64_t group;  // query heads per K/V head

    explicit TileLayout(const Tensor& dst) : gemm(matmul_tiles().gemm) {
        d = dst.src[0]->ne[0];
        dv = dst.src[2]->ne[0];
        dvp = round_up(dv, gemm.mr);
        rows = round_up(kTileRowsTarget, gemm.nr);  // <= kMaxTileRows
        group = dst.src[0]->ne[2] / dst.src[1]->ne[2];
    }
    // Floats of one thread's scratch, each piece a whole number of cache lines.
    int64_t q_panels() const { return rows * d; }
    int64_t k_rows() const { return kFlashKeyBlock * d; }
    int64_t k_panels() const { return kFlashKeyBlock * d; }
    int64_t v_panels() const { return kFlashKeyBlock * dvp; }
    int64_t scores() const { return rows * kFlashKeyBlock; }  // S, then the weights P
    int64_t p_panels() const { return rows * kFlashKeyBlock; }
    int64_t masks() const { return rows * kFlashKeyBlock; }
    int64_t out() const { return rows * dvp; }
    int64_t conv() const { return std::max(d, dvp); }  // one row converted to f32
    size_t floats() const {
        size_t n = 0;
        for (int64_t piece : {q_panels(), k_rows(), k_panels(), v_panels(), scores(), p_panels(), masks(), out(), conv(),
                              rows, 2 * rows}) {
            n += work_align_up(static_cast<size_t>(piece) * sizeof(float)) / sizeof(float);
        }
        return n;
    }
};

// One thread's pieces of scratch (TileLayout::floats of them).
struct TileScratch {
    float* q_panels;  // [rows / nr][d][nr]
    float* k_rows;    // [kFlashKeyBlock][d]: K rows converted, when they are not packed f32
    float* k_panels;  // [kFlashKeyBlock / mr][d][mr]
    float* v_panels;  // [dvp / mr][kFlashKeyBlock][mr]
    float* s;         // [rows][kFlashKeyBlock]: scores, then weights
    float* p_panels;  // [rows / nr][kFlashKeyBlock][nr]
    float* mask;      // [rows][kFlashKeyBlock]: slope * mask, -inf where masked or past the block
    float* o;         // [rows][dvp]: accumulated values
    float* conv;      // one row converted to f32
    float* run_max;   // [rows]
    double* run_sum;  // [rows]

    TileScratch(const TileLayout& l, float* base) {
        float* next = base;
        auto take = [&next](int64_t n) {
            float* p = next;
            next += work_align_up(static_cast<size_t>(n) * sizeof(float)) / sizeof(float);
            return p;
        };
        q_panels = take(l.q_panels());
        k_rows = take(l.k_rows());
        k_panels = take(l.k_panels());
        v_panels = take(l.v_panels());
        s = take(l.scores());
        p_panels = take(l.p_panels());
        mask = take(l.masks());
        o = take(l.out());
        conv = take(l.conv());
        run_max = take(l.rows);
        run_sum = reinterpret_cast<double*>(take(2 * l.rows));
    }
};

// A tile: rows [first, first + count) of the list of (sequence s, K/V head kvh).
struct QueryTile {
    int64_t s, kvh, first, count;
    int64_t position(const TileLayout& l, int64_t r) const { return (first + r) / l.group; }
    int64_t head(const TileLayout& l, int64_t r) const { return kvh * l.group + (first + r) % l.group; }
};

// Packs the tile's queries as nr-row panels (rows past the tile repeat its last), converting them
// through K's row scratch, which is free until the first block.
void pack_queries(const Tensor& q, const TileLayout& l, const QueryTile& tile, const TileScratch& t) {
    const int nr = l.gemm.nr;
    for (int64_t g = 0; g < l.rows / nr; ++g) {
        const float* rows[kMaxPanelRows];
        for (int i = 0; i < nr; ++i) {
            const int64_t r = std::min(g * nr + i, tile.count - 1);
            float* row = t.k_rows + i * l.d;
            load_row_f32(q.type, q.element_ptr(0, tile.position(l, r), tile.head(l, r), tile.s), q.nb[0], l.d, l.d, row);
            rows[i] = row;
        }
        l.gemm.pack.f32(rows, nr, l.d, t.q_panels + g * l.d * nr);
    }
}

// The tile's slope * mask for keys [k0, k0 + nk), -inf where masked and past nk; which keys no row
// attends and which every row does. False when no row attends any key of the block. Rows of one
// position with the same mask plane and slope (the heads of a GQA group, without ALiBi) share one
// mask row: it is converted and tested once. The loops are branch-free so that they vectorise.
bool load_masks(const Tensor* mask, const TileLayout& l, const QueryTile& tile, const HeadView* heads, int64_t k0,
                int64_t nk, const TileScratch& t, bool* attended_by_all, bool* attended_by_none) {
    uint8_t all[kFlashKeyBlock], none[kFlashKeyBlock];
    std::fill(all, all + nk, uint8_t{1});
    std::fill(none, none + nk, uint8_t{1});
    for (int64_t r = 0; r < tile.count; ++r) {
        float* m = t.mask + r * kFlashKeyBlock;
        const HeadView& head = heads[r];
        if (r > 0 && tile.position(l, r) == tile.position(l, r - 1) && head.mask_plane2 == heads[r - 1].mask_plane2 &&
            head.slope == heads[r - 1].slope) {
            std::copy(m - kFlashKeyBlock, m, m);  // the previous row's: the same values and the same keys
            continue;
        }
        if (mask != nullptr) {
            load_row_f32(mask->type, mask->element_ptr(k0, tile.position(l, r), head.mask_plane2, head.mask_plane3),
                         mask->nb[0], nk, nk, m);
            if (head.slope != 1.0f) {
                for (int64_t j = 0; j < nk; ++j) {
                    const float sloped = head.slope * m[j];
                    m[j] = m[j] == kNegInf ? kNegInf : sloped;
                }
            }
        } else {
            std::fill(m, m + nk, 0.0f);
        }
        std::fill(m + nk, m + kFlashKeyBlock, kNegInf);
        for (int64_t j = 0; j < nk; ++j) {
            const auto masked = static_cast<uint8_t>(m[j] == kNegInf);
            all[j] = static_cast<uint8_t>(all[j] & (masked ^ 1u));
            none[j] = static_cast<uint8_t>(none[j] & masked);
        }
    }
    bool any = false;
    for (int64_t j = 0; j < nk; ++j) {
        attended_by_all[j] = all[j] != 0;
        attended_by_none[j] = none[j] != 0;
        any = any || none[j] == 0;
    }
    return any;
}

// The block's keys as mr-key panels (K transposed); keys past nk repeat the last (their scores
// are masked).
void pack_keys(const Tensor& k, const TileLayout& l, const QueryTile& tile, int64_t k0, int64_t nk, const TileScratch& t) {
    const bool typed = k.nb[0] == type_size(k.type);  // f32/f16/bf16 rows packed as they are
    const int mr = l.gemm.mr;
    for (int64_t p = 0; p < kFlashKeyBlock / mr; ++p) {
        if (p * mr >= nk) break;
        float* panel = t.k_panels + p * l.d * mr;
        const std::byte* keys[kMaxPanelRows];
        for (int i = 0; i < mr; ++i) keys[i] = k.element_ptr(0, k0 + std::min<int64_t>(p * mr + i, nk - 1), tile.kvh, tile.s);
        if (typed && pack_typed_rows(l.gemm.pack, k.type, keys, mr, l.d, panel)) continue;
        const float* rows[kMaxPanelRows];
        for (int i = 0; i < mr; ++i) {
            const int64_t j = std::min<int64_t>(p * mr + i, nk - 1);
            float* row = t.k_rows + j * l.d;
            if (j == p * mr + i) load_row_f32(k.type, keys[i], k.nb[0], l.d, l.d, row);
            rows[i] = row;
        }
        l.gemm.pack.f32(rows, mr, l.d, panel);
    }
}

// The block's V rows as mr-element panels, zero past dv. Keys no row attends are zero rows: their
// V row is never read (an unwritten cache slot may hold anything). Returns false when a key
// attended by only some rows has a non-finite V element, where 0 * V would give the others NaN:
// the caller then accumulates that block row by row.
bool pack_values(const Tensor& v, const TileLayout& l, const QueryTile& tile, int64_t k0, int64_t nk,
                 const bool* attended_by_all, const bool* attended_by_none, const TileScratch& t) {
    const int mr = l.gemm.mr;
    const int64_t panels = l.dvp / mr;
    for (int64_t j = 0; j < nk; ++j) {
        const float* row = t.conv;
        if (attended_by_none[j]) {
            std::fill(t.conv, t.conv + l.dvp, 0.0f);
        } else {
            load_row_f32(v.type, v.element_ptr(0, k0 + j, tile.kvh, tile.s), v.nb[0], l.dv, l.dvp, t.conv);
            if (!attended_by_all[j] && !std::all_of(row, row + l.dv, [](float x) { return std::isfinite(x); })) return false;
        }
        for (int64_t p = 0; p < panels; ++p) std::copy(row + p * mr, row + (p + 1) * mr, t.v_panels + (p * kFlashKeyBlock + j) * mr);
    }
    return true;
}

// Row r's scores of the block turned into weights: scaled (capped) and masked logits, the online
// softmax's maximum and sum updated, the row's accumulated values rescaled when the maximum grows.
void softmax_step(const FlashAttnParams& fp, const TileLayout& l, int64_t r, int64_t nk, const TileScratch& t) {
    const RowLoops& loops = row_loops();
    float* w = t.s + r * kFlashKeyBlock;
    const float* m = t.mask + r * kFlashKeyBlock;
    if (fp.softcap != 0.0f) {
        for (int64_t j = 0; j < nk; ++j) w[j] = m[j] == kNegInf ? kNegInf : logit(fp, w[j], m[j]);
    } else {
        loops.masked_logits(w, m, nk, fp.score_scale());  // logit() without the cap
    }
    const float block_max = loops.max(w, nk);
    if (std::isnan(block_max)) {
        t.run_sum[r] = kNaN;  // a NaN score: the whole row is NaN (flash_attn_row)
        std::fill(w, w + nk, 0.0f);
    } else if (block_max != kNegInf) {
        if (block_max > t.run_max[r]) {
            const float ms = std::exp(t.run_max[r] - block_max);  // 0 while nothing is accumulated
            float* o = t.o + r * l.dvp;
            loops.scale(o, o, l.dvp, ms, 0.0f);
            t.run_sum[r] *= ms;
            t.run_max[r] = block_max;
        }
        t.run_sum[r] += row_kernels().exp_sum(w, nk, t.run_max[r]);
    } else {
        std::fill(w, w + nk, 0.0f);  // every key masked for this row: no weight
    }
}

void flash_attn_tile(const Tensor& dst, const FlashAttnParams& fp, const KvRows& kv, const TileLayout& l,
                     const QueryTile& tile, const TileScratch& t) {
    const Tensor& k = *dst.src[1];
    const Tensor& v = *dst.src[2];
    const GemmKernel& gemm = l.gemm;
    const int mr = gemm.mr, nr = gemm.nr;
    const int64_t groups = round_up(tile.count, nr) / nr;  // nr-row groups holding the tile's rows

    pack_queries(*dst.src[0], l, tile, t);
    HeadView heads[kMaxTileRows];
    for (int64_t r = 0; r < tile.count; ++r) heads[r] = HeadView(dst, fp, tile.head(l, r), tile.s);
    std::fill(t.run_max, t.run_max + l.rows, kNegInf);
    std::fill(t.run_sum, t.run_sum + l.rows, 0.0);
    std::fill(t.o, t.o + l.rows * l.dvp, 0.0f);
    bool attended_by_all[kFlashKeyBlock], attended_by_none[kFlashKeyBlock];

    for (int64_t k0 = 0; k0 < k.ne[1]; k0 += kFlashKeyBlock) {
        const int64_t nk = std::min<int64_t>(kFlashKeyBlock, k.ne[1] - k0);
        // A block that no row attends (the future of a causal mask, the unwritten end of a cache)
        // is neither scored nor read.
        if (!load_masks(dst.src[3], l, tile, heads, k0, nk, t, attended_by_all, attended_by_none)) continue;
        pack_keys(k, l, tile, k0, nk, t);
        const int64_t key_panels = round_up(nk, mr) / mr;
        for (int64_t g = 0; g < groups; ++g) {
            for (int64_t p = 0; p < key_panels; ++p) {
                gemm.tile(l.d, t.k_panels + p * l.d * mr, t.q_panels + g * l.d * nr,
                          t.s + g * nr * kFlashKeyBlock + p * mr, kFlashKeyBlock, false, TilePrefetch{});
            }
        }
        for (int64_t r = 0; r < tile.count; ++r) softmax_step(fp, l, r, nk, t);

        if (pack_values(v, l, tile, k0, nk, attended_by_all, attended_by_none, t)) {
            for (int64_t g = 0; g < groups; ++g) {
                const float* rows[kMaxPanelRows];
                for (int i = 0; i < nr; ++i) rows[i] = t.s + std::min<int64_t>(g * nr + i, tile.count - 1) * kFlashKeyBlock;
                gemm.pack.f32(rows, nr, nk, t.p_panels);
                for (int64_t p = 0; p < l.dvp / mr; ++p) {
                    gemm.tile(nk, t.v_panels + p * kFlashKeyBlock * mr, t.p_panels, t.o + g * nr * l.dvp + p * mr, l.dvp,
                              true, TilePrefetch{});
                }
            }
        } else {
            for (int64_t r = 0; r < tile.count; ++r) {
                const float* w = t.s + r * kFlashKeyBlock;
                for (int64_t j = 0; j < nk; ++j) {
                    if (w[j] != 0.0f) kv.axpy(t.o + r * l.dvp, w[j], v.element_ptr(0, k0 + j, tile.kvh, tile.s), l.dv);
                }
            }
        }
    }
    for (int64_t r = 0; r < tile.count; ++r) {
        const int64_t h = tile.head(l, r);
        const float inv = normaliser(dst, h, t.run_max[r], t.run_sum[r]);
        for (int64_t i = 0; i < l.dv; ++i) f32_at(dst, i, h, tile.position(l, r), tile.s) = t.o[r * l.dvp + i] * inv;
    }
}

bool use_tiles(const Tensor& dst) { return dst.src[0]->ne[1] >= kFlashMinTiledQueries; }

size_t slice_bytes(const Tensor& dst) {
    return work_align_up((use_tiles(dst) ? TileLayout(dst).floats() : row_slice_floats(dst)) * sizeof(float));
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
        // Tiles numbered K/V head fastest, then tile, then sequence, dealt round-robin: under a
        // causal mask later tiles attend more keys, and contiguous shares would leave the last
        // thread most of the work.
        const TileLayout layout(dst);
        const TileScratch scratch(layout, slice);
        const int64_t n_kv_head = dst.src[1]->ne[2];
        const int64_t list_rows = n_q * layout.group;
        const int64_t n_tiles = (list_rows + layout.rows - 1) / layout.rows;
        for (int64_t u = params.ith; u < n_kv_head * n_tiles * q.ne[3]; u += params.nth) {
            const int64_t first = (u / n_kv_head) % n_tiles * layout.rows;
            const QueryTile tile{u / n_kv_head / n_tiles, u % n_kv_head, first, std::min(layout.rows, list_rows - first)};
            flash_attn_tile(dst, fp, rows, layout, tile, scratch);
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
