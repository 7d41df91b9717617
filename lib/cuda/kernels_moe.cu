// Kernels of the mixture-of-experts ops: mul_mat_id, add_id, and argsort (the router's top_k).
//
// mul_mat_id (expert_products.hpp says which path):
//   - float experts: one warp per output (row i of the expert that ids[slot, token] names, pair),
//     its lanes taking the row's values in turn against the pair's column of b;
//   - quantized experts, few tokens: kernels_mat_vec_q.cu's integer mat-vec over (row, pair);
//   - quantized experts, many tokens: the pairs grouped by expert on the device (one block
//     counting, then placing them, into scratch), then kernels_mat_mat_q.cu's expert tiles.
// The ids stay on the device. An id out of [0, n_as) is reported through the kernel error record
// and its outputs are left unwritten, as on the CPU.
//
// argsort ranks: a thread per element counts the elements of its row that come before it in
// argsort_before's total order (core/op_math.hpp, shared with the CPU), which is the element's
// place in the sorted row. O(n^2) per row, for the router's rows (experts: up to a few hundred);
// supports_node leaves rows longer than kArgsortMaxRow to the CPU.
#include "core/op_math.hpp"
#include "core/op_params.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/expert_ids.cuh"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"

namespace xb::cuda {

namespace {

constexpr int kMoeWarpsPerBlock = kBlockSize / kWarpSize;

// Float experts: one warp per output (i, pair), pairs numbered slot fastest; the lanes take the
// row's values in turn against the pair's column of b, then a warp reduction.
__global__ void mul_mat_id_float_kernel(TensorDesc as, TensorDesc b, TensorDesc ids, TensorDesc dst,
                                        KernelErrorRecord* errors, int slot) {
    const int64_t m = as.ne[1];
    const int64_t k = as.ne[0];
    const int64_t n_used = ids.ne[0];
    const int64_t outputs = m * n_used * ids.ne[1];
    const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
    for (int64_t o = static_cast<int64_t>(blockIdx.x) * kMoeWarpsPerBlock + threadIdx.x / kWarpSize; o < outputs;
         o += static_cast<int64_t>(gridDim.x) * kMoeWarpsPerBlock) {
        const int64_t i = o % m;
        const int64_t e = (o / m) % n_used;
        const int64_t t = o / m / n_used;
        const int64_t id = expert_id(ids, e, t, as.ne[2], errors, slot, i == 0 && lane == 0);
        if (id < 0) continue;
        const char* row = row_address(as, i, id, 0);
        const char* col = row_address(b, e % b.ne[1], t, 0);
        float sum = 0.0f;
        for (int64_t l = lane; l < k; l += kWarpSize) {
            sum += load_as_f32(as.type, row + l * as.nb[0]) * load_as_f32(b.type, col + l * b.nb[0]);
        }
        sum = warp_reduce(sum, SumOp{});
        if (lane == 0) store_f32(dst, Index4{{i, e, t, 0}}, sum);
    }
}

constexpr int kGroupThreads = 1024;

// Groups the pairs p = slot + n_used * token by expert: counts per expert in shared memory, their
// running sums as pair_start and (in whole tiles of kTileColumns) tile_start, then each pair placed
// after its expert's start (in no set order: each output is a column of its own, so the order
// changes no value). One block of kGroupThreads; an id out of range is reported and left out.
__global__ void __launch_bounds__(kGroupThreads)
    group_expert_pairs_kernel(TensorDesc ids, int64_t n_as, ExpertGroups groups, KernelErrorRecord* errors, int slot) {
    extern __shared__ int32_t per_expert[];  // n_as counts, then each expert's next free place
    const int64_t n_used = ids.ne[0];
    const int64_t pairs = n_used * ids.ne[1];
    for (int64_t e = threadIdx.x; e < n_as; e += blockDim.x) per_expert[e] = 0;
    __syncthreads();
    for (int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
        const int64_t id = expert_id(ids, p % n_used, p / n_used, n_as, errors, slot, true);
        if (id >= 0) atomicAdd(&per_expert[id], 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int32_t pair_sum = 0;
        int32_t tile_sum = 0;
        for (int64_t e = 0; e < n_as; ++e) {
            const int32_t count = per_expert[e];
            groups.pair_start[e] = pair_sum;
            groups.tile_start[e] = tile_sum;
            per_expert[e] = pair_sum;
            pair_sum += count;
            tile_sum += expert_tiles(count);
        }
        groups.pair_start[n_as] = pair_sum;
        groups.tile_start[n_as] = tile_sum;
    }
    __syncthreads();
    for (int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
        const int64_t id = expert_id(ids, p % n_used, p / n_used, n_as, errors, slot, false);
        if (id >= 0) groups.pairs[atomicAdd(&per_expert[id], 1)] = static_cast<int32_t>(p);
    }
}

// One thread per element of dst: a + the bias row of the element's expert.
__global__ void add_id_kernel(TensorDesc a, TensorDesc b, TensorDesc ids, TensorDesc dst, KernelErrorRecord* errors,
                              int slot, int64_t n) {
    for (int64_t f = thread_index(); f < n; f += thread_count()) {
        const Index4 idx = unravel(dst, f);
        const int64_t id = expert_id(ids, idx.i[1], idx.i[2], b.ne[1], errors, slot, idx.i[0] == 0);
        if (id < 0) continue;
        store_f32(dst, idx, load_f32(a, idx) + load_f32(b, Index4{{idx.i[0], id, 0, 0}}));
    }
}

// One thread per element of src: its rank in its row is where its index goes.
__global__ void argsort_kernel(TensorDesc src, TensorDesc dst, SortOrder order, int64_t n) {
    const int64_t len = src.ne[0];
    for (int64_t f = thread_index(); f < n; f += thread_count()) {
        const Index4 idx = unravel(src, f);
        const int64_t j = idx.i[0];
        const float v = load_f32(src, idx);
        int64_t rank = 0;
        for (int64_t l = 0; l < len; ++l) {
            if (argsort_before(order, load_f32(src, with_dim(idx, 0, l)), l, v, j)) ++rank;
        }
        *reinterpret_cast<int32_t*>(element_address(dst, with_dim(idx, 0, rank))) = static_cast<int32_t>(j);
    }
}

int warp_blocks(int64_t warps) { return elementwise_blocks(warps * kWarpSize); }

}  // namespace

Status launch_mul_mat_id(const LaunchContext& ctx, const Tensor& dst) {
    const int64_t outputs = dst.nelements();
    if (outputs == 0) return Status::ok();
    const ExpertProductPlan plan = plan_expert_product(dst);
    switch (plan.path) {
        case ExpertProductPath::Tiles: {
            if (plan.scratch_bytes > ctx.scratch_bytes) {
                return Status(StatusCode::Internal, "mul_mat_id: the scratch reserved for the expert groups is too small");
            }
            ExpertGroups groups;
            groups.pair_start = reinterpret_cast<int32_t*>(ctx.scratch + plan.pair_start_offset);
            groups.tile_start = reinterpret_cast<int32_t*>(ctx.scratch + plan.tile_start_offset);
            groups.pairs = reinterpret_cast<int32_t*>(ctx.scratch + plan.pairs_offset);
            const size_t shared = static_cast<size_t>(plan.experts) * sizeof(int32_t);
            group_expert_pairs_kernel<<<1, kGroupThreads, shared, ctx.stream>>>(describe(*dst.src[2]), plan.experts, groups,
                                                                               ctx.errors, ctx.error_slot);
            XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
            return launch_mul_mat_id_tiles(ctx, dst, plan, groups);
        }
        case ExpertProductPath::MatVec:
            return launch_mul_mat_id_vec_q(ctx, dst, plan);
        case ExpertProductPath::PerPair:
            break;
    }
    mul_mat_id_float_kernel<<<warp_blocks(outputs), kBlockSize, 0, ctx.stream>>>(
        describe(*dst.src[0]), describe(*dst.src[1]), describe(*dst.src[2]), describe(dst), ctx.errors, ctx.error_slot);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_add_id(const LaunchContext& ctx, const Tensor& dst) {
    const int64_t n = dst.nelements();
    if (n == 0) return Status::ok();
    add_id_kernel<<<elementwise_blocks(n), kBlockSize, 0, ctx.stream>>>(
        describe(*dst.src[0]), describe(*dst.src[1]), describe(*dst.src[2]), describe(dst), ctx.errors, ctx.error_slot, n);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_argsort(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    const int64_t n = src.nelements();
    if (n == 0) return Status::ok();
    argsort_kernel<<<elementwise_blocks(n), kBlockSize, 0, ctx.stream>>>(describe(src), describe(dst),
                                                                          ArgsortParams::load(dst).order, n);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

}  // namespace xb::cuda
