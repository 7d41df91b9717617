// ConfigSpec: a JSON config parsed into plain data (no tensors yet). Every value keeps the JSON
// pointer it came from so that errors found later (when the graph is built or a file is read)
// still name the place in the config. The format is described in the README ("Configs") and by
// configs/schema.json.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "models/attention.hpp"
#include "config/expr.hpp"
#include "models/gguf_model.hpp"
#include "models/decoder.hpp"
#include "models/mlp.hpp"
#include "core/dtype.hpp"

namespace xb::config {

enum class InitKind {
    Uniform,     // [min, max): reals for float tensors, integers for integer tensors
    Normal,      // mean, std
    Constant,    // value
    Arange,      // start, start + step, ... in logical (C) order
    CausalMask,  // 0 where key j <= query i (queries are the last rows), -inf elsewhere;
                 // with a window w also -inf where i - j >= w (sliding-window attention)
    Npy,         // file
    Gguf,        // file, tensor (default: the config tensor's own name)
    Values,      // values: one number per element, in logical (C) order
};
const char* init_kind_name(InitKind kind);

struct InitSpec {
    InitKind kind = InitKind::Constant;
    double min = -1.0, max = 1.0;
    double mean = 0.0, std = 1.0;
    double value = 0.0;
    double start = 0.0, step = 1.0;
    double window = 0.0; // causal_mask: the sliding window in positions; 0: none
    int64_t filled = 0;  // causal_mask: positions the keys hold, the rest of ne0 empty cells (a padded cache); 0: all
    std::string file;    // resolved against the config's directory
    std::string tensor;  // gguf: the tensor's name in the file; "" for the config tensor's name
    std::vector<double> values;
    std::string path;    // JSON pointer of the init object
};

enum class Role {
    Weight,        // lives in a weights buffer on its device; initialised once
    Input,         // set before every compute
    Output,        // the result of the op of that name, marked as a graph output
    Intermediate,  // the result of the op of that name (its shape and type are checked)
};
const char* role_name(Role role);

struct TensorSpec {
    std::string name;  // for model builders also a glob pattern ("blk.*.attn_norm")
    std::optional<DType> type;
    std::optional<std::vector<int64_t>> shape;  // innermost dim first, as ggml; up to 4 dims
    Role role = Role::Weight;
    bool role_given = false;
    std::optional<InitSpec> init;
    std::string path;  // "/tensors/<name>"
};

// An op parameter as written (numbers already evaluated from expressions).
struct ParamValue {
    std::variant<double, bool, std::string, std::vector<double>> value;
    std::string path;
};
using OpParams = std::map<std::string, ParamValue, std::less<>>;

struct OpArg {
    std::string name;  // a tensor or an earlier op; "" for null (an absent optional argument)
    std::string path;
};

struct OpSpec {
    std::string name;
    std::string op;  // as written: an op of op_table.hpp
    std::vector<OpArg> args;
    OpParams params;
    bool output = false;
    std::string path;  // "/graph/<i>"
};

enum class ModelKind { Mlp, Attention, LlamaDecoder, Gguf };
const char* model_kind_name(ModelKind kind);

struct ModelSpec {
    ModelKind kind = ModelKind::Mlp;
    MlpParams mlp;
    AttentionParams attention;
    DecoderParams llama;
    GgufModelParams gguf;
    // llama_decoder and gguf: "outputs", the positions whose logits are computed (DecoderParams::
    // n_outputs: 0 every position, N the last N); unset: every position, or the tool's default
    // (graph-run computes the last, as llama-bench measures).
    std::optional<int> n_outputs;
    std::string path;  // "/graph"
};

struct DeviceRule {
    std::string pattern;  // weight or node name: a glob, or with `regex` a regular expression
    std::string device;
    std::string path;     // JSON pointer of the rule, or the command-line option that made it
    bool regex = false;   // "regex": found anywhere in the name (ECMAScript), as llama.cpp's -ot

    // Whether the rule's pattern matches `name` (a regex is checked when the rule is parsed).
    bool matches(std::string_view name) const;
    // Where a message about the pattern points: the JSON pointer's "pattern" or "regex" member.
    std::string pattern_path() const;
    // Why `pattern` is not a regular expression ("missing ')'"), or nothing when it is one.
    static std::optional<std::string> regex_problem(const std::string& pattern);
};

// Several devices sharing a model builder's layers (llama.cpp's --split-mode layer|row, --tensor-split).
struct SplitSpec {
    enum class Mode { Layer, Row };
    Mode mode = Mode::Layer;           // layer: consecutive layers per device; row: each matrix's rows
    std::vector<std::string> devices;  // each one of placement.backends
    std::vector<double> ratios;        // one per device, non-negative, positive sum (default all 1)
    std::string path = "/placement/split";
};

// Where the weights that stay on the host live when a device with a pinned host buffer type takes
// part (placement.host_weights).
enum class HostWeights {
    Pinned,    // that device's host buffer type (llama.cpp's choice): fast, asynchronous uploads
    Pageable,  // the CPU's own buffers (llama.cpp's --no-host): no page-locked memory taken
};

struct PlacementSpec {
    std::vector<std::string> backends = {"CPU"};  // priority order
    std::string backends_path = "/placement/backends";
    std::vector<DeviceRule> weights;              // first match wins
    std::optional<int> offload_layers;            // model builders: the last N layers on the first GPU
    std::string offload_path;                     // (or on the split's devices)
    std::optional<SplitSpec> split;
    std::vector<DeviceRule> nodes;                // per-node overrides for the scheduler
    int n_copies = 1;
    bool op_offload = true;
    HostWeights host_weights = HostWeights::Pinned;
};

struct ConfigSpec {
    std::string source;    // the file name, for messages
    std::string base_dir;  // files named by the config are relative to it
    std::string name;
    uint64_t seed = 0;
    DType default_type = DType::F32;
    std::optional<InitSpec> default_init;  // for weights without one
    ParamList params;
    std::vector<TensorSpec> tensors;
    std::vector<OpSpec> ops;          // an explicit graph ...
    std::optional<ModelSpec> model;   // ... or a model builder
    PlacementSpec placement;

    const TensorSpec* find_tensor(std::string_view name) const;
    std::optional<double> param(std::string_view name) const;
};

}  // namespace xb::config
