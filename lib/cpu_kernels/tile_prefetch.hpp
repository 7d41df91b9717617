// The packed products' fetch-ahead of the weights: while a tile multiplies one chunk of packed
// rows, it asks for the rows of the next chunk (kernels_matmul_packed.cpp).
//
// No ISA-specific instruction here, always inlined: the instruction-set files of the tiles share it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace xb::cpu_kernels {

// The lines a tile asks for from memory while it runs, one every few of its steps along K: the
// packed product's next chunk of a (kernels_matmul_packed.cpp). A chunk of weight rows packed
// straight from memory waits out its misses with nothing to overlap them (a cold chunk packed 2.3x
// slower than a warm one), so the chunk after is fetched during this chunk's arithmetic, spread
// evenly over its tiles: a burst of requests would fill the miss buffers and stall the tile.
//
// The region: rows of `row_bytes` bytes, `stride` bytes apart from `first_row`; each row counts
// lines_per_row(row_bytes) lines, as many as a row of that length can touch at any alignment (the
// line of every 64th byte from its first line's start, and of its last byte). A tile fetches lines
// [first_line, first_line + count) of the region in row order (a whole region: count = its rows
// times lines_per_row). count 0: nothing.
struct TilePrefetch {
    const std::byte* first_row = nullptr;
    size_t stride = 0;
    size_t row_bytes = 0;
    int64_t first_line = 0;
    int64_t count = 0;
    static constexpr int64_t lines_per_row(size_t row_bytes) { return static_cast<int64_t>(row_bytes / 64) + 2; }
    // Of this region's lines, the even share of the call-th of `calls` tiles.
    TilePrefetch share(int64_t call, int64_t calls) const {
        TilePrefetch part = *this;
        part.first_line = first_line + count * call / calls;
        part.count = count * (call + 1) / calls - count * call / calls;
        return part;
    }
};

// A request for the line at an address into L2 (measured alike with L1 on Zen 4, and the tile's
// panels keep the L1). Prefetching never faults.
struct PrefetchIntoL2 {
    [[gnu::always_inline]] void operator()(const std::byte* address) const { __builtin_prefetch(address, 0, 2); }
};

// Walks a TilePrefetch over a tile's `steps` steps along K: step() asks for the next line every
// steps / count steps (or, with more lines than steps, for count / steps of them, rounded up, at
// every step), so the requests are spread over the whole tile. Fetch makes the request (tests
// record the addresses instead).
template <class Fetch = PrefetchIntoL2>
class SpreadPrefetch {
public:
    [[gnu::always_inline]] SpreadPrefetch(const TilePrefetch& ahead, int64_t steps, Fetch fetch = {})
        : fetch_(fetch), left_(ahead.row_bytes > 0 ? ahead.count : 0) {
        if (left_ <= 0) return;
        every_ = std::max<int64_t>(1, steps / left_);
        per_step_ = steps > 0 ? (left_ + steps - 1) / steps : left_;
        until_ = every_;
        const int64_t per_row = TilePrefetch::lines_per_row(ahead.row_bytes);
        row_ = ahead.first_row + static_cast<size_t>(ahead.first_line / per_row) * ahead.stride;
        line_in_row_ = ahead.first_line % per_row;
        per_row_ = per_row;
        stride_ = ahead.stride;
        last_ = ahead.row_bytes - 1;
    }
    [[gnu::always_inline]] void step() {
        if (--until_ != 0) return;
        until_ = every_;
        for (int64_t i = 0; i < per_step_ && left_ > 0; ++i) next_line();
    }

private:
    [[gnu::always_inline]] void next_line() {
        --left_;
        // The row's line_in_row_-th line counted from the line of its first byte, by an address
        // inside the row (the first byte for the first line, the last byte for any past the end).
        const size_t lead = reinterpret_cast<uintptr_t>(row_) % 64;  // the row's offset in its first line
        const size_t offset = std::clamp(static_cast<size_t>(line_in_row_) * 64, lead, last_ + lead) - lead;
        fetch_(row_ + (line_in_row_ + 1 < per_row_ ? offset : last_));
        if (++line_in_row_ == per_row_) {
            line_in_row_ = 0;
            row_ += stride_;
        }
    }

    Fetch fetch_;
    int64_t left_;
    int64_t every_ = 0;
    int64_t per_step_ = 0;
    int64_t until_ = 0;
    const std::byte* row_ = nullptr;
    int64_t line_in_row_ = 0;
    int64_t per_row_ = 1;
    size_t stride_ = 0;
    size_t last_ = 0;
};

}  // namespace xb::cpu_kernels
