// llama.cpp's values of every graph node for one batch, to set beside xbackend's node by node.
//
//     llamacpp_nodes LIBDIR MODEL.gguf OUT.gguf TOKEN,TOKEN,... [--fa on|off] [--kv f32|f16] [--threads N]
//
// Loads MODEL with llama.cpp (backends from LIBDIR, CPU only) and runs one llama_decode of the tokens at
// positions 0 .. n-1 of sequence 0 with an output for every position, with the context of
// scripts/llamacpp_logits.cpp (same defaults and the same optional flags: flash attention off, an f32 K
// and V cache, one thread, a context of exactly the tokens, no extra buffer types). The context's
// cb_eval callback asks for every node of the graph; for each node whose type is f32 or f16 it copies the
// node's data to the host (ggml_backend_tensor_get; views with strides are gathered element by element
// into ggml order) and keeps it as f32 (f16 through ggml_fp16_to_fp32), under the node's name. Where
// llama.cpp gives one name to several nodes, the last one keeps the plain name and the earlier ones are
// kept as "name#0", "name#1", ... in the order they were computed. Every kept node is written to OUT as an
// f32 tensor of the node's ggml shape [ne0, ne1, ...] (gguf.h), in the order first computed, with the
// metadata "llamacpp.node_ops" (each tensor's ggml op, as ggml_op_desc writes it, in tensor order),
// "llamacpp.node_types" (the type llama.cpp computed it in: f32, or f16 for an f16 K and V cache),
// "llamacpp.node_src0", "llamacpp.node_src1" and "llamacpp.node_src2" (the written names of the
// tensor's src[0], src[1] and src[2] where those are kept nodes, else ""), "llamacpp.settings" and
// "llamacpp.version".
//
// Because the callback asks for every node, the scheduler computes the graph one node at a time, so
// llama.cpp's CPU backend cannot fuse successive nodes here (it may in a plain llama_decode).
// Prints "llamacpp_nodes: N nodes written to OUT" and one line "llama.cpp VERSION ggml VERSION COMMIT" on
// stdout; llama.cpp's log (including which CPU backend it loaded) goes to stderr.
//
// Written against llama.h's, ggml.h's and gguf.h's public API only; compile like scripts/llamacpp_logits.cpp:
//     g++ -std=c++17 -O2 -I$LLAMA/include scripts/llamacpp_nodes.cpp $LLAMA/libllama.so.0 $LLAMA/libggml.so.0
//         $LLAMA/libggml-base.so.0 -Wl,-rpath,$LLAMA -o llamacpp_nodes
#include "ggml-backend.h"
#include "ggml.h"
#include "gguf.h"
#include "llama.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "llamacpp_nodes: %s\n", what.c_str());
    std::exit(1);
}

struct Settings {
    bool flash_attn = false;
    ggml_type kv_type = GGML_TYPE_F32;
    int threads = 1;
};

// The optional flags after the four positional arguments (as in scripts/llamacpp_logits.cpp).
Settings parse_flags(int argc, char** argv, int first) {
    Settings s;
    for (int i = first; i < argc; i += 2) {
        const std::string flag = argv[i];
        if (i + 1 >= argc) fail("no value after " + flag);
        const std::string value = argv[i + 1];
        if (flag == "--fa" && (value == "on" || value == "off")) {
            s.flash_attn = value == "on";
        } else if (flag == "--kv" && (value == "f32" || value == "f16")) {
            s.kv_type = value == "f16" ? GGML_TYPE_F16 : GGML_TYPE_F32;
        } else if (flag == "--threads") {
            char* end = nullptr;
            const long n = std::strtol(value.c_str(), &end, 10);
            if (end == value.c_str() || *end != '\0' || n < 1 || n > 1024) fail("bad thread count: " + value);
            s.threads = static_cast<int>(n);
        } else {
            fail("bad option: " + flag + " " + value + " (--fa on|off, --kv f32|f16, --threads N)");
        }
    }
    return s;
}

std::vector<llama_token> parse_tokens(const char* text) {
    std::vector<llama_token> out;
    const char* p = text;
    while (*p) {
        char* end = nullptr;
        const long v = std::strtol(p, &end, 10);
        if (end == p || v < 0) fail(std::string("bad token list: ") + text);
        out.push_back(static_cast<llama_token>(v));
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0') fail(std::string("bad token list: ") + text);
    }
    if (out.empty()) fail("no tokens");
    return out;
}

// One node as computed: its name, op, ggml shape and values in ggml order (ne0 fastest).
struct Node {
    std::string name;
    std::string op;
    std::string type;  // the node's own type (f32 or f16; written as f32 either way)
    int64_t ne[GGML_MAX_DIMS];
    std::vector<float> data;
    int src[3];  // the captured nodes that are its src[0], src[1] and src[2], or -1
};

struct Capture {
    std::vector<Node> nodes;
    std::map<const ggml_tensor*, int> index;  // node -> its entry in nodes
    int skipped = 0;  // nodes of other types (i32 inputs, quantized, ...)
};

// Copies t's values to the host as f32 in ggml order. The span ggml_nbytes(t) covers every element
// of a strided view (a permuted or transposed one included), so one read of it and a gather suffice.
std::vector<float> read_values(const ggml_tensor* t) {
    const size_t span = ggml_nbytes(t);
    std::vector<uint8_t> raw(span);
    ggml_backend_tensor_get(t, raw.data(), 0, span);
    const int64_t n = ggml_nelements(t);
    std::vector<float> out(static_cast<size_t>(n));
    size_t k = 0;
    for (int64_t i3 = 0; i3 < t->ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < t->ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < t->ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
                    const size_t off = static_cast<size_t>(i0) * t->nb[0] + static_cast<size_t>(i1) * t->nb[1] +
                                       static_cast<size_t>(i2) * t->nb[2] + static_cast<size_t>(i3) * t->nb[3];
                    if (t->type == GGML_TYPE_F32) {
                        float v;
                        std::memcpy(&v, raw.data() + off, sizeof v);
                        out[k++] = v;
                    } else {
                        ggml_fp16_t h;
                        std::memcpy(&h, raw.data() + off, sizeof h);
                        out[k++] = ggml_fp16_to_fp32(h);
                    }
                }
    return out;
}

bool eval_callback(ggml_tensor* t, bool ask, void* user_data) {
    if (ask) return true;  // every node, computed one at a time
    auto* capture = static_cast<Capture*>(user_data);
    if ((t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_F16) || ggml_nelements(t) == 0) {
        ++capture->skipped;
        return true;
    }
    Node node;
    node.name = t->name;
    node.op = ggml_op_desc(t);
    node.type = ggml_type_name(t->type);
    for (int d = 0; d < GGML_MAX_DIMS; ++d) node.ne[d] = t->ne[d];
    node.data = read_values(t);
    for (int s = 0; s < 3; ++s) {
        const auto it = capture->index.find(t->src[s]);
        node.src[s] = t->src[s] && it != capture->index.end() ? it->second : -1;
    }
    capture->index[t] = static_cast<int>(capture->nodes.size());
    capture->nodes.push_back(std::move(node));
    return true;  // go on computing
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5)
        fail("usage: llamacpp_nodes LIBDIR MODEL.gguf OUT.gguf TOKEN,TOKEN,... [--fa on|off] [--kv f32|f16] "
             "[--threads N]");
    const std::vector<llama_token> tokens = parse_tokens(argv[4]);
    const Settings settings = parse_flags(argc, argv, 5);
    const int n = static_cast<int>(tokens.size());

    ggml_backend_load_all_from_path(argv[1]);
    llama_backend_init();

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.use_extra_bufts = false;  // the weights as the file holds them: no repacked or AMX copies
    llama_model* model = llama_model_load_from_file(argv[2], mp);
    if (!model) fail(std::string("llama.cpp could not load ") + argv[2]);
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    if (n_vocab <= 0) fail("the model reports no vocabulary size");
    for (llama_token t : tokens)
        if (t >= n_vocab) fail("token " + std::to_string(t) + " is outside the vocabulary");

    Capture capture;
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(n);
    cp.n_batch = static_cast<uint32_t>(n);
    cp.n_ubatch = static_cast<uint32_t>(n);
    cp.n_seq_max = 1;
    cp.n_threads = settings.threads;
    cp.n_threads_batch = settings.threads;
    cp.flash_attn_type = settings.flash_attn ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = settings.kv_type;
    cp.type_v = settings.kv_type;
    cp.swa_full = true;  // one cache for sliding layers too; the window is applied by the mask either way
    cp.no_perf = true;
    cp.cb_eval = eval_callback;
    cp.cb_eval_user_data = &capture;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) fail("llama.cpp could not create a context");

    llama_batch batch = llama_batch_init(n, 0, 1);
    batch.n_tokens = n;
    for (int i = 0; i < n; ++i) {
        batch.token[i] = tokens[static_cast<size_t>(i)];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    // Creating the context may already have run the callback (graph reservation computes nothing, but be sure).
    capture.nodes.clear();
    capture.index.clear();
    capture.skipped = 0;
    const int32_t rc = llama_decode(ctx, batch);
    if (rc != 0) fail("llama_decode returned " + std::to_string(rc));
    std::fprintf(stderr, "llamacpp_nodes: %d tokens, flash attention %s, %s K and V cache, %d thread(s): %zu nodes "
                 "captured, %d of other types skipped\n", n, settings.flash_attn ? "on" : "off",
                 ggml_type_name(settings.kv_type), settings.threads, capture.nodes.size(), capture.skipped);

    // Names: the last node of a name keeps it, the earlier ones become name#0, name#1, ...
    std::map<std::string, int> total, seen;
    for (const Node& node : capture.nodes) ++total[node.name];
    std::vector<std::string> names;
    for (const Node& node : capture.nodes) {
        const int k = seen[node.name]++;
        names.push_back(k + 1 == total[node.name] ? node.name : node.name + "#" + std::to_string(k));
    }

    const size_t n_nodes = capture.nodes.size();
    ggml_init_params ip = {ggml_tensor_overhead() * (n_nodes + 1), nullptr, true};
    ggml_context* gctx = ggml_init(ip);
    if (!gctx) fail("ggml_init failed");
    gguf_context* gguf = gguf_init_empty();
    std::map<std::string, bool> written;
    std::vector<const char*> ops, types;
    std::vector<const char*> srcs[3];
    size_t n_written = 0;
    for (size_t i = 0; i < n_nodes; ++i) {
        Node& node = capture.nodes[i];
        if (names[i].size() >= GGML_MAX_NAME) {
            std::fprintf(stderr, "llamacpp_nodes: skipping %s (name too long for ggml)\n", names[i].c_str());
            continue;
        }
        if (written[names[i]]) fail("two nodes named " + names[i]);
        written[names[i]] = true;
        ggml_tensor* t = ggml_new_tensor(gctx, GGML_TYPE_F32, GGML_MAX_DIMS, node.ne);
        ggml_set_name(t, names[i].c_str());
        t->data = node.data.data();
        gguf_add_tensor(gguf, t);
        ops.push_back(node.op.c_str());
        types.push_back(node.type.c_str());
        for (int s = 0; s < 3; ++s)
            srcs[s].push_back(node.src[s] >= 0 ? names[static_cast<size_t>(node.src[s])].c_str() : "");
        ++n_written;
    }
    gguf_set_val_str(gguf, "general.architecture", "llamacpp-node-results");
    gguf_set_arr_str(gguf, "llamacpp.node_ops", ops.data(), ops.size());
    gguf_set_arr_str(gguf, "llamacpp.node_types", types.data(), types.size());
    for (int s = 0; s < 3; ++s) {
        const std::string key = "llamacpp.node_src" + std::to_string(s);
        gguf_set_arr_str(gguf, key.c_str(), srcs[s].data(), srcs[s].size());
    }
    const std::string settings_text = std::string("flash_attn=") + (settings.flash_attn ? "on" : "off") +
                                      " kv=" + ggml_type_name(settings.kv_type) +
                                      " threads=" + std::to_string(settings.threads) + " tokens=" + argv[4];
    gguf_set_val_str(gguf, "llamacpp.settings", settings_text.c_str());
    const std::string version = std::string("llama.cpp ") + llama_version() + " ggml " + ggml_version() + " " +
                                ggml_commit();
    gguf_set_val_str(gguf, "llamacpp.version", version.c_str());
    if (!gguf_write_to_file(gguf, argv[3], false)) fail(std::string("cannot write ") + argv[3]);
    std::printf("llamacpp_nodes: %zu nodes written to %s\n", n_written, argv[3]);
    std::printf("%s\n", version.c_str());

    gguf_free(gguf);
    ggml_free(gctx);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
