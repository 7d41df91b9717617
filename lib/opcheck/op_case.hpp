// Op cases: one small graph around one op, the inputs it reads, its float64 reference and the error
// it may make. The cases are shared by the conformance tests (tests/opcheck/test_ops_*.cpp, every case on
// every device against the reference) and by the op-check tool (a backend against the CPU).
//
// A case builds its graph from inputs that it declares through a CaseBuilder; the runner
// (case_runner.hpp) fills those inputs with seeded random values, computes the graph on a backend,
// and the reference is computed in double from the inputs as they were stored (after rounding to
// f16/bf16), so that input quantization never counts as error.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/dtype.hpp"
#include "core/tensor.hpp"
#include "opcheck/compare.hpp"
#include "opcheck/generators.hpp"
#include "exact/ref_array.hpp"

namespace xb::opcheck {

// A leaf of a case's graph and how to fill it.
struct InputSpec {
    Tensor* tensor;
    Generator generate;
};

// Handed to a case's build function: the context and the inputs declared so far.
class CaseBuilder {
public:
    explicit CaseBuilder(Context& ctx) : ctx_(&ctx) {}
    Context& ctx() const { return *ctx_; }
    // A new contiguous input of `type`; the reference sees it as in[i], in declaration order.
    Tensor* input(DType type, Shape ne, Generator generate = uniform(-1.0f, 1.0f));
    const std::vector<InputSpec>& inputs() const { return inputs_; }
    // Replaces input i's generator (the non-finite twins of cases_nonfinite.cpp).
    void set_generator(size_t i, Generator generate) { inputs_.at(i).generate = std::move(generate); }

private:
    Context* ctx_;
    std::vector<InputSpec> inputs_;
};

using BuildFn = std::function<Tensor*(CaseBuilder& b)>;
// in[i] holds input i as stored (integers exactly, floats after rounding to their type).
using RefFn = std::function<RefArray(const std::vector<RefArray>& in)>;

struct OpCase {
    std::string name;  // unique among all cases; letters, digits and '_'
    BuildFn build;
    RefFn reference;
    double tolerance;  // largest NMSE against the reference
    Specials specials = Specials::Same;  // what stands where the reference is NaN or infinite
};

// --- tolerances (NMSE = sum((out - ref)^2) / sum(ref^2)) ------------------------------------------
// Unit roundoffs: f32 2^-24 = 6.0e-8, f16 2^-11 = 4.9e-4, bf16 2^-8 = 3.9e-3. One rounding of every
// element gives an NMSE of at most u^2 (about u^2/3 on average).

// Pure data movement (copies, views, gathers, padding, argmax indices): the output is the stored
// input, bit for bit.
inline constexpr double kTolExact = 0.0;
// f32 results of a few f32 operations each (element-wise math, libm-quality exp/tanh/log): a few
// ulp per element, NMSE ~1e-14; 1e-12 leaves room for fast exp/tanh approximations only.
inline constexpr double kTolF32 = 1e-12;
// f32 results of rows reduced in f32 (sums, norms, softmax over up to ~100 elements): errors grow
// with sqrt(n) ulp, NMSE ~1e-13; 1e-10 also admits pairwise or blocked summation orders.
inline constexpr double kTolF32Reduce = 1e-10;
// Results stored as f16: one rounding gives at most u_f16^2 = 2.4e-7; 1e-6 allows for one more
// rounding inside the kernel (an f16 intermediate), no more.
inline constexpr double kTolF16 = 1e-6;
// Results stored as bf16: u_bf16^2 = 1.5e-5 for one rounding; 6e-5 allows for one more.
inline constexpr double kTolBF16 = 6e-5;
// The tolerance of results stored as `type` after f32-accurate computation.
double tolerance_for_output(DType type);

// Matrix products (mul_mat, mul_mat_id) by weights of type a, over K of up to a few hundred:
// - f32: products accumulated in f32, errors ~sqrt(K) ulp of the dot products (kTolF32Reduce);
// - f16/bf16: a is stored exactly, but a backend may round b to a's type before the products
//   (ggml's vec_dot_type; the CPU does for bf16 where it has AVX512-BF16): NMSE ~u^2/3 over many
//   products (f16 8e-8, bf16 5e-6), more on a product whose sum cancels much of its terms (a bf16
//   case of 29 one-token rows with NaNs among the weights measured 3.3e-5, one output 2e-4 of its
//   terms' magnitude off, within bf16's 2^-9). f16 allows about 12x the mean, bf16 20x (1e-4, as
//   the quantized types); a wrong rounding is caught exactly by the CPU's own bf16 tests, a wrong
//   kernel gives ~1;
// - quantized: CPUs multiply by activations rounded to 8-bit blocks (q8_0 or q8_K, a step of
//   max|x|/127 per block): on uniform data an NMSE of about (1/127)^2 / 12 * 3 = 1.6e-5 per
//   product. GPUs that round activations to f16 do better. 1e-4 leaves room for the larger block
//   maxima of q8_K; a wrong scale or nibble order gives ~1.
inline constexpr double kTolMatMulF16 = 1e-6;
inline constexpr double kTolMatMulBF16 = 1e-4;
inline constexpr double kTolMatMulQuant = 1e-4;
double matmul_tolerance(DType weights);

// The quantized weight types (every GGUF block format but q8_K, the k-quants' activations).
inline constexpr DType kQuantWeightTypes[] = {
    DType::Q4_0,   DType::Q4_1,   DType::Q5_0,   DType::Q5_1,   DType::Q8_0,    DType::Q4_K,
    DType::Q5_K,   DType::Q6_K,   DType::Q2_K,   DType::Q3_K,   DType::IQ2_XXS, DType::IQ2_XS,
    DType::IQ2_S,  DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S,  DType::IQ1_M,   DType::IQ4_NL,
    DType::IQ4_XS, DType::TQ1_0,  DType::TQ2_0,  DType::MXFP4,  DType::NVFP4};
// K for a row of `blocks` blocks of t.
inline int64_t row_of_blocks(DType t, int64_t blocks) { return blocks * blck_size(t); }

// "f32": the type's part of case names.
std::string type_tag(DType t);

}  // namespace xb::opcheck
