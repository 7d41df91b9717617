// The token ids llama.cpp gives a text file, for token sequences that tests and references share.
//
//     llamacpp_tokenize MODEL.gguf TEXT_FILE
//
// Loads only MODEL's vocabulary with llama.cpp (no weights, no backend), tokenizes the whole file as
// one string as llama.cpp's own tools do for a prompt: with the special tokens the model adds
// (add_special: Gemma's BOS, id 2) and without parsing special-token text in the file (parse_special
// false: "<bos>" in the text would stay plain text). Prints the ids as a JSON array on one line on
// stdout; llama.cpp's log goes to stderr.
//
// Written against llama.h's public API only. Compile it like scripts/llamacpp_logits.cpp
// (LLAMA = the prebuilt llama.cpp folder, ../shared/llama.cpp from the repository root):
//     g++ -std=c++17 -O2 -Wall -Wextra -Werror -I$LLAMA/include scripts/llamacpp_tokenize.cpp
//         $LLAMA/libllama.so.0 $LLAMA/libggml.so.0 $LLAMA/libggml-base.so.0 -Wl,-rpath,$LLAMA
//         -o /tmp/llamacpp_tokenize
// (one command line; tests/data/text/README.md has it as it was run).
#include "llama.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "llamacpp_tokenize: %s\n", what.c_str());
    std::exit(1);
}

std::string read_file(const char* path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(std::string("cannot read ") + path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) fail("usage: llamacpp_tokenize MODEL.gguf TEXT_FILE");
    const std::string text = read_file(argv[2]);

    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;  // the tokenizer needs the vocabulary and its metadata only
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) fail(std::string("llama.cpp could not load ") + argv[1]);
    const llama_vocab* vocab = llama_model_get_vocab(model);

    // First call with no room: llama_tokenize returns minus the number of tokens it needs.
    const int32_t len = static_cast<int32_t>(text.size());
    int32_t n = llama_tokenize(vocab, text.data(), len, nullptr, 0, /*add_special=*/true, /*parse_special=*/false);
    if (n == INT32_MIN) fail("the text has too many tokens");
    std::vector<llama_token> tokens(static_cast<size_t>(n < 0 ? -n : n));
    n = llama_tokenize(vocab, text.data(), len, tokens.data(), static_cast<int32_t>(tokens.size()), true, false);
    if (n < 0) fail("llama_tokenize failed");
    tokens.resize(static_cast<size_t>(n));

    std::ostringstream out;
    out << '[';
    for (size_t i = 0; i < tokens.size(); ++i) out << (i ? "," : "") << tokens[i];
    out << "]\n";
    std::fputs(out.str().c_str(), stdout);
    std::fprintf(stderr, "llamacpp_tokenize: %zu tokens (first %d, the model's BOS is %d)\n", tokens.size(),
                 tokens.empty() ? -1 : tokens[0], llama_vocab_bos(vocab));

    llama_model_free(model);
    llama_backend_free();
    return 0;
}
