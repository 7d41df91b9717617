// Quantized weights times up to eight columns (decode and small batches), as ggml's MMVQ: the
// columns are quantized once to 8-bit blocks, then each weight row is dotted with every column in
// integer arithmetic, unit by unit (core/quant_int_dot.hpp: the same code the CPU tests run).
// mul_mat_id's quantized experts take the same row dots for few tokens, one (row, pair) per block,
// the rows from the expert the pair chose.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "core/quant_int_dot.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/expert_ids.cuh"
#include "cuda/expert_products.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"
#include "cuda/quant_products.hpp"
#include "cuda/quant_types.cuh"

namespace xb::cuda {

namespace {

// One warp per block of 32 activations: b's columns (any float type, any strides) into int8 values
// and a Q8Scale per block, rounded as the CPU rounds them (q8_step, q8_round).
__global__ void quantize_columns_kernel(TensorDesc b, int8_t* values, Q8Scale* scales, int64_t blocks_per_column,
                                        int64_t n_blocks) {
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int64_t warps_per_block = blockDim.x / kWarpSize;
    for (int64_t blk = static_cast<int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / kWarpSize; blk < n_blocks;
         blk += static_cast<int64_t>(gridDim.x) * warps_per_block) {
        const int64_t column = blk / blocks_per_column;
        const int64_t i0 = (blk % blocks_per_column) * kQ8Block + lane;
        const float x = load_f32(b, with_dim(row_start(b, column), 0, i0));
        const float amax = bits_float(warp_reduce(magnitude_bits(x), MaxBitsOp{}));  // NaN if any is
        const float d = q8_step(amax);
        const int q = q8_round(x, q8_inverse_step(d));
        values[blk * kQ8Block + lane] = static_cast<int8_t>(q);
        const int sum = warp_reduce(q, SumOp{});
        if (lane == 0) scales[blk] = q8_stored_scale(d, sum);
    }
}

struct MatVecArgs {
    const char* a = nullptr;          // the weights, quantized rows
    int64_t a_nb1 = 0, a_nb2 = 0, a_nb3 = 0;
    int64_t rows = 0;                 // a's rows (dst's ne[0])
    int64_t blocks_per_row = 0;
    int64_t batches = 0, batch2 = 1;  // dst's ne[2] * ne[3], and ne[2]
    int64_t r2 = 1, r3 = 1;
    const int8_t* values = nullptr;   // quantized columns (QuantProductPlan)
    const Q8Scale* scales = nullptr;
    int64_t k = 0;
    TensorDesc dst;
};

// The quantized columns from column `first` on.
__device__ __forceinline__ Q8Cols columns_from(const int8_t* values, const Q8Scale* scales, int64_t k, int64_t first) {
    Q8Cols act;
    act.qs = values + first * k;
    act.ds = scales + first * (k / kQ8Block);
    act.qs_stride = k;
    act.ds_stride = k / kQ8Block;
    return act;
}

// Rows row0 .. row0 + kRows - 1 of `matrix` (rows nb1 bytes apart) dotted with kCols quantized
// columns by the whole thread block. The block's threads take a row's units in turn (consecutive
// threads, consecutive pieces of memory); each keeps kRows x kCols sums, which warp shuffles and
// then shared memory add up; thread r * kCols + c passes the total of row row0 + r and column c to
// store(row, c, total). Every thread of the block calls it (it synchronises them).
template <typename Block, int kCols, int kRows, bool kWide, typename Store>
__device__ __forceinline__ void block_row_dots(const char* matrix, int64_t nb1, int64_t row0, int64_t rows,
                                               int64_t blocks_per_row, Q8Cols act,
                                               float (&partial)[kMatVecWarps][kRows][kCols], const Store& store) {
    constexpr int kUnits = Q8Dot<Block>::kUnits;
    constexpr int kElems = kBlockElems<Block>;
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    const int64_t units = blocks_per_row * kUnits;
    float sum[kRows][kCols] = {};
    for (int64_t u = threadIdx.x; u < units; u += blockDim.x) {
        const int64_t blk = u / kUnits;
        const int unit = static_cast<int>(u % kUnits);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            if (row0 + r >= rows) break;
            const auto* block = reinterpret_cast<const uint8_t*>(matrix + (row0 + r) * nb1) +
                                blk * static_cast<int64_t>(sizeof(Block));
            Q8Dot<Block>::template dot<kCols, kWide>(block, unit, act, blk * kElems, sum[r]);
        }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
            const float s = warp_reduce(sum[r][c], SumOp{});
            if (lane == 0) partial[warp][r][c] = s;
        }
    }
    __syncthreads();
    if (threadIdx.x < kRows * kCols) {
        const int r = static_cast<int>(threadIdx.x) / kCols;
        const int c = static_cast<int>(threadIdx.x) % kCols;
        float total = 0.0f;
#pragma unroll
        for (int w = 0; w < kMatVecWarps; ++w) total += partial[w][r][c];
        if (row0 + r < rows) store(row0 + r, c, total);
    }
    __syncthreads();  // partial is reused by the caller's next call
}

// dst[i, j, i2, i3] = dot(row i of a's matrix (i2 / r2, i3 / r3), column j of batch (i2, i3)), for
// kCols columns and kRows rows per thread block.
template <typename Block, int kCols, int kRows, bool kWide>
__global__ void __launch_bounds__(kMatVecWarps * kWarpSize) mul_mat_vec_q_kernel(MatVecArgs args) {
    __shared__ float partial[kMatVecWarps][kRows][kCols];
    const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
    for (int64_t batch = blockIdx.y; batch < args.batches; batch += gridDim.y) {
        const int64_t i2 = batch % args.batch2;
        const int64_t i3 = batch / args.batch2;
        const char* matrix = args.a + (i2 / args.r2) * args.a_nb2 + (i3 / args.r3) * args.a_nb3;
        const Q8Cols act = columns_from(args.values, args.scales, args.k, batch * kCols);
        block_row_dots<Block, kCols, kRows, kWide>(
            matrix, args.a_nb1, row0, args.rows, args.blocks_per_row, act, partial,
            [&](int64_t row, int c, float total) { store_f32(args.dst, Index4{{row, c, i2, i3}}, total); });
    }
}

struct ExpertMatVecArgs {
    const char* as = nullptr;         // the experts' quantized rows
    int64_t as_nb1 = 0, as_nb2 = 0;
    int64_t rows = 0;                 // rows per expert (dst's ne[0])
    int64_t blocks_per_row = 0;
    int64_t experts = 0;
    TensorDesc ids;                   // [n_used, tokens]
    int64_t pairs = 0;                // n_used * tokens
    int64_t b_columns = 1;            // b's columns per token: 1 (shared by the slots) or n_used
    const int8_t* values = nullptr;   // quantized columns of b (ExpertProductPlan)
    const Q8Scale* scales = nullptr;
    int64_t k = 0;
    TensorDesc dst;                   // [rows, n_used, tokens]
    KernelErrorRecord* errors = nullptr;
    int error_slot = 0;
};

// mul_mat_id: block (x, y) dots row x of the expert that pair y (slot + n_used * token) chose with
// the pair's column, as mul_mat_vec_q_kernel does for one row and one column. An out-of-range id
// is reported once and leaves the pair's outputs unwritten.
template <typename Block, bool kWide>
__global__ void __launch_bounds__(kMatVecWarps * kWarpSize) mul_mat_id_vec_q_kernel(ExpertMatVecArgs args) {
    __shared__ float partial[kMatVecWarps][1][1];
    const int64_t row = blockIdx.x;
    const int64_t n_used = args.ids.ne[0];
    for (int64_t p = blockIdx.y; p < args.pairs; p += gridDim.y) {
        const ExpertPair pair = expert_pair(p, n_used, args.b_columns);
        const bool reporter = blockIdx.x == 0 && threadIdx.x == 0;
        const int64_t id = expert_id(args.ids, pair.slot, pair.token, args.experts, args.errors, args.error_slot, reporter);
        if (id < 0) continue;  // the same for the whole block
        const Q8Cols act = columns_from(args.values, args.scales, args.k, pair.b_column);
        block_row_dots<Block, 1, 1, kWide>(
            args.as + id * args.as_nb2, args.as_nb1, row, args.rows, args.blocks_per_row, act, partial,
            [&](int64_t r, int, float total) { store_f32(args.dst, Index4{{r, pair.slot, pair.token, 0}}, total); });
    }
}

// Rows per thread block: one for a single column (a whole GPU of blocks for one weight row each),
// two for more, so that a block's activation loads serve two rows.
template <int kCols>
inline constexpr int kMatVecRows = kCols == 1 ? 1 : 2;

// Calls launch(std::true_type{}) for 16-byte weight loads when `wide` and Block's units have them,
// else launch(std::false_type{}): types without wide loads get one instantiation.
template <typename Block, typename Launch>
void with_wide_loads(bool wide, const Launch& launch) {
    if constexpr (Q8Dot<Block>::kWideLoads) {
        if (wide) return launch(std::true_type{});
    }
    launch(std::false_type{});
}

template <typename Block, int kCols>
Status launch_columns(const LaunchContext& ctx, const MatVecArgs& args, bool wide) {
    constexpr int kRows = kMatVecRows<kCols>;
    const int64_t row_blocks = args.rows / kRows + (args.rows % kRows != 0 ? 1 : 0);
    const dim3 grid(static_cast<unsigned>(row_blocks), static_cast<unsigned>(std::min(args.batches, kMaxGridYZ)));
    with_wide_loads<Block>(wide, [&](auto kWide) {
        mul_mat_vec_q_kernel<Block, kCols, kRows, decltype(kWide)::value><<<grid, kMatVecWarps * kWarpSize, 0, ctx.stream>>>(args);
    });
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

template <typename Block>
Status launch_for_columns(const LaunchContext& ctx, const MatVecArgs& args, int64_t columns, bool wide) {
    static_assert(kMatVecMaxColumns == 8, "one case per column count");
    switch (columns) {
        case 1: return launch_columns<Block, 1>(ctx, args, wide);
        case 2: return launch_columns<Block, 2>(ctx, args, wide);
        case 3: return launch_columns<Block, 3>(ctx, args, wide);
        case 4: return launch_columns<Block, 4>(ctx, args, wide);
        case 5: return launch_columns<Block, 5>(ctx, args, wide);
        case 6: return launch_columns<Block, 6>(ctx, args, wide);
        case 7: return launch_columns<Block, 7>(ctx, args, wide);
        case 8: return launch_columns<Block, 8>(ctx, args, wide);
        default: return Status(StatusCode::Internal, "mul_mat: no mat-vec kernel for " + std::to_string(columns) + " columns");
    }
}

// Where quantize_columns put the columns.
struct ColumnsInScratch {
    const int8_t* values = nullptr;
    const Q8Scale* scales = nullptr;
};

// b's `columns` columns (rows of b, dim 1 fastest) of k values into 8-bit blocks in scratch.
Status quantize_columns(const LaunchContext& ctx, const Tensor& b, int64_t columns, int64_t k,
                        const QuantizedColumns& layout, ColumnsInScratch& placed) {
    if (layout.bytes > ctx.scratch_bytes) {
        return Status(StatusCode::Internal, "the scratch reserved for quantized activations is too small");
    }
    auto* values = reinterpret_cast<int8_t*>(ctx.scratch + layout.values_offset);
    auto* scales = reinterpret_cast<Q8Scale*>(ctx.scratch + layout.scales_offset);
    const int64_t blocks_per_column = k / kQ8Block;
    const int64_t n_blocks = blocks_per_column * columns;
    constexpr int kQuantizeWarps = 8;
    quantize_columns_kernel<<<elementwise_blocks(n_blocks, kQuantizeWarps), kQuantizeWarps * kWarpSize, 0, ctx.stream>>>(
        describe(b), values, scales, blocks_per_column, n_blocks);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    placed.values = values;
    placed.scales = scales;
    return Status::ok();
}

}  // namespace

Status launch_mul_mat_vec_q(const LaunchContext& ctx, const Tensor& dst, const QuantProductPlan& plan) {
    const Tensor& a = *dst.src[0];
    if (plan.rows == 0 || plan.batches == 0 || plan.columns == 0) return Status::ok();
    ColumnsInScratch placed;
    XB_RETURN_IF_ERROR(quantize_columns(ctx, *dst.src[1], plan.columns * plan.batches, plan.k, plan.quantized, placed));

    MatVecArgs args;
    args.a = static_cast<const char*>(a.data);
    args.a_nb1 = static_cast<int64_t>(a.nb[1]);
    args.a_nb2 = static_cast<int64_t>(a.nb[2]);
    args.a_nb3 = static_cast<int64_t>(a.nb[3]);
    args.rows = plan.rows;
    args.blocks_per_row = plan.k / blck_size(a.type);
    args.batches = plan.batches;
    args.batch2 = dst.ne[2];
    args.r2 = plan.r2;
    args.r3 = plan.r3;
    args.values = placed.values;
    args.scales = placed.scales;
    args.k = plan.k;
    args.dst = describe(dst);
    return with_block_type(
        a.type,
        [&](auto tag) { return launch_for_columns<typename decltype(tag)::type>(ctx, args, plan.columns, plan.wide_loads); },
        Status(StatusCode::NotSupported, std::string("mul_mat: no mat-vec kernel for ") + dtype_name(a.type)));
}

Status launch_mul_mat_id_vec_q(const LaunchContext& ctx, const Tensor& dst, const ExpertProductPlan& plan) {
    const Tensor& as = *dst.src[0];
    const Tensor& b = *dst.src[1];
    if (dst.nelements() == 0) return Status::ok();
    if (as.ne[1] > std::numeric_limits<int32_t>::max()) {
        return Status(StatusCode::NotSupported, "mul_mat_id: too many rows per expert for the mat-vec kernel");
    }
    ColumnsInScratch placed;
    XB_RETURN_IF_ERROR(quantize_columns(ctx, b, plan.columns, plan.k, plan.quantized, placed));

    ExpertMatVecArgs args;
    args.as = static_cast<const char*>(as.data);
    args.as_nb1 = static_cast<int64_t>(as.nb[1]);
    args.as_nb2 = static_cast<int64_t>(as.nb[2]);
    args.rows = as.ne[1];
    args.blocks_per_row = plan.k / blck_size(as.type);
    args.experts = plan.experts;
    args.ids = describe(*dst.src[2]);
    args.pairs = plan.pairs;
    args.b_columns = b.ne[1];
    args.values = placed.values;
    args.scales = placed.scales;
    args.k = plan.k;
    args.dst = describe(dst);
    args.errors = ctx.errors;
    args.error_slot = ctx.error_slot;
    const dim3 grid(static_cast<unsigned>(args.rows), static_cast<unsigned>(std::min(plan.pairs, kMaxGridYZ)));
    return launch_for_block_type(
        as.type,
        [&](auto tag) {
            using Block = typename decltype(tag)::type;
            with_wide_loads<Block>(plan.wide_loads, [&](auto kWide) {
                mul_mat_id_vec_q_kernel<Block, decltype(kWide)::value><<<grid, kMatVecWarps * kWarpSize, 0, ctx.stream>>>(args);
            });
            return true;
        },
        StatusCode::Internal, "mul_mat_id: no mat-vec kernel for ");
}

}  // namespace xb::cuda
