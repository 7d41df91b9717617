// Scheduler: runs one graph across several backends (ggml_backend_sched).
//
// Backends are given in priority order, the CPU last. Each node is assigned a backend in five
// passes (pre-allocated tensors and weights; expansion of GPU assignments down and up, then of
// all; upgrade to higher-priority backends sharing a buffer type; sources from their consumers),
// the graph is cut into splits at every backend change, and every split input that lives where
// the split's backend cannot read it gets a copy there, made once per split. Intermediate tensors
// are placed by a GraphAllocator with one compute buffer per backend. With n_copies > 1, graph
// inputs and split inputs rotate over n_copies buffers and backends synchronise with events, so
// consecutive computes overlap across backends (pipeline parallelism). The copy slot advances at
// each alloc_graph, since the split nodes read the slot they were allocated with: an engine that
// allocates per evaluation (as llama.cpp does) pipelines; computing one allocation again reuses its
// slot, after the events say the previous compute is done with it.
//
// The scheduler rewrites the sources of split nodes to point at the copies while a graph is
// allocated; reset() (and the destructor) restore them, so the same graph can be scheduled again.
// Contract: a scheduled graph (the Graph and its tensors) must outlive the scheduler, or reset()
// must be called before either is destroyed: the scheduler keeps per-tensor state by the graph's
// dense indices (Graph::ref_of) until then.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "alloc/graph_allocator.hpp"
#include "backend/backend.hpp"
#include "core/context.hpp"
#include "core/graph.hpp"
#include "core/pointer_map.hpp"
#include "core/status.hpp"
#include "sched/backend_id.hpp"
#include "sched/sched_report.hpp"

namespace xb {

struct SchedulerOptions {
    int n_copies = 1;         // > 1: pipeline parallelism with this many input copies
    bool op_offload = true;   // let a higher-priority backend take ops whose weights are on the CPU
    bool profile = false;     // time copies and computes per split (synchronises between them)
    int debug = 0;            // 1: print splits after each split_graph, 2: also every node
};

// Called for each node the scheduler is about to compute (ask = true: "do you want to see this
// node's result?") and, for the nodes answered yes, after it is computed (ask = false; return
// false to stop the computation).
using SchedEvalCallback = std::function<bool(Tensor& node, bool ask)>;

class Scheduler {
public:
    // The most backends one scheduler takes (as ggml's GGML_SCHED_MAX_BACKENDS).
    static constexpr int kMaxBackends = 16;

    // `bufts[i]` (optional, may be empty or contain nullptr) overrides backend i's buffer type.
    static Result<std::unique_ptr<Scheduler>> create(std::vector<Backend*> backends, std::vector<BufferType*> bufts = {},
                                                     SchedulerOptions options = {});
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // Splits `graph` and sizes the compute buffers for it (the largest graph to come).
    Status reserve(Graph& graph);
    // Splits and allocates `graph`; it can then be computed (inputs set first).
    Status alloc_graph(Graph& graph);
    // alloc_graph when needed, then compute; the _async form may return before backends finish.
    Status graph_compute(Graph& graph);
    Status graph_compute_async(Graph& graph);
    void synchronize();
    // Forgets assignments (user ones included) and restores the last graph's sources.
    void reset();

    void set_eval_callback(SchedEvalCallback callback) { eval_callback_ = std::move(callback); }

    int n_backends() const { return static_cast<int>(backends_.size()); }
    Backend& backend(int i) const { return *backends_.at(static_cast<size_t>(i)); }
    int n_splits() const { return static_cast<int>(splits_.size()); }
    int n_copies() const { return options_.n_copies; }
    // Bytes of `backend`'s compute buffer (0 for a backend that is not part of the scheduler).
    size_t buffer_size(const Backend& backend) const;

    // Pins `node` to `backend` until reset(); InvalidArgument for a backend not in the scheduler.
    Status set_tensor_backend(const Tensor& node, Backend& backend);
    // The backend assigned to `t` by the last split (or by the user), nullptr when none.
    Backend* tensor_backend(const Tensor& t) const;

    // Splits, inputs, copies and reasons of the last split_graph (and timings in profile mode).
    // Built on first request after each split, so that scheduling itself stays cheap.
    const SchedReport& report();

    // A node source that the last split pointed at a copy in the node's backend:
    // node->src[slot] is the copy, `original` the tensor it copies.
    struct SourceRewrite {
        Tensor* node;
        int slot;
        Tensor* original;
    };
    // Every such rewrite, in graph order; valid until reset() (which restores the sources).
    std::span<const SourceRewrite> source_rewrites() const { return rewrites_; }

private:
    struct Split {
        BackendId backend;
        int begin = 0;  // node range [begin, end) of the graph
        int end = 0;
        std::vector<Tensor*> inputs;  // tensors of other backends that this split's nodes read
        Graph graph;                  // view of the nodes [begin, end)
    };

    Scheduler(std::vector<Backend*> backends, std::vector<BufferType*> bufts, SchedulerOptions options);

    // --- backends by id ---
    Backend& backend_at(BackendId b) const { return *backends_[b.index()]; }
    BufferType* buft_at(BackendId b) const { return bufts_[b.index()]; }
    // The last backend: the CPU.
    BackendId cpu_id() const { return BackendId(n_backends() - 1); }
    // The id of `b`, or none when it is not one of the scheduler's backends.
    BackendId id_of_backend(const Backend& b) const;

    // A set of backends, bit b for backend b: those that read a buffer type (Device::supports_buft).
    using Readers = uint16_t;
    static bool reads(Readers readers, BackendId b) { return ((readers >> b.index()) & 1u) != 0; }

    // What the passes need to know of a tensor, gathered once when it gets its slot, so that they
    // walk these small records instead of the tensors (large, and scattered over memory).
    struct SlotFacts {
        int32_t view_src = -1;       // slot of t.view_src
        Readers buffer_readers = 0;  // of t.buffer when the scheduler does not place t (else none)
        Readers fixed_readers = 0;   // of the buffer t's bytes live in when fixed
        bool fixed = false;          // t's bytes live in a buffer the scheduler does not place
        int8_t n_src = 0;            // a node's sources are src[0, n_src) (some null)
        bool weight = false;         // t.buffer holds weights
        bool input = false;          // a graph input (Tensor::is_input)
        bool view_op = false;        // a view op: never computed, never split on
    };
    SlotFacts facts_of(const Tensor& t);
    const SlotFacts& facts(int slot) const { return facts_[static_cast<size_t>(slot)]; }

    // --- per-tensor state, by slot: the graph's tensors by their dense index (GraphRef::dense),
    // then the tensors outside it that the passes meet (a view's source held elsewhere) ---
    int slot_of(const Tensor* t) {
        const GraphRef r = current_graph_->ref_of(t);
        return r.in_graph() ? static_cast<int>(r.dense(*current_graph_)) : outside_slot(t);
    }
    int outside_slot(const Tensor* t);
    // slot_of without adding a slot: -1 for a tensor the last split did not meet.
    int find_slot(const Tensor* t) const;
    void add_slot(const Tensor* t);
    // A backend the user set for the tensor in `slot` (set_tensor_backend), applied to its state.
    void apply_user_assignment(int slot);
    BackendId& backend_of(const Tensor* t) { return backend_of_[static_cast<size_t>(slot_of(t))]; }
    // The slot of node i's source j (-1 where it has none): the passes index per-tensor state by
    // it instead of looking each source up (src_slots_, filled when a split starts).
    int src_slot(int node, int j) const { return src_slots_[static_cast<size_t>(node) * kMaxSrc + static_cast<size_t>(j)]; }
    // Node i of the graph being split (a node's slot is its index).
    BackendId node_backend(int i) const { return backend_of_[static_cast<size_t>(i)]; }
    void assign(const Tensor* t, BackendId backend, AssignReason why) { assign_slot(slot_of(t), backend, why); }
    void assign_slot(int slot, BackendId backend, AssignReason why);
    Tensor*& copy_of(int slot, BackendId backend, int copy);

    // --- what backends support, asked once per split (sched_assign.cpp) ---
    // Whether backend b computes `op`, the tensor in `slot` (Device::supports_op).
    bool computes(int slot, const Tensor& op, BackendId b);
    // The backends that read buffers of type buft, asked once per buffer type and split.
    Readers readers_of(const BufferType& buft);

    // --- assignment passes (sched_assign.cpp) ---
    Status assign_backends(const Graph& graph);
    Result<BackendId> backend_from_current(const Tensor& t, int slot, AssignReason& why);
    // The highest-priority backend among `readers` that computes `op` (in op_slot).
    BackendId backend_from_buffer(Readers readers, int op_slot, const Tensor& op);
    // Whether backend b can use the tensor in `slot` where it is (its fixed buffer, or the buffer
    // type of its assignment or its view source's).
    bool buffer_supported(int slot, BackendId backend) const;
    // Pass 2 spreads GPU assignments first (the CPU's do not spread), then all of them, each
    // down the node order and then up.
    enum class Spread { GpuOnly, All };
    enum class Direction { Down, Up };
    void expand(const Graph& graph, Spread spread, Direction direction);
    void upgrade_or_pick(const Graph& graph);
    void assign_remaining_sources(const Graph& graph);

    // --- splitting (sched_split.cpp) ---
    Status split_graph(Graph& graph);
    void cut_splits(const Graph& graph);
    bool needs_new_split(int index, const Split& split, BackendId cur_backend);
    void add_split_input(Tensor& node, int j, int slot, Split& split);
    void add_graph_input_copies(Tensor& input, BackendId backend);
    Tensor* make_copy(const Tensor& src, BackendId backend, int copy);
    void build_alloc_graph(const Graph& graph);
    void restore_sources();

    // --- execution (sched_compute.cpp) ---
    Status alloc_splits();
    Status compute_splits();
    Status copy_split_inputs(const Split& split, SplitReport& report);
    Status copy_split_input(const Split& split, Tensor& input, Tensor& copy);
    void profile_split_input(const Split& split, const Tensor& input, const Tensor& copy, double seconds,
                             SplitInputReport& report);
    Status compute_split(const Split& split);
    // Waits for every backend; the first error their queued work met (take_async_error).
    Status synchronize_and_collect();
    Event* event(BackendId backend, int copy) const;

    void build_report(const Graph& graph);

    std::vector<Backend*> backends_;
    std::vector<BufferType*> bufts_;
    SchedulerOptions options_;
    std::unique_ptr<GraphAllocator> galloc_;
    std::vector<std::vector<std::unique_ptr<Event>>> events_;  // [backend][copy]; null where unsupported

    // Per-tensor state of the current graph, by slot.
    PointerMap outside_slots_;  // tensors outside the graph -> their slot
    std::vector<const Tensor*> tensors_;
    std::vector<BackendId> backend_of_;
    std::vector<AssignReason> reason_of_;
    std::vector<SlotFacts> facts_;
    std::vector<int32_t> src_slots_;  // [node][j]
    // Per slot: bit b set once backend b was asked about the op, bit kMaxBackends + b its answer.
    std::vector<uint32_t> op_support_;
    // The readers of each buffer type met in this split, and of each backend's own buffer type.
    std::vector<std::pair<const BufferType*, Readers>> buft_readers_;
    std::vector<Readers> buft_readers_by_backend_;
    std::vector<Tensor*> copies_;  // [slot][backend][copy]
    PointerMap user_assignments_;  // tensor -> BackendId value, until reset

    std::unique_ptr<Context> copy_ctx_;  // the copies of split inputs
    std::vector<Split> splits_;
    std::vector<Tensor*> graph_inputs_;  // user inputs rotated over n_copies
    std::vector<SourceRewrite> rewrites_;

    // The graph handed to the allocator: split inputs' copies added, with backend ids.
    Graph alloc_graph_;
    std::vector<int> alloc_node_ids_;
    std::vector<int> alloc_leaf_ids_;
    std::vector<int> prev_node_ids_;
    std::vector<int> prev_leaf_ids_;

    std::vector<size_t> copy_bytes_;  // [src backend][dst backend], last compute
    Graph* current_graph_ = nullptr;
    bool is_alloc_ = false;
    int cur_copy_ = 0;   // the copy slot the allocated split graph reads
    int next_copy_ = 0;  // the slot the next alloc_graph takes
    SchedEvalCallback eval_callback_;
    SchedReport report_;
    bool report_stale_ = true;
};

}  // namespace xb
