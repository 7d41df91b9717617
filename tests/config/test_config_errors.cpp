// Bad input: every broken config or data file under tests/data gives one clear error that names
// the file and the JSON path (or the data file and the byte offset), with the right code, and
// nothing crashes.
#include <gtest/gtest.h>

#include <vector>

#include "test_config_util.hpp"

namespace xb::config {
namespace {

using testing::data_path;

// The first error on the way from the file to a placed, initialised model.
Status first_error(const std::string& path) {
    XB_ASSIGN_OR_RETURN(ConfigSpec spec, load_config(path));
    XB_ASSIGN_OR_RETURN(Model model, build_model(spec, global_registry()));
    XB_ASSIGN_OR_RETURN(auto backends, init_backends(model.placement, global_registry()));
    return place_and_init(model, testing::pointers(backends));
}

struct BadCase {
    const char* file;
    StatusCode code;
    std::vector<const char*> says;  // substrings of the message
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.file; }

const StatusCode kInvalid = StatusCode::InvalidArgument;
const StatusCode kNotFound = StatusCode::NotFound;

const BadCase kCases[] = {
    // JSON syntax
    {"bad_syntax.json", kInvalid, {"bad_syntax.json:3:", "invalid JSON", "syntax error"}},
    {"bad_empty.json", kInvalid, {"bad_empty.json:1:1:", "invalid JSON"}},
    // unknown keys, missing fields, wrong types
    {"bad_duplicate_key.json", kInvalid, {": /tensors/w: duplicate key 'w' (JSON keeps only one of them)"}},
    {"bad_unknown_key.json", kInvalid, {": /grpah: unknown key 'grpah'", "did you mean 'graph'?"}},
    {"bad_missing_shape.json", kInvalid, {": /tensors/x: missing field 'shape'"}},
    {"bad_wrong_type.json", kInvalid, {": /tensors/x/shape/1: expected an integer", "got boolean true"}},
    {"bad_graph_type.json", kInvalid, {": /graph: expected a list of ops or a model builder object, got number 5"}},
    {"bad_init_kind.json", kInvalid, {": /tensors/x/init/kind: unknown value 'gaussian'"}},
    {"bad_init_key.json", kInvalid, {": /tensors/x/init/std: unknown key 'std'"}},
    {"bad_int_no_init.json", kInvalid, {": /tensors/rows: missing field 'init': i32 tensors have no default init"}},
    {"bad_param_expr.json", kInvalid, {": /tensors/x/shape/0: bad expression 'n_emb * 2': unknown param 'n_emb'", "did you mean 'n_embd'?"}},
    // ops and tensors
    {"bad_unknown_op.json", kInvalid, {": /graph/1/op: unknown op 'matmul'", "did you mean 'mul_mat'?"}},
    {"bad_unknown_tensor.json", kInvalid, {": /graph/1/args/1: unknown tensor 'hh'", "did you mean 'h'?", "(tensors and earlier ops: w, x, h)"}},
    {"bad_args_count.json", kInvalid, {": /graph/0/args: got 1 arguments, but add takes (a, b)"}},
    {"bad_op_param.json", kInvalid, {": /graph/0/params: missing parameter 'scale' of scale"}},
    {"bad_op_param_key.json", kInvalid, {": /graph/0/params/epsilon: unknown key 'epsilon'", "did you mean 'eps'?"}},
    {"bad_duplicate_op.json", kInvalid, {": /graph/1/name: duplicate op name 'a' (also /graph/0)"}},
    {"bad_cycle.json", kInvalid, {": /graph/0/args/1: op 'a' uses its own result: a cycle"}},
    {"bad_forward_ref.json", kInvalid, {": /graph/0/args/1: 'b' is the result of a later op (/graph/1)", "forward reference or a cycle"}},
    // shapes
    {"bad_shape_mismatch.json", kInvalid, {": /graph/1: op 'y': mul_mat"}},
    {"bad_declared_shape.json", kInvalid, {": /tensors/y/shape: op 'y' (/graph/0) computes shape [6, 4], the config declares [4, 6]"}},
    {"bad_causal_mask.json", kInvalid, {": /tensors/m/init: causal_mask needs ne0 (keys) >= ne1 (queries), got [2, 4]"}},
    // model builders
    {"bad_model_kind.json", kInvalid, {": /graph/model: unknown value 'llama-decoder'", "did you mean 'llama_decoder'?"}},
    {"bad_model_param.json", kInvalid, {": /graph/params/n_layer: unknown key 'n_layer'", "did you mean 'n_layers'?"}},
    {"bad_model_value.json", kInvalid, {": /graph/params/n_layers: value 0 is out of range [1, "}},
    {"bad_model_shape.json", kInvalid, {": /graph/params: decoder: n_embd (100) must divide into n_head (3) heads of even size"}},
    {"bad_builder_tensor.json", kInvalid, {": /tensors/blk.0.attn_qq.weight: unknown tensor 'blk.0.attn_qq.weight' of the llama_decoder builder", "did you mean 'blk.0.attn_q.weight'?"}},
    {"bad_builder_tensor_shape.json", kInvalid, {": /tensors/token_embd.weight/shape: the llama_decoder builder makes 'token_embd.weight' with shape [64, 50], not [50, 64]"}},
    // placement
    {"bad_device.json", kNotFound, {": /placement/backends/0: device 'CUDA7' is not present (present: CPU", "--backends", "--map CUDA7="}},
    {"bad_weight_rule_device.json", kInvalid, {": /placement/weights/0/device: device 'SIM0' is not one of placement.backends (CPU)"}},
    {"bad_weight_rule_pattern.json", kInvalid, {": /placement/weights/0/pattern: pattern 'blk.*' matches no weight"}},
    {"bad_node_rule.json", kInvalid, {": /placement/nodes/0/pattern: pattern 'logits' matches no node of the graph"}},
    {"bad_offload_explicit.json", kInvalid, {": /placement/offload_layers: offload_layers needs a model builder"}},
    // .npy files
    {"bad_missing_npy.json", kNotFound, {": /tensors/x/init: ", "missing.npy: cannot open the .npy file: No such file or directory"}},
    {"bad_npy_truncated.json", kInvalid, {": /tensors/x/init: ", "truncated.npy: offset 128: truncated data: shape (2, 3) of '<f4' needs 24 bytes, the file has 19"}},
    {"bad_npy_truncated_header.json", kInvalid, {"truncated_header.npy: offset 10: truncated: the header needs 118 bytes, the file has 30 left"}},
    {"bad_npy_corrupt_magic.json", kInvalid, {"corrupt_magic.npy: offset 0: not a .npy file (bad magic)"}},
    {"bad_npy_corrupt_header.json", kInvalid, {"corrupt_header.npy: offset 60: bad .npy header: expected '('"}},
    {"bad_npy_fortran.json", kInvalid, {"fortran.npy: offset 10: Fortran-order arrays are not supported"}},
    {"bad_npy_big_endian.json", kInvalid, {"big_endian.npy: offset 10: unsupported dtype '>f4'"}},
    {"bad_npy_shape.json", kInvalid, {": /tensors/x/init: ", "good_2x3_f32.npy: the array's shape (2, 3) does not match the tensor's [2, 3]"}},
    {"bad_npy_type.json", kInvalid, {"good_4_i32.npy: the array's type i32 cannot initialise a tensor of type f32"}},
    // GGUF files
    {"bad_gguf_missing.json", kNotFound, {": /tensors/w/init: ", "no-such-file.gguf: cannot open the GGUF file: No such file or directory"}},
    {"bad_gguf_truncated.json", kInvalid, {"truncated.gguf: offset ", "truncated: tensor 'q' needs 36 bytes from data offset 96, past the end"}},
    {"bad_gguf_truncated_header.json", kInvalid, {"truncated_header.gguf: offset 16: truncated or corrupt: 14 metadata key-values cannot fit in the 36 bytes left"}},
    {"bad_gguf_corrupt.json", kInvalid, {"corrupt.gguf: offset 0: not a GGUF file (bad magic)"}},
    {"bad_gguf_bad_version.json", kInvalid, {"bad_version.gguf: offset 4: GGUF version 1 is not supported"}},
    {"bad_gguf_corrupt_length.json", kInvalid, {"corrupt_length.gguf: offset 24: length 1099511627776 of a metadata key runs past the end of the file"}},
    {"bad_gguf_bad_dims.json", kInvalid, {"bad_dims.gguf: offset 33: tensor 'w' has 5 dims"}},
    {"bad_gguf_shape.json", kInvalid, {": /tensors/w/init: ", "small.gguf: offset ", "tensor 'w' has shape [4, 3], the config wants [3, 4]"}},
    {"bad_gguf_type.json", kInvalid, {"small.gguf: offset ", "tensor 'w' is f32, the config wants f16"}},
    {"bad_gguf_block_rows.json", kInvalid, {"bad_block_rows.gguf: offset 53: tensor 'q' of type q4_0 has 40 columns, not a multiple of the block size 32"}},
    {"bad_gguf_unknown_type.json", kInvalid, {"unknown_type.gguf: offset 24: tensor 'x' is unknown type id 99, the config wants f32"}},
    {"bad_quant_rows.json", kInvalid, {": /tensors/w/shape: q4_0 rows are blocks of 32 values: shape[0] = 40 is not a multiple"}},
    {"bad_builder_quant_rows.json", kInvalid, {": /graph/params: decoder: weight_type q4_K stores rows in blocks of 256 values; n_embd (32) and n_ff (64) are not multiples of 256"}},
    {"bad_gguf_quantized.json", kInvalid, {"tensor 'q' is q4_0, the config wants f32", "give the tensor \"type\": \"q4_0\""}},
    {"bad_gguf_tensor.json", kNotFound, {"small.gguf: no tensor 'ww' in the file", "did you mean 'w'?", "(it has: w, b, q)"}},
};

class BadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInput, GivesOneClearError) {
    const BadCase& c = GetParam();
    const std::string path = data_path(c.file);
    const Status s = first_error(path);
    ASSERT_FALSE(s.is_ok()) << c.file << " was accepted";
    EXPECT_EQ(s.code(), c.code) << s.to_string();
    EXPECT_EQ(s.message().rfind(path, 0), 0u) << "the message does not start with the config file: " << s.message();
    for (const char* part : c.says) EXPECT_NE(s.message().find(part), std::string::npos) << "missing '" << part << "' in:\n" << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << "one line: " << s.message();
}

INSTANTIATE_TEST_SUITE_P(Data, BadInput, ::testing::ValuesIn(kCases), [](const ::testing::TestParamInfo<BadCase>& info) {
    std::string name = info.param.file;
    name = name.substr(0, name.find('.'));
    return name;
});

// Every broken config under tests/data is in the table above.
TEST(BadInput, EveryBrokenConfigIsTested) {
    for (const auto& entry : std::filesystem::directory_iterator(testing::repo_root() / "tests" / "data")) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("bad_", 0) != 0 || entry.path().extension() != ".json") continue;
        bool listed = false;
        for (const BadCase& c : kCases) listed = listed || name == c.file;
        EXPECT_TRUE(listed) << name << " has no case";
    }
}

TEST(BadInput, MissingConfigFileIsNotFound) {
    const Status s = load_config(data_path("no-such-config.json")).status();
    EXPECT_EQ(s.code(), StatusCode::NotFound);
    EXPECT_NE(s.message().find("no-such-config.json: cannot open the config file: No such file or directory"),
              std::string::npos)
        << s.message();
}

}  // namespace
}  // namespace xb::config
