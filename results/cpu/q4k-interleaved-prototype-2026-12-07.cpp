// Prototype (not in the library): q4_K weights repacked 8 rows at a time, the one-token dot of the 8
// rows at once, against the library's per-row AVX-512 dot (quant_dot()'s q4_K) on the same q8_K
// activations, one thread, 192 rows of 4096 (442 KB, in L2), best of 30 passes each.
// Layout per 8 rows and super-block (Group): the rows' d and dmin, their 6-bit scales and mins
// unpacked to bytes [sub-block][row], and 16 chunks of 64 bytes, byte 8r + j of chunk c holding
// weight 16c + j of row r in its low nibble and 16c + 8 + j in its high one. Then one 64-bit
// broadcast of 8 activations serves all 8 rows: vpdpbusd's int32 lane 2r takes bytes 0-3, lane
// 2r + 1 bytes 4-7, so no shuffle at all; per 64 weights of 8 rows one vpdpbusd, per 128 one load
// and three operations for the nibbles; each sub-block's sums scaled by one vpmulld across the rows.
//   g++ -O2 -std=c++20 -Ilib THIS.cpp build/lib/libxb-cpu-kernels.a build/lib/libxb-core.a -fopenmp
// (gcc 12 warns inside its own headers about the unmasked intrinsics; the library uses masked forms.)
#include <immintrin.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include "core/quant.hpp"
#include "core/quant_blocks.hpp"
#include "core/dtype.hpp"
#include "cpu_kernels/quant_dot.hpp"
using namespace xb;
static double now(){return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();}
constexpr int K = 4096, NB = K / 256, ROWS = 192;
struct Group {  // 8 rows, one super-block: 1184 bytes (8 rows x 148; the plain blocks are 8 x 144)
    uint16_t d[8], dmin[8];
    uint8_t scales[8][8], mins[8][8];  // [sub-block][row]
    uint8_t qs[16][64];                // chunk c: byte 8r + j: low nibble weight 16c + j, high 16c + 8 + j of row r
};
int q_of(const BlockQ4_K& b, int e) { int j = e / 64, l = e % 64; return l < 32 ? b.qs[32 * j + l] & 15 : b.qs[32 * j + l - 32] >> 4; }
void repack(const BlockQ4_K* rows8[8], Group& g) {
    for (int r = 0; r < 8; ++r) {
        const BlockQ4_K& b = *rows8[r];
        g.d[r] = b.d; g.dmin[r] = b.dmin;
        for (int s = 0; s < 8; ++s) { int sc, m; k_scale_min(b.scales, s, sc, m); g.scales[s][r] = sc; g.mins[s][r] = m; }
        for (int c = 0; c < 16; ++c) for (int j = 0; j < 8; ++j) g.qs[c][8 * r + j] = q_of(b, 16 * c + j) | (q_of(b, 16 * c + 8 + j) << 4);
    }
}
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma"), noinline))
void dot8(const Group* g, const BlockQ8_K* a, const int32_t* bsum_pairs, float* out) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < NB; ++b, ++g) {
        _mm_prefetch(reinterpret_cast<const char*>(g + 4), _MM_HINT_T0);
        const int8_t* aq = a[b].qs;
        __m512i isum = _mm512_setzero_si512();
        for (int s = 0; s < 8; ++s) {
            __m512i sub = _mm512_setzero_si512();
#pragma GCC unroll 2
            for (int c = 2 * s; c < 2 * s + 2; ++c) {
                const __m512i raw = _mm512_loadu_si512(g->qs[c]);
                const __m512i lo = _mm512_and_si512(raw, low4), hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
                long long a_lo8, a_hi8; std::memcpy(&a_lo8, aq + 16 * c, 8); std::memcpy(&a_hi8, aq + 16 * c + 8, 8);
                const __m512i alo = _mm512_set1_epi64(a_lo8);  // int32 lane 2r: bytes 0-3, lane 2r+1: bytes 4-7
                const __m512i ahi = _mm512_set1_epi64(a_hi8);
                sub = _mm512_dpbusd_epi32(sub, lo, alo);
                sub = _mm512_dpbusd_epi32(sub, hi, ahi);
            }
            const __m128i s8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(g->scales[s]));
            const __m512i sc = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(s8, s8));  // lanes 2r, 2r+1: row r's scale
            isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(sub, sc));
        }
        const __m256i rows = _mm512_cvtepi64_epi32(_mm512_add_epi32(isum, _mm512_srli_epi64(isum, 32)));
        __m256i m = _mm256_setzero_si256();
        for (int s = 0; s < 8; ++s)
            m = _mm256_add_epi32(m, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g->mins[s]))), _mm256_set1_epi32(bsum_pairs[8 * b + s])));
        const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g->d))), _mm256_set1_ps(a[b].d));
        const __m256 dm = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g->dmin))), _mm256_set1_ps(a[b].d));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(rows), d, acc);
        acc = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m), dm, acc);
    }
    _mm256_storeu_ps(out, acc);
}
int main() {
    std::mt19937 rng(1); std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> w(size_t(ROWS) * K), x(K);
    for (auto& v : w) v = u(rng);
    for (auto& v : x) v = u(rng);
    std::vector<BlockQ4_K> q(size_t(ROWS) * NB);
    for (int r = 0; r < ROWS; ++r) quantize_row(DType::Q4_K, w.data() + size_t(r) * K, q.data() + size_t(r) * NB, K);
    const auto& table = cpu_kernels::quant_dot();
    std::vector<BlockQ8_K> act(NB);
    table.quantize_activations(DType::Q4_K, x.data(), act.data(), K);
    std::vector<int32_t> bsp(NB * 8);
    for (int b = 0; b < NB; ++b) for (int s = 0; s < 8; ++s) bsp[8 * b + s] = act[b].bsums[2 * s] + act[b].bsums[2 * s + 1];
    std::vector<Group> groups(size_t(ROWS / 8) * NB);
    for (int g = 0; g < ROWS / 8; ++g) for (int b = 0; b < NB; ++b) {
        const BlockQ4_K* r8[8]; for (int r = 0; r < 8; ++r) r8[r] = &q[size_t(8 * g + r) * NB + b];
        repack(r8, groups[size_t(g) * NB + b]);
    }
    std::vector<float> ref(ROWS), got(ROWS);
    const auto dot = table.dot[int(DType::Q4_K)];
    double best_ref = 1e9, best_new = 1e9;
    for (int it = 0; it < 30; ++it) {
        double t0 = now();
        for (int r = 0; r < ROWS; ++r) dot(K, q.data() + size_t(r) * NB, act.data(), 0, 1, &ref[r]);
        double t1 = now();
        for (int g = 0; g < ROWS / 8; ++g) dot8(groups.data() + size_t(g) * NB, act.data(), bsp.data(), &got[8 * g]);
        double t2 = now();
        best_ref = std::min(best_ref, t1 - t0); best_new = std::min(best_new, t2 - t1);
    }
    double maxrel = 0; for (int r = 0; r < ROWS; ++r) maxrel = std::max(maxrel, std::fabs(double(got[r]) - ref[r]) / (std::fabs(ref[r]) + 1e-3));
    double bytes = double(ROWS) * NB * sizeof(BlockQ4_K);
    printf("per-row dot %.1f us (%.1f GB/s), 8-row interleaved %.1f us (%.1f GB/s of the plain bytes), %.2fx; max rel diff %.2e (row0 %g vs %g)\n",
           best_ref * 1e6, bytes / best_ref / 1e9, best_new * 1e6, bytes / best_new / 1e9, best_ref / best_new, maxrel, got[0], ref[0]);
}
