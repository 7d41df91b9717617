// llama.cpp's logits for one model fixture, as a second reference beside the float64 numpy ones.
//
//     llamacpp_logits LIBDIR MODEL.gguf OUT.npy TOKEN,TOKEN,... [--fa on|off] [--kv f32|f16] [--threads N]
//                     [--nodes NODES.gguf]
//
// Loads MODEL with llama.cpp (backends from LIBDIR, CPU only), runs one llama_decode of the tokens at
// positions 0 .. n-1 of sequence 0 with an output for every position, and writes the logits as a
// little-endian float32 .npy of shape (tokens, vocab). The context is set up for the numerics closest
// to a plain float computation: flash attention off (so K and V are not rounded to f16 in the
// attention), an f32 K and V cache, one thread (a fixed summation order), a context of exactly the
// tokens (llama.cpp pads its cache; the padding is masked, so the result is that of n_kv = n tokens),
// and no extra buffer types (the CPU backend would otherwise repack some quantized weights, or put
// them in AMX buffers on CPUs with AMX, and compute with other kernels).
// The optional flags change three of those settings, to measure llama.cpp as it is usually run
// (scripts/logit_accuracy.py compares the result with exact logits): --fa on (flash attention, which
// computes with f16 K and V), --kv f16 (an f16 K and V cache), --threads N (N threads for the batch).
// The defaults (off, f32, 1) are the settings above.
//
// --nodes NODES.gguf also keeps llama.cpp's value of every graph node, to set beside xbackend's node
// by node (scripts/node_errors.py): the context's cb_eval callback asks for every node; each f32 or
// f16 node is copied to the host (views with strides gathered into ggml order) and kept as f32 under
// its name. Where llama.cpp gives one name to several nodes, the last keeps the plain name and the
// earlier ones become "name#0", "name#1", ... in the order computed. NODES is a GGUF file of f32
// tensors of the nodes' ggml shapes, in that order, with the metadata "llamacpp.node_ops" (each
// tensor's ggml op), "llamacpp.node_types" (f32, or f16 for an f16 K and V cache),
// "llamacpp.node_src0" .. "llamacpp.node_src2" (the written names of its sources where they are kept
// nodes, else ""), "llamacpp.settings" and "llamacpp.version". Asking for every node makes the
// scheduler compute one node at a time, so llama.cpp cannot fuse nodes in such a run.
// Prints one line "llama.cpp VERSION ggml VERSION COMMIT" on stdout; llama.cpp's log goes to stderr.
//
// Written against llama.h's public API only; scripts/llamacpp-reference compiles and runs it.
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
    std::fprintf(stderr, "llamacpp_logits: %s\n", what.c_str());
    std::exit(1);
}

struct Settings {
    bool flash_attn = false;
    ggml_type kv_type = GGML_TYPE_F32;
    int threads = 1;
    std::string nodes;  // --nodes: where to write every node's value ("" = not kept)
};

// The optional flags after the four positional arguments.
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
        } else if (flag == "--nodes") {
            s.nodes = value;
        } else if (flag == "--threads") {
            char* end = nullptr;
            const long n = std::strtol(value.c_str(), &end, 10);
            if (end == value.c_str() || *end != '\0' || n < 1 || n > 1024) fail("bad thread count: " + value);
            s.threads = static_cast<int>(n);
        } else {
            fail("bad option: " + flag + " " + value + " (--fa on|off, --kv f32|f16, --threads N, --nodes FILE)");
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

// numpy's format 1.0: magic, version, header length, a dict padded with spaces to a multiple of 64.
void write_npy(const std::string& path, const std::vector<float>& data, int rows, int cols) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                         std::to_string(cols) + "), }";
    const size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header.push_back('\n');
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) fail("cannot write " + path);
    const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    const uint16_t len = static_cast<uint16_t>(header.size());
    const unsigned char len_le[2] = {static_cast<unsigned char>(len & 0xff), static_cast<unsigned char>(len >> 8)};
    bool ok = std::fwrite(magic, 1, 8, f) == 8 && std::fwrite(len_le, 1, 2, f) == 2 &&
              std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
              std::fwrite(data.data(), sizeof(float), data.size(), f) == data.size();  // x86: little-endian
    ok = std::fclose(f) == 0 && ok;
    if (!ok) fail("short write to " + path);
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

// Writes every captured node to `path` (see the header comment).
void write_nodes(const Capture& capture, const Settings& settings, const char* tokens, const std::string& path) {
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
        const Node& node = capture.nodes[i];
        if (names[i].size() >= GGML_MAX_NAME) {
            std::fprintf(stderr, "llamacpp_logits: skipping %s (name too long for ggml)\n", names[i].c_str());
            continue;
        }
        if (written[names[i]]) fail("two nodes named " + names[i]);
        written[names[i]] = true;
        ggml_tensor* t = ggml_new_tensor(gctx, GGML_TYPE_F32, GGML_MAX_DIMS, node.ne);
        ggml_set_name(t, names[i].c_str());
        t->data = const_cast<float*>(node.data.data());  // gguf only reads it
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
                                      " threads=" + std::to_string(settings.threads) + " tokens=" + tokens;
    gguf_set_val_str(gguf, "llamacpp.settings", settings_text.c_str());
    const std::string version = std::string("llama.cpp ") + llama_version() + " ggml " + ggml_version() + " " +
                                ggml_commit();
    gguf_set_val_str(gguf, "llamacpp.version", version.c_str());
    if (!gguf_write_to_file(gguf, path.c_str(), false)) fail("cannot write " + path);
    std::fprintf(stderr, "llamacpp_logits: %zu nodes written to %s (%d of other types not kept)\n", n_written, path.c_str(),
                 capture.skipped);
    gguf_free(gguf);
    ggml_free(gctx);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5)
        fail("usage: llamacpp_logits LIBDIR MODEL.gguf OUT.npy TOKEN,TOKEN,... [--fa on|off] [--kv f32|f16] "
             "[--threads N] [--nodes NODES.gguf]");
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
    cp.swa_full = true;   // one cache for sliding layers too; the window is applied by the mask either way
    cp.no_perf = true;
    Capture capture;
    if (!settings.nodes.empty()) {
        cp.cb_eval = eval_callback;
        cp.cb_eval_user_data = &capture;
    }
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
    capture = Capture();  // what making the context may have run through the callback
    const int64_t start_us = ggml_time_us();
    const int32_t rc = llama_decode(ctx, batch);
    if (rc != 0) fail("llama_decode returned " + std::to_string(rc));
    std::fprintf(stderr, "llamacpp_logits: %d tokens, flash attention %s, %s K and V cache, %d thread(s): "
                 "llama_decode %.3f s\n", n, settings.flash_attn ? "on" : "off", ggml_type_name(settings.kv_type),
                 settings.threads, static_cast<double>(ggml_time_us() - start_us) * 1e-6);

    std::vector<float> logits(static_cast<size_t>(n) * static_cast<size_t>(n_vocab));
    for (int i = 0; i < n; ++i) {
        const float* row = llama_get_logits_ith(ctx, i);
        if (!row) fail("no logits for position " + std::to_string(i));
        std::memcpy(&logits[static_cast<size_t>(i) * static_cast<size_t>(n_vocab)], row,
                    sizeof(float) * static_cast<size_t>(n_vocab));
    }
    write_npy(argv[3], logits, n, n_vocab);
    if (!settings.nodes.empty()) write_nodes(capture, settings, argv[4], settings.nodes);
    std::printf("llama.cpp %s ggml %s %s\n", llama_version(), ggml_version(), ggml_commit());

    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
