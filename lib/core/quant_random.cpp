#include "core/quant_random.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "core/quant.hpp"
#include "core/quant_block_types.hpp"
#include "core/status.hpp"

namespace xb {

namespace {

// Where a type keeps its f16 super-block scale(s), which scale every value of the block linearly.
struct ScaleFields {
    int d = -1;     // byte offset of d
    int dmin = -1;  // byte offset of a second f16 scale (the minima's), or -1
};

template <typename Block>
constexpr ScaleFields scale_at() {
    if constexpr (requires { Block::dmin; }) {
        return {static_cast<int>(offsetof(Block, d)), static_cast<int>(offsetof(Block, dmin))};
    } else if constexpr (requires { Block::m; }) {
        return {static_cast<int>(offsetof(Block, d)), static_cast<int>(offsetof(Block, m))};
    } else {
        return {static_cast<int>(offsetof(Block, d)), -1};
    }
}

// The formats whose scale is one f16 `d` (and minima's `dmin` or `m`); q8_K's is f32, iq1_m's is
// spread over its scale words, mxfp4's and nvfp4's are 8-bit.
ScaleFields scale_fields(DType type) {
    return with_block_type(
        type,
        []<typename Block>(BlockTag<Block>) {
            if constexpr (requires { Block::d; } && !std::is_same_v<Block, BlockQ8_K> && !std::is_same_v<Block, BlockNVFP4>) {
                return scale_at<Block>();
            } else {
                return ScaleFields{};
            }
        },
        ScaleFields{});
}

void put_f16(std::byte* p, float v) {
    const uint16_t bits = f32_to_f16(v);
    std::memcpy(p, &bits, sizeof bits);
}

// iq1_m's f16 scale lives in the top nibbles of its four scale words (bytes 48..55).
void put_iq1_m_scale(std::byte* block, float v) {
    const uint16_t bits = f32_to_f16(v);
    for (int i = 0; i < 4; ++i) {
        uint16_t w;
        std::memcpy(&w, block + 48 + 2 * i, sizeof w);
        w = static_cast<uint16_t>((w & 0x0FFF) | (((bits >> (4 * i)) & 0x0F) << 12));
        std::memcpy(block + 48 + 2 * i, &w, sizeof w);
    }
}

// Sets the block's scale to `v`; false for the types whose scales are not one f16 (q8_K, mxfp4, nvfp4).
bool set_scale(DType type, std::byte* block, float v) {
    if (type == DType::IQ1_M) {
        put_iq1_m_scale(block, v);
        return true;
    }
    const ScaleFields f = scale_fields(type);
    if (f.d < 0) return false;
    put_f16(block + f.d, v);
    if (f.dmin >= 0) put_f16(block + f.dmin, v);
    return true;
}

}  // namespace

void fill_random_blocks(DType type, void* dst, int64_t nblocks, uint64_t seed) {
    XB_CHECK_MSG(is_quantized(type), "fill_random_blocks: not a quantized type");
    std::mt19937_64 rng(seed);
    const size_t size = type_size(type);
    const auto elems = static_cast<size_t>(blck_size(type));
    auto* out = static_cast<std::byte*>(dst);
    std::vector<float> values(elems);
    std::uniform_real_distribution<float> target(0.25f, 1.0f);
    for (int64_t b = 0; b < nblocks; ++b) {
        std::byte* block = out + static_cast<size_t>(b) * size;
        for (size_t i = 0; i < size; i += 8) {
            const uint64_t r = rng();
            std::memcpy(block + i, &r, std::min<size_t>(8, size - i));
        }
        if (type == DType::MXFP4) {
            block[0] = static_cast<std::byte>(122 + rng() % 3);  // 2^(e-128) * 12: 0.19 .. 0.75
            continue;
        }
        if (type == DType::NVFP4) {
            for (int s = 0; s < 4; ++s) block[s] = static_cast<std::byte>(0x18 + rng() % 16);  // 0.75 .. 2.6 / 12
            continue;
        }
        if (type == DType::Q8_K) {
            const float d = target(rng) / 127;
            std::memcpy(block, &d, sizeof d);
            continue;
        }
        // Scale 1, then down so that the largest value of the block is about target.
        if (!set_scale(type, block, 1.0f)) continue;
        dequantize_row(type, block, values.data(), static_cast<int64_t>(elems));
        float amax = 0.0f;
        for (float v : values) amax = std::max(amax, std::fabs(v));
        set_scale(type, block, amax > 0.0f ? target(rng) / amax : 1.0f);
    }
}

}  // namespace xb
