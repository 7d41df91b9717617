#include "cpu_kernels/quant_tiles.hpp"

#include <array>
#include <cstring>

#include "core/isa.hpp"
#include "core/quant_blocks.hpp"
#include "cpu_kernels/compute_params.hpp"
#include "cpu_kernels/quant_dot.hpp"

namespace xb::cpu_kernels {

namespace {

// The arrays of a panel of k values, in order: q, scale, offset, iscale, ibias, imin, super_scale,
// super_min.
std::array<size_t, 8> panel_arrays(int64_t k) {
    const auto values = static_cast<size_t>(k), groups = values / kTileGroup, supers = (values + kQKK - 1) / kQKK;
    const size_t rows = kTileRows;
    return {values * rows,     groups * rows * 4,     groups * rows * 4,     groups * rows * 4,
            groups / 2 * rows * 4, groups / 2 * rows * 4, supers * rows * 4, supers * rows * 4};
}

}  // namespace

size_t TilePanel::bytes(int64_t k) {
    size_t total = 0;
    for (const size_t b : panel_arrays(k)) total += work_align_up(b);
    return total;
}

TilePanel TilePanel::at(std::byte* memory, int64_t k) {
    const std::array<size_t, 8> sizes = panel_arrays(k);
    std::array<std::byte*, 8> starts{};
    for (size_t i = 0; i < sizes.size(); ++i) {
        starts[i] = memory;
        memory += work_align_up(sizes[i]);
    }
    TilePanel p;
    p.q = reinterpret_cast<uint8_t*>(starts[0]);
    p.scale = reinterpret_cast<float*>(starts[1]);
    p.offset = reinterpret_cast<float*>(starts[2]);
    p.iscale = reinterpret_cast<int16_t*>(starts[3]);
    p.ibias = reinterpret_cast<int16_t*>(starts[4]);
    p.imin = reinterpret_cast<int16_t*>(starts[5]);
    p.super_scale = reinterpret_cast<float*>(starts[6]);
    p.super_min = reinterpret_cast<float*>(starts[7]);
    return p;
}

namespace {

int64_t padded_columns(int64_t columns) { return (columns + kTileColumns - 1) / kTileColumns * kTileColumns; }

}  // namespace

size_t TileColumns::bytes(int64_t k, int64_t columns, int64_t batches) {
    const auto n = static_cast<size_t>(padded_columns(columns) * batches), groups = static_cast<size_t>(k / kTileGroup);
    return work_align_up(static_cast<size_t>(k) * n) + 3 * work_align_up(groups * n * 4) + 3 * work_align_up(groups / 2 * n * 4);
}

TileColumns TileColumns::at(std::byte* memory, int64_t k, int64_t columns, int64_t batches, DType weights) {
    TileColumns c;
    c.k = k;
    c.format = activation_format(weights);
    c.columns = columns;
    c.batch_columns = padded_columns(columns);
    const auto n = static_cast<size_t>(c.batch_columns * batches), groups = static_cast<size_t>(k / kTileGroup);
    const auto take = [&memory](size_t bytes) {
        std::byte* start = memory;
        memory += work_align_up(bytes);
        return start;
    };
    c.q = reinterpret_cast<int8_t*>(take(static_cast<size_t>(k) * n));
    c.d = reinterpret_cast<float*>(take(groups * n * 4));
    c.minus_sum128 = reinterpret_cast<int32_t*>(take(groups * n * 4));
    c.dsum = reinterpret_cast<float*>(take(groups * n * 4));
    c.pair_minus_sum128 = reinterpret_cast<int32_t*>(take(groups / 2 * n * 4));
    c.pair_dsum = reinterpret_cast<float*>(take(groups / 2 * n * 4));
    c.pair_sums16 = reinterpret_cast<uint32_t*>(take(groups / 2 * n * 4));
    return c;
}

void TileColumns::set_column(int64_t row, const void* blocks) const {
    const int64_t c = column(row / columns, row % columns);
    if (row % columns == columns - 1) clear_padding(c + 1, column(row / columns, batch_columns));
    const auto set_group = [&](int64_t g, float step, const int8_t* values, int sum) {
        const int64_t i = at(g, c);
        for (int v = 0; v < kTileGroup; ++v) q[i * kTileGroup + v] = values[v];
        d[i] = step;
        minus_sum128[i] = -128 * sum;
        dsum[i] = step * static_cast<float>(sum);
        if (g % 2 == 1) {
            const int64_t first = at(g - 1, c), pair = pair_at(g / 2, c);
            pair_minus_sum128[pair] = minus_sum128[first] + minus_sum128[i];
            pair_dsum[pair] = dsum[first] + dsum[i];
            // Groups g - 1 and g's sums of q, each at most 16 x 127 in magnitude: int16s.
            const auto low = static_cast<uint16_t>(static_cast<int16_t>(minus_sum128[first] / -128));
            const auto high = static_cast<uint16_t>(static_cast<int16_t>(sum));
            pair_sums16[pair] = static_cast<uint32_t>(low) | static_cast<uint32_t>(high) << 16;
        }
    };
    if (format == ActFormat::Q8K) {
        const auto* b = static_cast<const BlockQ8_K*>(blocks);
        for (int64_t g = 0; g < groups(); ++g) {
            const BlockQ8_K& block = b[g / (kQKK / kTileGroup)];
            const int64_t in = g % (kQKK / kTileGroup);
            set_group(g, block.d, block.qs + in * kTileGroup, block.bsums[in]);
        }
        return;
    }
    const auto* b = static_cast<const BlockQ8Sum*>(blocks);
    for (int64_t g = 0; g < groups(); ++g) {
        const BlockQ8Sum& block = b[g / (kQK / kTileGroup)];
        const int8_t* values = block.qs + (g % (kQK / kTileGroup)) * kTileGroup;
        int sum = 0;
        for (int v = 0; v < kTileGroup; ++v) sum += values[v];
        set_group(g, block.d, values, sum);
    }
}

void TileColumns::clear_padding(int64_t begin, int64_t end) const {
    for (int64_t c = begin; c < end; ++c) {
        for (int64_t g = 0; g < groups(); ++g) {
            const int64_t i = at(g, c);
            std::memset(q + i * kTileGroup, 0, kTileGroup);
            d[i] = dsum[i] = 0.0f;
            minus_sum128[i] = 0;
            if (g % 2 == 1) {
                pair_minus_sum128[pair_at(g / 2, c)] = 0;
                pair_dsum[pair_at(g / 2, c)] = 0.0f;
                pair_sums16[pair_at(g / 2, c)] = 0;
            }
        }
    }
}

bool tiles_avx512_supported() { return isa_supported(Isa::Avx512) && __builtin_cpu_supports("avx512vnni"); }

const QuantTiles* quant_tiles() {
    static const QuantTiles* table = []() -> const QuantTiles* {
        if (active_isa() == Isa::Avx512 && tiles_avx512_supported()) return &quant_tiles_avx512();
        if (active_isa() != Isa::Scalar) return &quant_tiles_avx2();
        return nullptr;
    }();
    return table;
}

}  // namespace xb::cpu_kernels
