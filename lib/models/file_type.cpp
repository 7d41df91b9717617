#include "models/file_type.hpp"

#include <map>
#include <optional>

#include "core/dtype.hpp"

namespace xb {

namespace {

// general.file_type values (llama.h's enum llama_ftype) and llama.cpp's names for them.
struct FileType {
    int64_t id;
    const char* name;
};
constexpr FileType kFileTypes[] = {
    {0, "all F32"},
    {1, "F16"},
    {2, "Q4_0"},
    {3, "Q4_1"},
    {7, "Q8_0"},
    {8, "Q5_0"},
    {9, "Q5_1"},
    {10, "Q2_K - Medium"},
    {11, "Q3_K - Small"},
    {12, "Q3_K - Medium"},
    {13, "Q3_K - Large"},
    {14, "Q4_K - Small"},
    {15, "Q4_K - Medium"},
    {16, "Q5_K - Small"},
    {17, "Q5_K - Medium"},
    {18, "Q6_K"},
    {19, "IQ2_XXS - 2.0625 bpw"},
    {20, "IQ2_XS - 2.3125 bpw"},
    {21, "Q2_K - Small"},
    {22, "IQ3_XS - 3.3 bpw"},
    {23, "IQ3_XXS - 3.0625 bpw"},
    {24, "IQ1_S - 1.5625 bpw"},
    {25, "IQ4_NL - 4.5 bpw"},
    {26, "IQ3_S - 3.4375 bpw"},
    {27, "IQ3_S mix - 3.66 bpw"},
    {28, "IQ2_S - 2.5 bpw"},
    {29, "IQ2_M - 2.7 bpw"},
    {30, "IQ4_XS - 4.25 bpw"},
    {31, "IQ1_M - 1.75 bpw"},
    {32, "BF16"},
    {36, "TQ1_0 - 1.69 bpw ternary"},
    {37, "TQ2_0 - 2.06 bpw ternary"},
    {38, "MXFP4 MoE"},
    {39, "NVFP4"},
};

// The file type llama.cpp's loader guesses from the type most of a file's tensors have (the
// k-quants' middle variants, MXFP4's MoE one).
std::optional<int64_t> guessed_file_type(DType t) {
    switch (t) {
        case DType::F32: return 0;
        case DType::F16: return 1;
        case DType::BF16: return 32;
        case DType::Q4_0: return 2;
        case DType::Q4_1: return 3;
        case DType::Q5_0: return 8;
        case DType::Q5_1: return 9;
        case DType::Q8_0: return 7;
        case DType::Q2_K: return 10;
        case DType::Q3_K: return 12;
        case DType::Q4_K: return 15;
        case DType::Q5_K: return 17;
        case DType::Q6_K: return 18;
        case DType::IQ2_XXS: return 19;
        case DType::IQ2_XS: return 20;
        case DType::IQ2_S: return 28;
        case DType::IQ3_XXS: return 23;
        case DType::IQ3_S: return 26;
        case DType::IQ1_S: return 24;
        case DType::IQ1_M: return 31;
        case DType::IQ4_NL: return 25;
        case DType::IQ4_XS: return 30;
        case DType::TQ1_0: return 36;
        case DType::TQ2_0: return 37;
        case DType::MXFP4: return 38;
        case DType::NVFP4: return 39;
        default: return std::nullopt;
    }
}

}  // namespace

std::string llama_file_type_name(int64_t file_type) {
    for (const FileType& t : kFileTypes) {
        if (t.id == file_type) return t.name;
    }
    return "unknown, may not work";
}

std::string gguf_file_type_name(const GgufReader& file) {
    if (const GgufKV* kv = file.find_kv_entry("general.file_type")) {
        if (const std::optional<int64_t> v = kv->value.as_int()) return llama_file_type_name(*v);
    }
    // The type most tensors have, counted as llama.cpp's loader counts them: the first to reach the
    // highest count wins a tie.
    std::map<uint32_t, int> count;
    uint32_t most = 0;
    int most_count = 0;
    for (const GgufTensorInfo& t : file.tensors()) {
        if (++count[t.type] > most_count) {
            most_count = count[t.type];
            most = t.type;
        }
    }
    const GgmlTypeInfo* info = ggml_type_info(most);
    const std::optional<int64_t> guess = info != nullptr && info->dtype ? guessed_file_type(*info->dtype) : std::nullopt;
    return "(guessed) " + llama_file_type_name(guess.value_or(-1));
}

}  // namespace xb
