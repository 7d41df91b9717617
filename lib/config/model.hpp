// A config turned into a ready graph: tensors created, the graph built from its outputs, each
// weight's device chosen, and the initial values of weights and inputs described.
//
//   auto spec = xb::config::load_config("configs/mlp.json");        // Result<ConfigSpec>
//   auto model = xb::config::build_model(*spec, {});                  // Result<Model>
//   auto backends = xb::config::init_backends(model->placement);      // in priority order
//   xb::config::place_and_init(*model, pointers_to(backends));         // weights on their devices
//   ... Scheduler::create(..., model->placement.scheduler); assign_nodes(*model, *sched);
//   sched->alloc_graph(model->graph); model->set_inputs(); sched->graph_compute(model->graph);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/buffer.hpp"
#include "backend/registry.hpp"
#include "config/config_spec.hpp"
#include "core/context.hpp"
#include "core/graph.hpp"
#include "core/status.hpp"
#include "sched/scheduler.hpp"

namespace xb::config {

// What the tools may change in a config from the command line.
struct BuildOptions {
    // Replaces placement.backends when not empty (--backends SIM0,CPU). Weight and node rules that
    // name a device left out are then dropped, with a note.
    std::vector<std::string> backends;
    // Every mention of the first device in the config means the second (--map CUDA0=SIM0).
    std::vector<std::pair<std::string, std::string>> device_map;
    // Replaces the config's seed.
    std::optional<uint64_t> seed;
    // Replaces placement.host_weights (--host-weights pinned|pageable).
    std::optional<HostWeights> host_weights;
    // Replaces a model builder's "outputs" (--outputs): the positions whose logits are computed,
    // 0 every one, N the batch's last N.
    std::optional<int> outputs;
    // Replaces a llama.cpp model's tokens (--tokens): the batch becomes these ids (n_tokens their
    // count); the config's n_kv must hold them. InvalidArgument for the synthetic builders.
    std::optional<std::vector<int32_t>> tokens;
    // Replaces a llama.cpp model's kv_cells (--kv-cells): its cache of N cells, the ones past its
    // positions empty and masked, as llama.cpp pads its cache to 256. InvalidArgument when N cannot
    // hold the positions, or for the synthetic builders.
    std::optional<int> kv_cells;
    // A model builder's outputs when neither `outputs` nor the config says: 0, every position
    // (backend-compare); graph-run and sched-profile take 1, the last, as llama-bench measures.
    int default_outputs = 0;
};

struct TensorInit {
    Tensor* tensor;
    InitSpec init;
};

struct WeightPlacement {
    Tensor* tensor;
    std::string device;
    bool row_split = false;  // its rows shared by ModelPlacement::row_split's devices (`device` is the first)
};

struct NodePlacement {
    Tensor* node;
    std::string device;
};

struct ModelPlacement {
    std::vector<std::string> backends;     // device names as the registry spells them, priority order
    std::vector<WeightPlacement> weights;  // every weight of the graph and its device
    std::vector<NodePlacement> nodes;      // per-node overrides (Scheduler::set_tensor_backend)
    SchedulerOptions scheduler;            // n_copies and op_offload from the config
    // A row split (placement.split with mode row): its devices, the main one first, and ratios.
    struct RowSplit {
        std::vector<std::string> devices;
        std::vector<double> ratios;
    };
    std::optional<RowSplit> row_split;
    // The device whose pinned host buffer type holds the weights placed on CPU-type devices and the
    // CPU's compute buffer (scheduler_buffer_types): the first of `backends` that has one, unless
    // host_weights is pageable; empty: the CPU's own memory.
    std::string host_buffer_device;

    // The device of a weight ("" when t is not one).
    std::string device_of(const Tensor& t) const;
};

// Where a llama.cpp model's batch sits in its KV cache: the inputs that follow the batch (its
// positions and the cells it writes, arange inits; the causal masks, causal_mask inits), the
// cache's cells and the batch's first position. A graph without a cache has no cells.
struct CachePlace {
    Tensor* tokens = nullptr;  // the batch's token ids, i32 [n_tokens] (set_tokens)
    std::vector<Tensor*> inputs;
    int n_cells = 0;
    int first = 0;
};

// What set_inputs does with a hybrid model's recurrent states.
enum class RecurrentStates {
    Empty,  // zeros: the compute starts a sequence (every timed repetition of a batch)
    Kept,   // as the last compute left them: the compute continues the sequence (decoding token by token)
};

class Model {
public:
    std::string name;
    std::string source;  // the config file
    uint64_t seed = 0;
    std::unique_ptr<Context> ctx;
    Graph graph;
    std::vector<Tensor*> inputs;   // set before every compute (set_inputs)
    std::vector<Tensor*> outputs;  // marked outputs, in the config's order
    std::vector<Tensor*> weights;  // live in weights buffers on their devices
    // A hybrid model's recurrent states (weights the graph reads at its start and writes back at its
    // end): set_inputs empties them unless told to keep them, so that every compute starts from an
    // empty state as each of llama-bench's repetitions does (a KV cache needs no such reset: a
    // compute rewrites the same cells).
    std::vector<Tensor*> states;
    CachePlace cache_place;
    int64_t n_tokens = 1;          // tokens (or batch rows) per compute, for throughput
    // A llama.cpp model's batch as given (config "tokens" or --tokens); empty when its ids are drawn
    // at random (and for the other builders).
    std::vector<int32_t> tokens;
    int n_layers = 0;              // layers of a model builder (offload_layers counts them); 0 otherwise
    // A llama.cpp model file's type as llama.cpp names it ("Q4_K - Medium", models/file_type.hpp);
    // empty for the other graphs.
    std::string file_type;
    double matmul_flops = 0;       // flops of the graph's mul_mat and flash_attn_ext nodes
    std::vector<TensorInit> inits; // how every weight and input is initialised
    ModelPlacement placement;
    std::vector<std::string> notes;  // things worth telling the user (unused tensors, dropped rules)

    // Filled by place_and_init. The row split's buffer type outlives the buffers made of it.
    std::unique_ptr<BufferType> row_split_type;
    std::vector<std::unique_ptr<MultiBuffer>> weight_buffers;
    std::vector<std::pair<Tensor*, std::vector<std::byte>>> input_values;

    // A weight, input, output or named op result; nullptr when there is none.
    Tensor* find(std::string_view tensor_name) const;
    // Writes the input values into the inputs and empties or keeps the recurrent states (after the
    // graph is allocated).
    Status set_inputs(RecurrentStates states = RecurrentStates::Empty);
    // Moves the batch to start at position `first` of the cache: the positions, masks and cells
    // written are recomputed (set_inputs writes them), the rest of the graph unchanged, so that one
    // graph decodes a sequence token after token. InvalidArgument when the model has no cache or
    // the batch would run past its cells. After place_and_init.
    Status move_batch(int first);
    // Replaces the batch's token ids (set_inputs writes them): InvalidArgument when the model has no
    // token input or `ids` is not n_tokens long.
    Status set_tokens(std::span<const int32_t> ids);

    std::unordered_map<std::string, Tensor*> by_name;

private:
    // The values set_inputs writes into input t; nullptr when t has none.
    std::vector<std::byte>* input_bytes(const Tensor* t);
};

// Builds the model's tensors and graph, and resolves its placement against `registry`: a device
// that is not present is NotFound, with the devices that are and how to map one.
Result<Model> build_model(const ConfigSpec& spec, const Registry& registry, const BuildOptions& options = {});

// Flops of the mul_mat and flash_attn_ext nodes of a graph (2 per multiply-add).
double graph_matmul_flops(const Graph& graph);

}  // namespace xb::config
