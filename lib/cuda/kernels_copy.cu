// Copy and layout kernels: copies with type conversion (dup, cont, cpy and GEMM operand packing),
// repeat, concat, pad, arange, get_rows and set_rows. Copies and get_rows work on row segments
// (launch_config.hpp); repeat, concat, pad and arange take one thread per output element
// (grid-stride); set_rows gives each source row a block.
#include "core/op_params.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernel_common.cuh"
#include "cuda/kernels.hpp"

namespace xb::cuda {

namespace {

// Both tensors in their own logical order: element f of src goes to element f of dst. When the two
// shapes are equal (cont, casts, GEMM packing) that is the element with the same coordinates, found
// per segment; otherwise (a copy that also reshapes) each element unravels its own index in src.
// `paired` (equal shapes, both pairable): two elements at a time.
__global__ void copy_kernel(TensorDesc src, TensorDesc dst, bool same_shape, bool paired, SegmentGrid grid) {
    for (int64_t s = blockIdx.x; s < grid.count; s += gridDim.x) {
        const RowSegment seg = row_segment(dst, grid, s);
        char* d_row = element_address(dst, seg.row);
        if (paired) {
            const char* s_row = element_address(src, seg.row);
            const bool same_type = src.type == dst.type;
            for (int64_t i0 = seg.begin + 2 * threadIdx.x; i0 < seg.end; i0 += 2 * blockDim.x) {
                const char* from = at(s_row, i0, src.nb[0]);
                char* to = at(d_row, i0, dst.nb[0]);
                if (!same_type) {
                    store_pair_from_f32(dst.type, to, load_pair_f32(src.type, from));
                } else if (element_bytes(src.type) == 2) {  // bit for bit, NaN payloads too
                    *reinterpret_cast<uint32_t*>(to) = *reinterpret_cast<const uint32_t*>(from);
                } else {
                    *reinterpret_cast<uint64_t*>(to) = *reinterpret_cast<const uint64_t*>(from);
                }
            }
            continue;
        }
        if (same_shape) {
            const char* s_row = element_address(src, seg.row);
            for (int64_t i0 = seg.begin + threadIdx.x; i0 < seg.end; i0 += blockDim.x) {
                copy_element(src.type, at(s_row, i0, src.nb[0]), dst.type, at(d_row, i0, dst.nb[0]));
            }
            continue;
        }
        const int64_t row = s / grid.per_row;
        for (int64_t i0 = seg.begin + threadIdx.x; i0 < seg.end; i0 += blockDim.x) {
            const char* from = element_address(src, unravel(src, row * grid.row_length + i0));
            copy_element(src.type, from, dst.type, at(d_row, i0, dst.nb[0]));
        }
    }
}

// A copy between float tensors of one shape whose source has dim 1 contiguous and dim 0 strided (a
// transposed view made contiguous): 32 x 32 tiles are read along dim 1 and written along dim 0
// through shared memory, so that both sides are coalesced. Values pass through f32, which is exact
// for the float types.
constexpr int kTile = 32;
constexpr int kTileRows = 8;  // blockDim.y: each thread moves kTile / kTileRows elements of a tile

__global__ void transpose_copy_kernel(TensorDesc src, TensorDesc dst, int64_t tiles0, int64_t tiles1) {
    __shared__ float tile[kTile][kTile + 1];  // +1: the column reads hit distinct banks
    const int64_t per_plane = tiles0 * tiles1;
    const int64_t tiles = per_plane * src.ne[2] * src.ne[3];
    const int tx = static_cast<int>(threadIdx.x);
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t plane = t / per_plane;
        const int64_t t1 = (t - plane * per_plane) / tiles0;
        const int64_t t0 = t - plane * per_plane - t1 * tiles0;
        const int64_t i2 = plane % src.ne[2];
        const int64_t i3 = plane / src.ne[2];
        for (int r = static_cast<int>(threadIdx.y); r < kTile; r += kTileRows) {
            const int64_t i0 = t0 * kTile + r;
            const int64_t i1 = t1 * kTile + tx;
            if (i0 < src.ne[0] && i1 < src.ne[1]) tile[r][tx] = load_f32(src, Index4{{i0, i1, i2, i3}});
        }
        __syncthreads();
        for (int r = static_cast<int>(threadIdx.y); r < kTile; r += kTileRows) {
            const int64_t i0 = t0 * kTile + tx;
            const int64_t i1 = t1 * kTile + r;
            if (i0 < src.ne[0] && i1 < src.ne[1]) store_f32(dst, Index4{{i0, i1, i2, i3}}, tile[tx][r]);
        }
        __syncthreads();  // the next tile overwrites what this one's writers read
    }
}

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

__global__ void repeat_kernel(TensorDesc src, TensorDesc dst, int64_t n) {
    for (int64_t f = thread_index(); f < n; f += thread_count()) {
        const Index4 i = unravel(dst, f);
        copy_element(src.type, element_address(src, wrap(src, i)), dst.type, element_address(dst, i));
    }
}

// a_extent: a's size along `dim` (read on the host, as a.ne[dim] here would put `a` in local memory).
__global__ void concat_kernel(TensorDesc a, TensorDesc b, TensorDesc dst, int dim, int64_t a_extent, int64_t n) {
    for (int64_t f = thread_index(); f < n; f += thread_count()) {
        const Index4 i = unravel(dst, f);
        const int64_t along = at_dim(i, dim);
        const char* src = along < a_extent ? element_address(a, i) : element_address(b, with_dim(i, dim, along - a_extent));
        copy_element(dst.type, src, dst.type, element_address(dst, i));
    }
}

__global__ void pad_kernel(TensorDesc src, TensorDesc dst, int64_t n) {
    for (int64_t f = thread_index(); f < n; f += thread_count()) {
        const Index4 i = unravel(dst, f);
        const bool inside = i.i[0] < src.ne[0] && i.i[1] < src.ne[1] && i.i[2] < src.ne[2] && i.i[3] < src.ne[3];
        if (inside) {
            copy_element(src.type, element_address(src, i), dst.type, element_address(dst, i));
        } else {
            zero_element(dst.type, element_address(dst, i));
        }
    }
}

__global__ void arange_kernel(TensorDesc dst, float start, float step, int64_t n) {
    for (int64_t f = thread_index(); f < n; f += thread_count()) {
        store_f32(dst, unravel(dst, f), start + step * static_cast<float>(f));
    }
}

// dst row (i1, i2, i3) is row rows[i1, i2, i3] of src matrix (i2, i3). Rows with an index out of
// range are reported and left as they are (as the CPU does).
__global__ void get_rows_kernel(TensorDesc src, TensorDesc rows, TensorDesc dst, KernelErrorRecord* errors, int slot,
                                SegmentGrid grid) {
    for (int64_t s = blockIdx.x; s < grid.count; s += gridDim.x) {
        const RowSegment seg = row_segment(dst, grid, s);
        const Index4& i = seg.row;
        const int64_t row = load_index(rows, Index4{{i.i[1], i.i[2], i.i[3], 0}});
        if (row < 0 || row >= src.ne[1]) {
            if (seg.begin == 0 && threadIdx.x == 0) report_index_error(errors, slot, row, src.ne[1]);
            continue;
        }
        const char* s_row = element_address(src, with_dim(i, 1, row));
        char* d_row = element_address(dst, i);
        for (int64_t i0 = seg.begin + threadIdx.x; i0 < seg.end; i0 += blockDim.x) {
            copy_element(src.type, at(s_row, i0, src.nb[0]), dst.type, at(d_row, i0, dst.nb[0]));
        }
    }
}

// Each block takes source rows (i, i2, i3) in turn and writes row rows[i, i2 % r2, i3 % r3] of dst
// matrix (i2, i3). When an index repeats within a matrix only its last source row is written, so
// the result is the sequential loop's (the CPU's), whatever order blocks run in.
__global__ void set_rows_kernel(TensorDesc src, TensorDesc rows, TensorDesc dst, KernelErrorRecord* errors, int slot) {
    const int64_t m = src.ne[1];
    const int64_t units = src.ne[1] * src.ne[2] * src.ne[3];
    for (int64_t unit = blockIdx.x; unit < units; unit += gridDim.x) {
        const Index4 s = row_start(src, unit);
        const int64_t r2 = s.i[2] % rows.ne[1];
        const int64_t r3 = s.i[3] % rows.ne[2];
        const int64_t target = load_index(rows, Index4{{s.i[1], r2, r3, 0}});
        bool overwritten_later = false;
        for (int64_t j = s.i[1] + 1 + threadIdx.x; j < m; j += blockDim.x) {
            overwritten_later = overwritten_later || load_index(rows, Index4{{j, r2, r3, 0}}) == target;
        }
        if (__syncthreads_or(overwritten_later)) continue;  // uniform over the block
        if (target < 0 || target >= dst.ne[1]) {
            if (threadIdx.x == 0) report_index_error(errors, slot, target, dst.ne[1]);
            continue;
        }
        for (int64_t i0 = threadIdx.x; i0 < src.ne[0]; i0 += blockDim.x) {
            const Index4 from = with_dim(s, 0, i0);
            const Index4 to{{i0, target, s.i[2], s.i[3]}};
            copy_element(src.type, element_address(src, from), dst.type, element_address(dst, to));
        }
    }
}

}  // namespace

Status launch_copy(const LaunchContext& ctx, const TensorDesc& src, const TensorDesc& dst) {
    if (element_count(dst) == 0) return Status::ok();
    bool same_shape = true;
    for (int k = 0; k < kMaxDims; ++k) same_shape = same_shape && src.ne[k] == dst.ne[k];
    const bool transposed = same_shape && is_float(src.type) && is_float(dst.type) &&
                            src.nb[1] == element_bytes(src.type) && src.nb[0] != src.nb[1] &&
                            dst.nb[0] == element_bytes(dst.type) && src.ne[1] > 1;
    if (transposed) {
        const int64_t tiles0 = src.ne[0] / kTile + (src.ne[0] % kTile != 0 ? 1 : 0);
        const int64_t tiles1 = src.ne[1] / kTile + (src.ne[1] % kTile != 0 ? 1 : 0);
        const int blocks = row_blocks(tiles0 * tiles1 * src.ne[2] * src.ne[3]);
        transpose_copy_kernel<<<blocks, dim3(kTile, kTileRows), 0, ctx.stream>>>(src, dst, tiles0, tiles1);
        XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
        return Status::ok();
    }
    const SegmentGrid grid = row_segments(dst.ne[0], row_count(dst));
    const bool paired = same_shape && pairable(src) && pairable(dst);
    copy_kernel<<<segment_blocks(grid), kBlockSize, 0, ctx.stream>>>(src, dst, same_shape, paired, grid);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_repeat(const LaunchContext& ctx, const Tensor& dst) {
    const int64_t n = dst.nelements();
    repeat_kernel<<<elementwise_blocks(n), kBlockSize, 0, ctx.stream>>>(describe(*dst.src[0]), describe(dst), n);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_concat(const LaunchContext& ctx, const Tensor& dst) {
    const int64_t n = dst.nelements();
    const int dim = ConcatParams::load(dst).dim;
    concat_kernel<<<elementwise_blocks(n), kBlockSize, 0, ctx.stream>>>(describe(*dst.src[0]), describe(*dst.src[1]),
                                                                        describe(dst), dim, dst.src[0]->ne[dim], n);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_pad(const LaunchContext& ctx, const Tensor& dst) {
    const int64_t n = dst.nelements();
    pad_kernel<<<elementwise_blocks(n), kBlockSize, 0, ctx.stream>>>(describe(*dst.src[0]), describe(dst), n);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_arange(const LaunchContext& ctx, const Tensor& dst) {
    const int64_t n = dst.nelements();
    const ArangeParams p = ArangeParams::load(dst);
    arange_kernel<<<elementwise_blocks(n), kBlockSize, 0, ctx.stream>>>(describe(dst), p.start, p.step, n);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_get_rows(const LaunchContext& ctx, const Tensor& dst) {
    const SegmentGrid grid = row_segments(dst.ne[0], dst.nrows());
    get_rows_kernel<<<segment_blocks(grid), kBlockSize, 0, ctx.stream>>>(
        describe(*dst.src[0]), describe(*dst.src[1]), describe(dst), ctx.errors, ctx.error_slot, grid);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

Status launch_set_rows(const LaunchContext& ctx, const Tensor& dst) {
    const Tensor& src = *dst.src[0];
    if (src.is_empty()) return Status::ok();
    const int block = reduction_block_size(src.ne[0]);
    set_rows_kernel<<<row_blocks(src.nrows()), block, 0, ctx.stream>>>(describe(src), describe(*dst.src[1]),
                                                                       describe(dst), ctx.errors, ctx.error_slot);
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

}  // namespace xb::cuda
