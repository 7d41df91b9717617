// GraphAllocator: places every intermediate tensor of a graph in one compute buffer per buffer
// type, reusing memory as soon as a tensor is dead (ggml_gallocr).
//
// Planning walks the nodes in execution order. A node is given memory just before it is
// computed; a tensor's memory returns to the free list after its last consumer (and the last
// consumer of its views). An op that can work in place takes over its parent's memory when the
// parent has no other consumer, no views, the same layout, and is not a graph input, output or
// leaf. Graph inputs, outputs and leafs are never freed nor reused, so computing an allocated graph
// twice gives the same results. Tensors that already have data (weights) are left alone, except
// those this allocator placed last time: they are planned again even when the buffer they were
// in has since been replaced.
//
// reserve() plans and (re)allocates the buffers; alloc_graph() assigns addresses from the plan,
// planning again only when the graph changed (node or leaf count, topology, or a tensor that needs
// more bytes than planned). Errors are statuses; nothing aborts.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <vector>

#include "alloc/free_block_allocator.hpp"
#include "backend/buffer.hpp"
#include "backend/buffer_type.hpp"
#include "core/graph.hpp"
#include "core/pointer_map.hpp"
#include "core/status.hpp"

namespace xb {

class GraphAllocator {
public:
    // One allocator per buffer type; the same type may appear several times (one buffer serves
    // all its appearances). Buffer types must outlive the allocator.
    explicit GraphAllocator(std::vector<BufferType*> bufts);
    explicit GraphAllocator(BufferType& buft) : GraphAllocator(std::vector<BufferType*>{&buft}) {}
    ~GraphAllocator();

    // Plans `graph` and makes sure every buffer is large enough (never shrinking it).
    // node_buffer_ids[i] / leaf_buffer_ids[i] pick the buffer type of node / leaf i (default 0).
    Status reserve(const Graph& graph, std::span<const int> node_buffer_ids = {},
                   std::span<const int> leaf_buffer_ids = {});
    // Gives every unallocated tensor of `graph` its address. Plans again automatically when the
    // graph changed and there is a single buffer type; with several, the caller must reserve.
    Status alloc_graph(const Graph& graph);

    int n_buffers() const { return static_cast<int>(bufts_.size()); }
    // Size of buffer i (0 when i shares the buffer of an earlier index with the same type).
    size_t buffer_size(int i) const;
    // The buffer behind buffer type i (nullptr before the first reserve).
    Buffer* buffer(int i) const { return buffers_[static_cast<size_t>(allocator_of_[static_cast<size_t>(i)])].get(); }
    // t's memory is in one of this allocator's buffers (placed by an earlier alloc_graph).
    bool owns(const Tensor& t) const;
    // True when the last alloc_graph had to plan again.
    bool last_alloc_replanned() const { return last_alloc_replanned_; }

private:
    // Where one tensor goes: a planner (buffer) and an offset; planner -1 when the tensor is not
    // placed by this allocator (it has data already, is a view, or is absent).
    struct Placement {
        int planner = -1;
        size_t offset = 0;
        size_t size_max = 0;  // bytes planned for it
    };
    // A node's placement and which graph entry each source is, so that a new graph can be checked
    // against the plan without hashing (see needs_replan). A source in the graph has the plan of
    // its own entry; those outside it are in outside_src_plans_, in node and source order. (Kept
    // small: the check streams every node's plan on each alloc_graph.)
    struct NodePlan {
        Placement dst;
        std::array<GraphRef, kMaxSrc> src_ref;
        GraphRef view_ref;  // the same for view_src
        uint32_t flags = 0;
    };
    class Planner;

    Status check_buffer_ids(const Graph& graph, std::span<const int> node_ids, std::span<const int> leaf_ids) const;
    void record_plan(const Graph& graph, Planner& planner);
    bool needs_replan(const Graph& graph) const;
    bool placement_fits(const Tensor* t, const Placement& p) const;
    Status allocate_buffers();
    Status place(Tensor& t, const Placement& p);
    Status place_all(const Graph& graph);
    // The planner of buffer type ids[i] (0 when no ids are given).
    int planner_of(std::span<const int> ids, size_t i) const { return allocator_of_[ids.empty() ? 0 : static_cast<size_t>(ids[i])]; }
    // t still has the address the last alloc_graph gave it, in a buffer that may be gone since.
    bool placed_last_time(const Tensor& t) const;
    // t has memory that this allocator must leave alone (weights, user buffers).
    bool is_preallocated(const Tensor& t) const { return t.data != nullptr && !owns(t) && !placed_last_time(t); }

    std::vector<BufferType*> bufts_;
    std::vector<int> allocator_of_;                  // buffer type index -> planner index (one per distinct type)
    std::vector<FreeBlockAllocator> planners_;
    std::vector<BufferType*> planner_bufts_;
    std::vector<std::unique_ptr<Buffer>> buffers_;   // one per planner

    std::vector<NodePlan> node_plans_;
    std::vector<Placement> leaf_plans_;
    std::vector<Placement> outside_src_plans_;
    bool last_alloc_replanned_ = false;

    // What place() gave each tensor (not views) in the last alloc_graph. A replaced buffer leaves
    // its tensors with stale addresses: without this they would pass for preallocated ones (data
    // set, buffer not ours) and keep pointing at freed memory. Buffer and address must both still
    // match, so a tensor that has been given other memory since is not taken for ours.
    class Addresses {
    public:
        void record(const Tensor& t);                  // t's current buffer and data
        bool still_has(const Tensor& t) const;         // t has the buffer and data recorded for it
        void add_missing(const Addresses& older);      // entries of `older` for tensors not in this
        void clear();

    private:
        PointerMap index_;  // tensor -> entry
        std::vector<std::pair<const Buffer*, const void*>> entries_;
        std::vector<const Tensor*> tensors_;
    };
    Addresses placed_;
    Addresses placing_;  // being filled by the current alloc_graph
};

}  // namespace xb
