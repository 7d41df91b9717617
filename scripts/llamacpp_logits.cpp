// llama.cpp's logits for one model fixture, as a second reference beside the float64 numpy ones.
//
//     llamacpp_logits LIBDIR MODEL.gguf OUT.npy TOKEN,TOKEN,... [--fa on|off] [--kv f32|f16] [--threads N]
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
// Prints one line "llama.cpp VERSION ggml VERSION COMMIT" on stdout; llama.cpp's log goes to stderr.
//
// Written against llama.h's public API only; scripts/llamacpp-reference compiles and runs it.
#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5)
        fail("usage: llamacpp_logits LIBDIR MODEL.gguf OUT.npy TOKEN,TOKEN,... [--fa on|off] [--kv f32|f16] "
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
    std::printf("llama.cpp %s ggml %s %s\n", llama_version(), ggml_version(), ggml_commit());

    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
