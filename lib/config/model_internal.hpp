// The parts of build_model, one file each (internal to lib/config).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config/config_spec.hpp"
#include "config/model.hpp"
#include "core/context.hpp"

namespace xb::config::detail {

// Where a model builder's weight sits, for offload_layers.
enum class WeightGroup {
    Layer,        // a repeated layer's weight (layer >= 0)
    InputLayer,   // the token embedding: stays on the CPU, as in llama.cpp
    OutputLayer,  // the final norm and projection: offloaded when offload_layers > n_layers
    Other,
};

struct Leaf {
    Tensor* tensor = nullptr;
    Role role = Role::Weight;  // Weight or Input
    InitSpec init;             // resolved: the config's, a default, or the builder's
    int layer = -1;
    WeightGroup group = WeightGroup::Other;
};

struct BuiltGraph {
    std::vector<Leaf> leaves;
    std::vector<Tensor*> graph_outputs;  // what the graph is built from, in order
    std::vector<Tensor*> outputs;        // the marked outputs
    std::vector<std::pair<std::string, Tensor*>> results;  // named op results (explicit graphs)
    std::vector<std::pair<std::string, std::string>> op_paths;  // op name -> JSON path, for notes
    std::vector<Tensor*> states;         // recurrent states (Model::states), among the leaves
    CachePlace cache_place;              // a llama.cpp model's inputs that follow its batch (Model::cache_place)
    int n_layers = 0;
    int64_t n_tokens = 1;
    std::string file_type;               // a llama.cpp model file's type (Model::file_type)
};

Result<BuiltGraph> build_explicit_graph(const ConfigSpec& spec, Context& ctx);
Result<BuiltGraph> build_model_builder(const ConfigSpec& spec, const BuildOptions& options, Context& ctx);

// Backends, each weight's device and the node overrides; devices are checked against the registry.
// `weights` are the builder's weights that the graph uses.
Result<ModelPlacement> resolve_placement(const ConfigSpec& spec, const Registry& registry, const BuildOptions& options,
                                         const BuiltGraph& built,
                                         const Graph& graph, const std::vector<Tensor*>& weights,
                                         std::vector<std::string>& notes);

std::string shape_text(const std::array<int64_t, kMaxDims>& ne);

}  // namespace xb::config::detail
