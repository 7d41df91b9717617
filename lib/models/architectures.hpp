// The llama.cpp architectures xbackend builds graphs for (general.architecture), one file each
// (models/arch_<name>.cpp), registered in one table (models/architectures.cpp). An architecture
// reads its own hyperparameters from a file's metadata, names its layers' tensors and builds its
// layers from the shared steps (models/layer_graph.hpp); build_model does the rest every
// architecture shares: the inputs, the token embedding, the caches, the final norm and the output
// projection. docs/models.md, "Adding an architecture", walks through one.
//
//   llama      Llama 1/2/3, Mistral, Mixtral (experts), SmolLM: normal-mode rope
//   qwen2      Qwen2/2.5: q/k/v biases, neox rope
//   qwen3      Qwen3: per-head Q/K norms
//   qwen3moe   Qwen3-MoE: Qwen3 with experts
//   gemma2     Gemma 2: scaled embeddings, post-norms, GeGLU, soft-capped scores and logits,
//              sliding window on every other layer
//   gemma3     Gemma 3: Q/K norms, post-norms, GeGLU, 5 sliding layers in 6
//   phi3       Phi-3/3.5/4-mini: fused QKV and gate/up, long/short rope factors
//   gpt-oss    gpt-oss: experts with biases and clamped SwiGLU, attention sinks, sliding window
//   deepseek2  DeepSeek V2/V3/R1, Kimi K2: latent attention, leading dense layers, shared experts,
//              sigmoid routing with a selection bias within expert groups, YaRN
//   lfm2       LFM2: a hybrid of gated short convolutions (a recurrent state each) and attention
//              layers with Q/K norms
//   qwen35     Qwen3.5: a hybrid of gated delta nets (convolution and delta-rule states) and
//              full attention with a sigmoid output gate, every 4th layer
//   qwen35moe  Qwen3.5-MoE: qwen35 with experts beside a sigmoid-gated shared expert
//   qwen3next  Qwen3-Next: qwen35moe's layers from fused beta/alpha (and older files' fused q/k/v/z)
//              projections, value heads grouped by key head
//   nemotron_h Nemotron-H, Nemotron Nano 2: Mamba-2 layers, attention layers without rope and
//              relu² FFN layers, each alone between residual adds
//   nemotron_h_moe  Nemotron 3 Nano: nemotron_h with ungated relu² experts (sigmoid routing with a
//              selection bias) beside an ungated shared expert in place of the FFN layers
//   granitehybrid  Granite 4.0-H: a hybrid of Mamba-2 layers (convolution and scan states) and
//              attention without rope; dense or expert FFNs with a shared expert; Granite's
//              multipliers
#pragma once

#include <string>
#include <string_view>

#include "core/context.hpp"
#include "core/status.hpp"
#include "models/decoder.hpp"
#include "models/decoder_weights.hpp"
#include "models/gguf_metadata.hpp"
#include "models/layer_graph.hpp"

namespace xb {

struct Architecture {
    std::string_view name;  // general.architecture, also the prefix of its metadata keys
    RopeMode rope_mode = RopeMode::Neox;
    GluOp ffn_glu = GluOp::SwiGlu;  // the feed-forward network's activation (LayerGraph::ffn)
    // Reads the architecture's own hyperparameters into `p`, which holds the shared ones already
    // (models/gguf_model.cpp); the prefix "<name>." of its keys is `a`.
    Status (*read_hparams)(const GgufMetadata& md, const std::string& a, DecoderParams& p) = nullptr;
    // Names layer make.layer()'s tensors, with their shapes, into `w`.
    void (*layer_weights)(decoder::LayerWeightMaker& make, LayerWeights& w) = nullptr;
    // Builds layer g.il of the graph: its input x [n_embd, n_tokens] -> its output (l_out).
    Tensor* (*layer)(const decoder::LayerGraph& g, Tensor* x) = nullptr;
    bool output_bias = false;  // output.bias where the file holds one (some Phi-3 files)
    std::string_view output_norm = "output_norm.weight";  // the final norm's weight (LFM2's is token_embd_norm)
    // Its layers may be recurrent (DecoderParams::recurrent): a file's per-layer head_count_kv
    // with zeros is refused by the others.
    bool hybrid = false;
};

// The entry of `name`, or nullptr when it is not supported.
const Architecture* find_architecture(std::string_view name);
// The supported names, for messages: "llama, qwen2, ...".
std::string supported_architectures();
// Llama's entry: the llama_decoder config's and the benchmarks' synthetic decoder.
const Architecture& llama_architecture();

// Layer il's weights as `arch` names them, made by `make`.
LayerWeights make_layer_weights(const Architecture& arch, decoder::WeightMaker& make, int il);

// Builds the model's tensors and graph in ctx (metadata only: allocate and fill separately), its
// layers by `arch`, its weights' types and optional tensors from `source`.
Result<Decoder> build_model(Context& ctx, const Architecture& arch, const DecoderParams& params,
                            const decoder::WeightSource& source = {});

}  // namespace xb
