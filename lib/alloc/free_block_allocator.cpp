#include "alloc/free_block_allocator.hpp"

#include <algorithm>
#include <cstdint>

#include "core/status.hpp"

namespace xb {

namespace {
// The tail block is "unbounded"; half of SIZE_MAX keeps offset + size from overflowing.
constexpr size_t kTailSize = SIZE_MAX / 2;
}  // namespace

FreeBlockAllocator::FreeBlockAllocator(size_t alignment) : alignment_(alignment) {
    XB_CHECK_MSG(alignment > 0 && (alignment & (alignment - 1)) == 0, "alignment must be a power of two");
    reset();
}

void FreeBlockAllocator::reset() {
    blocks_.assign(1, Block{0, kTailSize});
    peak_ = 0;
}

size_t FreeBlockAllocator::alloc(size_t size) {
    size = aligned(size);
    // Best fit among the bounded blocks; the tail only when none fits, so the peak grows last.
    size_t best = blocks_.size() - 1;
    size_t best_size = SIZE_MAX;
    for (size_t i = 0; i + 1 < blocks_.size(); ++i) {
        if (blocks_[i].size >= size && blocks_[i].size < best_size) {
            best = i;
            best_size = blocks_[i].size;
        }
    }
    Block& block = blocks_[best];
    XB_CHECK_MSG(block.size >= size, "the planning buffer's tail is exhausted");
    const size_t offset = block.offset;
    block.offset += size;
    block.size -= size;
    if (block.size == 0) blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
    peak_ = std::max(peak_, offset + size);
    return offset;
}

void FreeBlockAllocator::free(size_t offset, size_t size) {
    size = aligned(size);
    // First block that starts after the freed range; the freed range goes just before it.
    auto next = std::upper_bound(blocks_.begin(), blocks_.end(), offset,
                                 [](size_t off, const Block& b) { return off < b.offset; });
    const bool joins_next = next != blocks_.end() && offset + size == next->offset;
    const bool joins_prev = next != blocks_.begin() && std::prev(next)->offset + std::prev(next)->size == offset;
    if (joins_prev && joins_next) {
        std::prev(next)->size += size + next->size;
        blocks_.erase(next);
    } else if (joins_prev) {
        std::prev(next)->size += size;
    } else if (joins_next) {
        next->offset = offset;
        next->size += size;
    } else {
        blocks_.insert(next, Block{offset, size});
    }
}

}  // namespace xb
