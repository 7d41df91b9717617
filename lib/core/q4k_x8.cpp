#include "core/q4k_x8.hpp"

#include <cstring>

#include "core/dtype.hpp"

namespace xb {

namespace {

constexpr uint64_t kLowNibbles = 0x0F0F0F0F0F0F0F0Full;

uint64_t load8(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
void store8(uint8_t* p, uint64_t v) { std::memcpy(p, &v, sizeof v); }

// The nibbles move 8 at a time in 64-bit words. A row's 16 bytes at 32j + 16h (64-value group j,
// half h) hold values 64j + 16h + p (low nibbles) and 64j + 32 + 16h + p (high), p < 16; chunk
// c = 4j + h of a group holds values 16c + p of each row, and chunk c + 2 the values 32 further.
// first/next: the row's bytes 32j + 16h + [0, 8) and + [8, 16); x/y: its 8 bytes of chunks c, c + 2.
void rows_to_chunks(uint64_t first, uint64_t next, uint64_t& x, uint64_t& y) {
    x = (first & kLowNibbles) | ((next & kLowNibbles) << 4);
    y = ((first >> 4) & kLowNibbles) | (next & ~kLowNibbles);
}
void chunks_to_rows(uint64_t x, uint64_t y, uint64_t& first, uint64_t& next) {
    first = (x & kLowNibbles) | ((y & kLowNibbles) << 4);
    next = ((x >> 4) & kLowNibbles) | (y & ~kLowNibbles);
}

}  // namespace

void k_pack_scales_mins(const uint8_t (&scales)[8], const uint8_t (&mins)[8], uint8_t (&packed)[12]) {
    for (int j = 0; j < 4; ++j) {
        packed[j] = static_cast<uint8_t>((scales[j] & 63) | ((scales[j + 4] >> 4) << 6));
        packed[j + 4] = static_cast<uint8_t>((mins[j] & 63) | ((mins[j + 4] >> 4) << 6));
        packed[j + 8] = static_cast<uint8_t>((scales[j + 4] & 0x0F) | ((mins[j + 4] & 0x0F) << 4));
    }
}

void interleave_q4_K_x8(const BlockQ4_K* const (&rows)[kQ4KRowsPerGroup], BlockQ4_Kx8& out) {
    for (int r = 0; r < kQ4KRowsPerGroup; ++r) {
        const BlockQ4_K& b = *rows[r];
        out.d[r] = b.d;
        out.dmin[r] = b.dmin;
        uint8_t values[16];  // the 8 scales, then the 8 mins
        for (int s = 0; s < 8; ++s) {
            int scale = 0;
            int min = 0;
            k_scale_min(b.scales, s, scale, min);
            values[s] = static_cast<uint8_t>(scale);
            values[8 + s] = static_cast<uint8_t>(min);
        }
        for (int s = 0; s < 8; ++s) out.low[s][r] = static_cast<uint8_t>((values[s] & 0x0F) | ((values[8 + s] & 0x0F) << 4));
        for (int j = 0; j < 4; ++j) {
            uint8_t top = 0;
            for (int t = 0; t < 4; ++t) top = static_cast<uint8_t>(top | ((values[4 * j + t] >> 4) << (2 * t)));
            out.high[j][r] = top;
        }
        for (int j = 0; j < 4; ++j) {
            for (int h = 0; h < 2; ++h) {
                uint64_t x = 0;
                uint64_t y = 0;
                rows_to_chunks(load8(b.qs + 32 * j + 16 * h), load8(b.qs + 32 * j + 16 * h + 8), x, y);
                store8(out.qs[4 * j + h] + 8 * r, x);
                store8(out.qs[4 * j + h + 2] + 8 * r, y);
            }
        }
    }
}

void deinterleave_q4_K_x8(const BlockQ4_Kx8& group, BlockQ4_K* const (&rows)[kQ4KRowsPerGroup]) {
    for (int r = 0; r < kQ4KRowsPerGroup; ++r) {
        BlockQ4_K& b = *rows[r];
        b.d = group.d[r];
        b.dmin = group.dmin[r];
        uint8_t scales[8];
        uint8_t mins[8];
        for (int s = 0; s < 8; ++s) {
            scales[s] = static_cast<uint8_t>(q4_K_x8_scales(group, s) >> (8 * r));
            mins[s] = static_cast<uint8_t>(q4_K_x8_mins(group, s) >> (8 * r));
        }
        k_pack_scales_mins(scales, mins, b.scales);
        for (int j = 0; j < 4; ++j) {
            for (int h = 0; h < 2; ++h) {
                uint64_t first = 0;
                uint64_t next = 0;
                chunks_to_rows(load8(group.qs[4 * j + h] + 8 * r), load8(group.qs[4 * j + h + 2] + 8 * r), first, next);
                store8(b.qs + 32 * j + 16 * h, first);
                store8(b.qs + 32 * j + 16 * h + 8, next);
            }
        }
    }
}

void dot_q4_K_x8_reference(int64_t n, const BlockQ4_Kx8* groups, const BlockQ8_K* activations, float* out) {
    float acc[kQ4KRowsPerGroup] = {};
    for (int64_t b = 0; b < n / kQKK; ++b) {
        const BlockQ4_Kx8& g = groups[b];
        const BlockQ8_K& a = activations[b];
        int32_t sums[kQ4KRowsPerGroup] = {};
        int32_t mins[kQ4KRowsPerGroup] = {};
        for (int s = 0; s < 8; ++s) {
            const int32_t bsum = a.bsums[2 * s] + a.bsums[2 * s + 1];
            const uint64_t scales = q4_K_x8_scales(g, s);
            const uint64_t row_mins = q4_K_x8_mins(g, s);
            for (int r = 0; r < kQ4KRowsPerGroup; ++r) {
                int32_t sub = 0;
                for (int v = 32 * s; v < 32 * s + 32; ++v) {
                    const uint8_t byte = g.qs[v / 16][8 * r + v % 8];
                    sub += (v % 16 < 8 ? byte & 0x0F : byte >> 4) * a.qs[v];
                }
                sums[r] += sub * static_cast<int32_t>((scales >> (8 * r)) & 0xFF);
                mins[r] += bsum * static_cast<int32_t>((row_mins >> (8 * r)) & 0xFF);
            }
        }
        for (int r = 0; r < kQ4KRowsPerGroup; ++r) {
            acc[r] += f16_to_f32(g.d[r]) * a.d * static_cast<float>(sums[r]);
            acc[r] -= f16_to_f32(g.dmin[r]) * a.d * static_cast<float>(mins[r]);
        }
    }
    for (int r = 0; r < kQ4KRowsPerGroup; ++r) out[r] = acc[r];
}

void interleave_q4_K_rows(const BlockQ4_K* src, int64_t n_rows, int64_t n, BlockQ4_Kx8* dst) {
    const int64_t blocks = n / kQKK;
    for (int64_t g = 0; g < n_rows / kQ4KRowsPerGroup; ++g) {
        for (int64_t b = 0; b < blocks; ++b) {
            const BlockQ4_K* rows[kQ4KRowsPerGroup];
            for (int r = 0; r < kQ4KRowsPerGroup; ++r) rows[r] = src + (g * kQ4KRowsPerGroup + r) * blocks + b;
            interleave_q4_K_x8(rows, dst[g * blocks + b]);
        }
    }
}

void deinterleave_q4_K_rows(const BlockQ4_Kx8* src, int64_t n_rows, int64_t n, BlockQ4_K* dst) {
    const int64_t blocks = n / kQKK;
    for (int64_t g = 0; g < n_rows / kQ4KRowsPerGroup; ++g) {
        for (int64_t b = 0; b < blocks; ++b) {
            BlockQ4_K* rows[kQ4KRowsPerGroup];
            for (int r = 0; r < kQ4KRowsPerGroup; ++r) rows[r] = dst + (g * kQ4KRowsPerGroup + r) * blocks + b;
            deinterleave_q4_K_x8(src[g * blocks + b], rows);
        }
    }
}

}  // namespace xb
