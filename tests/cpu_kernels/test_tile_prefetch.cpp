// The packed products' fetch-ahead (cpu_kernels/tile_prefetch.hpp): the tiles of a chunk, between
// them, ask for every line of the next chunk's rows, each once, spread over their steps.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "cpu_kernels/tile_prefetch.hpp"

namespace xb::cpu_kernels {
namespace {

// Records each address asked for and the step it was asked at.
struct Recorder {
    std::vector<const std::byte*>* addresses;
    void operator()(const std::byte* address) const { addresses->push_back(address); }
};

// Runs `calls` tiles of `steps` steps over `region`, each given its share; the addresses asked for,
// and per tile how many.
std::vector<const std::byte*> walk(const TilePrefetch& region, int64_t calls, int64_t steps, std::vector<size_t>* per_call) {
    std::vector<const std::byte*> addresses;
    for (int64_t call = 0; call < calls; ++call) {
        const size_t before = addresses.size();
        SpreadPrefetch<Recorder> prefetch(region.share(call, calls), steps, Recorder{&addresses});
        for (int64_t s = 0; s < steps; ++s) prefetch.step();
        if (per_call != nullptr) per_call->push_back(addresses.size() - before);
    }
    return addresses;
}

// Each line of each row, counted: every byte of every row must lie on a line asked for.
void expect_every_line_once(const std::vector<const std::byte*>& addresses, const TilePrefetch& region, int64_t rows) {
    std::map<uintptr_t, int> lines;  // line number -> times asked
    for (const std::byte* a : addresses) ++lines[reinterpret_cast<uintptr_t>(a) / 64];
    for (int64_t r = 0; r < rows; ++r) {
        const std::byte* row = region.first_row + static_cast<size_t>(r) * region.stride;
        for (size_t b = 0; b < region.row_bytes; ++b) {
            const auto line = reinterpret_cast<uintptr_t>(row + b) / 64;
            ASSERT_GE(lines[line], 1) << "row " << r << " byte " << b << " never asked for";
        }
        EXPECT_LT(reinterpret_cast<uintptr_t>(row + region.row_bytes - 1) / 64 - reinterpret_cast<uintptr_t>(row) / 64,
                  static_cast<uintptr_t>(TilePrefetch::lines_per_row(region.row_bytes)));
    }
    for (const std::byte* a : addresses) {
        const auto at = static_cast<size_t>(a - region.first_row);
        EXPECT_LT(at % region.stride, region.row_bytes) << "an address outside the rows";
        EXPECT_LT(at / region.stride, static_cast<size_t>(rows));
    }
    EXPECT_EQ(static_cast<int64_t>(addresses.size()), region.count) << "every line once";
}

TEST(TilePrefetch, TheTilesOfAChunkAskForEveryLineOfItsRows) {
    alignas(64) static std::byte memory[8 * 4096];
    // Rows off a line boundary, of a length that is no whole number of lines.
    for (size_t offset : {size_t{0}, size_t{6}, size_t{62}}) {
        TilePrefetch region;
        region.first_row = memory + offset;
        region.stride = 4096;
        region.row_bytes = 1366 * 2;
        const int64_t rows = 7;
        region.count = rows * TilePrefetch::lines_per_row(region.row_bytes);
        std::vector<size_t> per_call;
        const auto addresses = walk(region, 5, 683, &per_call);
        expect_every_line_once(addresses, region, rows);
        for (size_t n : per_call) EXPECT_NEAR(static_cast<double>(n), static_cast<double>(region.count) / 5, 1.0) << "an even share";
    }
}

TEST(TilePrefetch, MoreLinesThanStepsAreAllAskedFor) {
    alignas(64) static std::byte memory[16 * 1024];
    TilePrefetch region;
    region.first_row = memory;
    region.stride = 1024;
    region.row_bytes = 1000;
    region.count = 16 * TilePrefetch::lines_per_row(region.row_bytes);  // 272 lines
    expect_every_line_once(walk(region, 2, 10, nullptr), region, 16);  // 20 steps in all
}

TEST(TilePrefetch, EmptyRegionAsksForNothing) {
    std::vector<const std::byte*> addresses;
    SpreadPrefetch<Recorder> prefetch(TilePrefetch{}, 100, Recorder{&addresses});
    for (int s = 0; s < 100; ++s) prefetch.step();
    EXPECT_TRUE(addresses.empty());
}

}  // namespace
}  // namespace xb::cpu_kernels
