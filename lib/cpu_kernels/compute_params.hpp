// What a CPU kernel is given besides its node: its share of the threads, a barrier, scratch
// memory, and a place to report an error found in the data (an index out of range).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "core/status.hpp"

namespace xb::cpu_kernels {

// Shared by the threads that compute one graph; implemented by the CPU backend.
class ThreadTeam {
public:
    virtual ~ThreadTeam() = default;
    // Blocks until every thread of the team has reached it.
    virtual void barrier() = 0;
    // Records an error found while computing node `node_index` (first error wins; thread-safe).
    virtual void report(Status error, int node_index) = 0;
};

// Kernels split their scratch into pieces of whole 64-byte lines, and ask for kWorkAlign bytes
// more than those pieces so that the first aligned byte of any buffer leaves room for them all.
inline constexpr size_t kWorkAlign = 64;
constexpr size_t work_align_up(size_t n) { return (n + kWorkAlign - 1) / kWorkAlign * kWorkAlign; }

struct ComputeParams {
    int ith = 0;  // this thread's index, 0 <= ith < nth
    int nth = 1;  // threads computing the node; every one of them calls the kernel
    // Scratch shared by all threads of the node, at least kernel_work_size(node, nth) bytes,
    // 64-byte aligned; kernels split it per thread themselves.
    std::span<std::byte> work;
    ThreadTeam* team = nullptr;
    int node_index = 0;  // position of the node in its graph, for error reports

    void barrier() const {
        if (nth > 1) team->barrier();
    }
    void report(Status error) const { team->report(std::move(error), node_index); }
    // The first kWorkAlign-aligned byte of work (the buffer is aligned already; a smaller
    // guarantee would still work).
    std::byte* aligned_work() const {
        const auto misalign = reinterpret_cast<uintptr_t>(work.data()) % kWorkAlign;
        return work.data() + (misalign == 0 ? 0 : kWorkAlign - misalign);
    }

    // The range [begin, end) of n items that this thread handles (contiguous, balanced).
    struct Range {
        int64_t begin;
        int64_t end;
    };
    Range split(int64_t n) const {
        const int64_t per = (n + nth - 1) / nth;
        const int64_t b = per * ith < n ? per * ith : n;
        const int64_t e = b + per < n ? b + per : n;
        return {b, e};
    }
};

// Units of work handed out a range at a time to whichever thread asks next, where
// ComputeParams::split would give each thread one fixed share. A thread slowed by its core (a busy
// hyperthread sibling, a VM neighbour, an efficiency core) then takes fewer ranges, instead of the
// others waiting for it at the node's end. The counter lives in kSlotBytes of the node's shared
// scratch: thread 0 calls reset() before a barrier that every thread passes before it
// calls for_each().
class WorkQueue {
public:
    // About this many ranges per thread: enough to even out threads of unequal speed, few enough
    // that each range is a long run of weight rows for the memory prefetchers (16 runs of 256 rows
    // for a 4096-row product on 2 threads). On the 2-vCPU test VM, 256-row runs were at least as
    // fast as 64-row ones, and 16-row runs lost to fixed halves on q4_K.
    static constexpr int64_t kRangesPerThread = 8;
    // The scratch a kernel sets aside for the counter (at the front of its layout).
    static constexpr size_t kSlotBytes = kWorkAlign;

    explicit WorkQueue(std::byte* slot) : next_(*reinterpret_cast<int64_t*>(slot)) {}
    void reset() { next_.store(0, std::memory_order_relaxed); }
    // Calls each_unit(u) for every unit u in [0, units) that this thread takes (`nth` threads share
    // them), a range at a time.
    template <typename Fn>
    void for_each(int64_t units, int nth, Fn&& each_unit) {
        const int64_t per = std::max<int64_t>(1, units / (kRangesPerThread * std::max(nth, 1)));
        for (;;) {
            const int64_t begin = next_.fetch_add(1, std::memory_order_relaxed) * per;
            if (begin >= units) return;
            for (int64_t u = begin; u < std::min(units, begin + per); ++u) each_unit(u);
        }
    }

private:
    std::atomic_ref<int64_t> next_;
};

}  // namespace xb::cpu_kernels
