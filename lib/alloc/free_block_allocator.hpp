// FreeBlockAllocator: offsets inside one (virtual) buffer, for the graph allocator's planning
// (ggml's dyn_tallocr). Free memory is a list of blocks sorted by offset; allocation takes the
// best-fitting block, preferring any block to the unbounded tail; freeing merges neighbours.
// The list grows as needed: there is no cap on the number of free blocks.
#pragma once

#include <cstddef>
#include <vector>

namespace xb {

class FreeBlockAllocator {
public:
    explicit FreeBlockAllocator(size_t alignment);

    // Offset of a new block of `size` bytes (rounded up to the alignment).
    size_t alloc(size_t size);
    // Returns the block [offset, offset + size) (size rounded as in alloc).
    void free(size_t offset, size_t size);
    // Forgets every allocation and the peak.
    void reset();

    // The highest end offset ever allocated since reset: the buffer size the plan needs.
    size_t peak() const { return peak_; }
    size_t alignment() const { return alignment_; }
    size_t free_block_count() const { return blocks_.size(); }

private:
    struct Block {
        size_t offset;
        size_t size;
    };
    size_t aligned(size_t size) const { return (size + alignment_ - 1) / alignment_ * alignment_; }

    size_t alignment_;
    std::vector<Block> blocks_;  // sorted by offset; the last one is the unbounded tail
    size_t peak_ = 0;
};

}  // namespace xb
