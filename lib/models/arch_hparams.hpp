// Hyperparameter readers several architectures share (models/arch_<name>.cpp): their experts,
// their sliding window, Gemma's common settings. `a` is the prefix "<architecture>." of the keys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.hpp"
#include "models/decoder.hpp"
#include "models/gguf_metadata.hpp"

namespace xb::arch {

// NotSupported when the file gives experts to an architecture without them.
Status refuse_experts(const std::string& a, const DecoderParams& p);

// The experts every MoE architecture describes alike (their count is read already); `n_ff_key`
// gives each expert's hidden size ("": the dense feed_forward_length).
Status read_experts(const GgufMetadata& md, const std::string& a, DecoderParams& p, const std::string& n_ff_key);

// The state-space layers' sizes under llama.cpp's ssm.* keys, Mamba-2's and the delta net's alike:
// conv_kernel into p.conv_kernel, inner_size, state_size, time_step_rank (heads) and group_count
// into p.ssm with `kind`. How they must fit is each architecture's to check.
Status read_ssm_sizes(const GgufMetadata& md, const std::string& a, DecoderParams& p, SsmKind kind);

// Mamba-2's sizes (Granite 4.0-H, Nemotron-H): read_ssm_sizes, then the checks that the heads
// (ssm.time_step_rank) divide the inner size and the groups divide the heads.
Status read_mamba2_sizes(const GgufMetadata& md, const std::string& a, DecoderParams& p);

// The gated delta net's sizes (Qwen3.5, Qwen3-Next): read_ssm_sizes, then the checks that key and
// value heads are of one size (ssm.state_size) and that the key heads (ssm.group_count) divide the
// value heads (ssm.time_step_rank).
Status read_delta_net_sizes(const GgufMetadata& md, const std::string& a, DecoderParams& p);

// Which layers are recurrent: the file's attention.recurrent_layers (one bool per layer), else
// every layer but each full_attention_interval-th (4 by default: layer il attends when
// (il + 1) % interval == 0), llama.cpp's order of preference.
Status read_recurrent_layers(const GgufMetadata& md, const std::string& a, DecoderParams& p);

// Qwen3.5-MoE's and Qwen3-Next's experts: softmax, top-k, renormalised, beside one shared expert of
// its own width (expert_shared_feed_forward_length, else feed_forward_length) gated per token by a
// sigmoid.
Status read_experts_beside_gated_shared(const GgufMetadata& md, const std::string& a, DecoderParams& p);

// The window of the sliding layers and which layers slide: a period (`pattern` when the file has
// none, llama.cpp's rule) or one bool per layer; the sliding layers rope with `swa_base` (the
// file's rope.freq_base_swa overrides it) and `swa_scale`. `window` is the default when the file
// has no window; `min_window` 0 lets a file turn the window off.
Status sliding_window(const GgufMetadata& md, const std::string& a, DecoderParams& p, std::optional<int64_t> window,
                      int64_t pattern, double swa_base, float swa_scale, int64_t min_window = 1);

// Gemma 2 and 3: no experts, embeddings scaled by sqrt(n_embd), Q scaled by 1/sqrt(head size)
// except on the 27B models (`layers_of_27b` layers), whose reference scales by
// 1/sqrt(n_embd / n_head) (query_pre_attn_scalar).
Status gemma_common(const std::string& a, DecoderParams& p, int layers_of_27b);

}  // namespace xb::arch
