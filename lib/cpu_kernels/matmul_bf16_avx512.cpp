// The bf16 outer-product tile (Bf16GemmKernel, matmul_tiles.hpp) with AVX512-BF16 (compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512bf16; chosen at run time only on CPUs that have it): 16
// accumulators of 32 rows (two vectors) by 8 columns, each step one load per a vector and one
// broadcast per column; a step is a pair of k, and one vdpbf16ps does the work of two FMAs. 8
// columns rather than the f32 tile's 12: prompts of 64 and 512 tokens fill whole groups, and on a
// Zen 4 VM the 1B BF16 prefill ran 5 % faster at 64 tokens and 2.5 % at 512 (32 x 12 and 48 x 8
// measured too).
#include <immintrin.h>

#include <cstring>

#include "cpu_kernels/matmul_pack_avx2.hpp"
#include "cpu_kernels/simd_sum_avx512.hpp"
#include "cpu_kernels/tile_prefetch.hpp"

namespace xb::cpu_kernels {

namespace {

constexpr int kVecs = 2;
constexpr int kLanes = 16;
constexpr int kMr = kVecs * kLanes;
constexpr int kNr = 8;

void tile(int64_t pairs, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc, bool accumulate, const TilePrefetch& ahead) {
    __m512 acc[kNr][kVecs];
#pragma GCC unroll 16
    for (int j = 0; j < kNr; ++j) {
        // dst is far from the caches (one tile per chunk of K): its lines arrive during the loop.
        __builtin_prefetch(c + j * ldc, 1);
        __builtin_prefetch(c + j * ldc + kMr - 1, 1);
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) acc[j][v] = _mm512_setzero_ps();
    }
    SpreadPrefetch<> prefetch(ahead, pairs);
    for (int64_t p = 0; p < pairs; ++p, a += kMr, b += kNr) {
        prefetch.step();
        __m512bh av[kVecs];
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) av[v] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(a + v * kLanes));
#pragma GCC unroll 16
        for (int j = 0; j < kNr; ++j) {
            const auto bj = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(b[j])));
#pragma GCC unroll 4
            for (int v = 0; v < kVecs; ++v) acc[j][v] = _mm512_dpbf16_ps(acc[j][v], av[v], bj);
        }
    }
#pragma GCC unroll 16
    for (int j = 0; j < kNr; ++j) {
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) {
            float* out = c + j * ldc + v * kLanes;
            _mm512_storeu_ps(out, accumulate ? _mm512_add_ps(_mm512_loadu_ps(out), acc[j][v]) : acc[j][v]);
        }
    }
}

// Cell p of a row: its pair of elements 2p and 2p + 1 (0 for the second past len).
uint32_t cell(const uint16_t* row, int64_t p, int64_t len) {
    uint16_t pair[2] = {row[2 * p], 0};
    if (2 * p + 1 < len) pair[1] = row[2 * p + 1];
    uint32_t out;
    std::memcpy(&out, pair, sizeof out);
    return out;
}

// The pairs are 4-byte cells: whole blocks of 8 cells by 8 rows go through AVX's 8 x 8 transpose
// of 32-bit lanes (moving bits, never interpreting them as floats), the rest cell by cell.
void pack(const uint16_t* const* src, int rows, int64_t len, uint32_t* out) {
    const int64_t cells = (len + 1) / 2;
    const int64_t whole = len / 2 / 8 * 8;  // cells in blocks of 8 with both elements inside the row
    pack_blocks_avx(src, rows, whole, reinterpret_cast<float*>(out), [](const uint16_t* row, int64_t p) {
        return _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * p)));
    });
    for (int64_t p = whole; p < cells; ++p) {
        for (int i = 0; i < rows; ++i) out[p * rows + i] = cell(src[i], p, len);
    }
}

// The one-token product of R rows: each 32 activations loaded once for the R rows, one vdpbf16ps a
// row (32 products summed into 16 lanes); two accumulators a row for vdpbf16ps's latency; the
// last n % 32 elements through masked loads (zeros past the end: no product).
template <int R>
void dot_rows_of(const uint16_t* q, const std::byte* first, size_t stride, int64_t n, float* out) {
    const auto* row0 = reinterpret_cast<const uint16_t*>(first);
    const size_t row_step = stride / sizeof(uint16_t);
    __m512 acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    const auto step = [&](int64_t e, __mmask32 mask, int chain) {
        const auto x = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(mask, q + e));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const auto w = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(mask, row0 + r * row_step + e));
            acc[r][chain] = _mm512_dpbf16_ps(acc[r][chain], w, x);
        }
    };
    constexpr __mmask32 kAll = ~__mmask32{0};
    int64_t e = 0;
    for (; e + 64 <= n; e += 64) {
        step(e, kAll, 0);
        step(e + 32, kAll, 1);
    }
    for (; e < n; e += 32) step(e, n - e >= 32 ? kAll : static_cast<__mmask32>((uint64_t{1} << (n - e)) - 1), 0);
    for (int r = 0; r < R; ++r) out[r] = hsum16(_mm512_add_ps(acc[r][0], acc[r][1]));
}

void dot_rows(const uint16_t* q, const std::byte* first, size_t stride, int64_t n, int rows, float* out) {
    switch (rows) {
        case 8: return dot_rows_of<8>(q, first, stride, n, out);
        case 4: return dot_rows_of<4>(q, first, stride, n, out);
        case 2: return dot_rows_of<2>(q, first, stride, n, out);
        default: break;
    }
    for (int r = 0; r < rows; ++r) dot_rows_of<1>(q, first + r * stride, stride, n, out + r);
}

}  // namespace

const Bf16GemmKernel& bf16_gemm_avx512() {
    static constexpr Bf16GemmKernel kKernel{kMr, kNr, &tile, &pack, &dot_rows};
    return kKernel;
}

}  // namespace xb::cpu_kernels
