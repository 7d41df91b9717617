// The CUDA backend's host-side logic, which needs no GPU: launch sizes, tensor descriptors and their
// stride arithmetic, the GEMM plan, supports_op, settings and error messages. These run wherever the
// library is built with CUDA (CI compiles it with nvcc and has no GPU); the tests that need a GPU
// are in test_cuda_device.cpp.
#include <gtest/gtest.h>

#include "gpu_required.hpp"

#if defined(XB_HAVE_CUDA)

#include <climits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "core/context.hpp"
#include "core/ops.hpp"
#include "core/quant_int_dot.hpp"
#include "cuda/cublas_library.hpp"
#include "cuda/cuda.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_error.hpp"
#include "cuda/cuda_settings.hpp"
#include "cuda/cuda_support.hpp"
#include "cuda/expert_products.hpp"
#include "cuda/gemm_plan.hpp"
#include "cuda/kernel_errors.hpp"
#include "cuda/launch_config.hpp"
#include "cuda/quant_products.hpp"
#include "cuda/tensor_desc.hpp"

namespace xb::cuda {
namespace {

// --- launch sizes --------------------------------------------------------------------------------

TEST(CudaLaunch, ElementwiseBlocksCoverEveryItemUpToTheCap) {
    EXPECT_EQ(elementwise_blocks(0), 1);
    EXPECT_EQ(elementwise_blocks(1), 1);
    EXPECT_EQ(elementwise_blocks(kBlockSize), 1);
    EXPECT_EQ(elementwise_blocks(kBlockSize + 1), 2);
    EXPECT_EQ(elementwise_blocks(1000, 128), 8);
    // Past the cap the kernels' grid-stride loops cover the rest: 64-bit sizes never overflow.
    EXPECT_EQ(elementwise_blocks(int64_t{1} << 40), kMaxBlocks);
    EXPECT_EQ(elementwise_blocks(INT64_MAX), kMaxBlocks);
}

TEST(CudaLaunch, RowBlocksAndReductionBlockSizes) {
    EXPECT_EQ(row_blocks(0), 1);
    EXPECT_EQ(row_blocks(7), 7);
    EXPECT_EQ(row_blocks(int64_t{1} << 33), kMaxBlocks);
    EXPECT_EQ(reduction_block_size(0), kWarpSize);
    EXPECT_EQ(reduction_block_size(1), kWarpSize);
    EXPECT_EQ(reduction_block_size(32), 32);
    EXPECT_EQ(reduction_block_size(33), 64);
    EXPECT_EQ(reduction_block_size(67), 128);
    EXPECT_EQ(reduction_block_size(1024), 1024);
    EXPECT_EQ(reduction_block_size(100000), kMaxBlockSize);
    EXPECT_EQ(reduction_block_size(100000, kRowBlockSize), kRowBlockSize);
    EXPECT_EQ(reduction_block_size(100, kRowBlockSize), 128);
    for (int64_t n : {1, 5, 31, 100, 513, 4096}) {
        const int b = reduction_block_size(n);
        EXPECT_EQ(b % kWarpSize, 0) << n;       // block reductions work warp by warp
        EXPECT_EQ(b & (b - 1), 0) << n;         // a power of two
    }
}

TEST(CudaLaunch, RowSegmentsCoverEveryElementOnce) {
    EXPECT_EQ(row_segments(0, 5).count, 0);
    EXPECT_EQ(row_segments(7, 0).count, 0);
    const SegmentGrid small = row_segments(7, 3);
    EXPECT_EQ(small.per_row, 1);
    EXPECT_EQ(small.count, 3);
    const SegmentGrid exact = row_segments(2 * kSegmentLength, 5);
    EXPECT_EQ(exact.per_row, 2);
    EXPECT_EQ(exact.count, 10);
    const SegmentGrid odd = row_segments(2 * kSegmentLength + 1, 5);
    EXPECT_EQ(odd.per_row, 3);  // a short last segment
    EXPECT_EQ(segment_blocks(odd), 15);
    EXPECT_EQ(segment_blocks(row_segments(kSegmentLength, int64_t{1} << 40)), kMaxBlocks);
    EXPECT_EQ(segment_blocks(row_segments(0, 0)), 1);
}

TEST(CudaLaunch, FlashKeySplitsFillTheGpuWithChunksOfSeveralKeys) {
    EXPECT_EQ(flash_splits(32, 13), 1);                   // few keys: one warp per row
    EXPECT_EQ(flash_splits(32, kFlashMinChunk), 1);
    EXPECT_EQ(flash_splits(32, 1024), 1024 / kFlashMinChunk);  // decoding: limited by the chunk size
    EXPECT_EQ(flash_splits(4096, 1024), kFlashTargetWarps / 4096);  // a long prompt: by the warps
    EXPECT_EQ(flash_splits(kFlashTargetWarps * 2, 1024), 1);
    EXPECT_EQ(flash_splits(0, 1024), 1);
    for (int64_t rows : {1, 7, 300}) {
        for (int64_t n_kv : {33, 129, 1000, 100000}) {
            const int64_t s = flash_splits(rows, n_kv);
            EXPECT_GE(s, 1);
            EXPECT_GE(n_kv / s, kFlashMinChunk) << rows << " " << n_kv;
        }
    }
    EXPECT_EQ(flash_partial_bytes(10, 1, 128), 0u);
    EXPECT_EQ(flash_partial_bytes(10, 4, 128), 10u * 4u * 130u * sizeof(float));
    // The combine kernel's weights are read as whole 16-byte vectors: 2 splits take 4 floats.
    EXPECT_EQ(flash_combine_shared_bytes(2), 4 * sizeof(float));
    EXPECT_EQ(flash_combine_shared_bytes(4), 4 * sizeof(float));
    EXPECT_EQ(flash_combine_shared_bytes(5), 8 * sizeof(float));
    EXPECT_EQ(flash_combine_shared_bytes(kFlashMaxSplits), kFlashMaxSplits * sizeof(float));
}

// soft_max rows live in registers up to 8 accesses of each of 1024 threads: 128 threads with the
// fewest accesses each where that covers the row, more threads past it.
TEST(CudaLaunch, SoftMaxRowsInRegisters) {
    EXPECT_FALSE(soft_max_launch(0, 4).fits);
    const SoftMaxLaunch tiny = soft_max_launch(7, 1);
    EXPECT_TRUE(tiny.fits);
    EXPECT_EQ(tiny.threads, kWarpSize);
    EXPECT_EQ(tiny.per_thread, 1);
    const SoftMaxLaunch row4k = soft_max_launch(4096, 4);  // 1024 float4 accesses
    EXPECT_TRUE(row4k.fits);
    EXPECT_EQ(row4k.threads, 128);
    EXPECT_EQ(row4k.per_thread, 8);
    const SoftMaxLaunch vocab = soft_max_launch(32000, 4);  // 8000 accesses: 1024 threads x 8
    EXPECT_TRUE(vocab.fits);
    EXPECT_EQ(vocab.threads, kMaxBlockSize);
    EXPECT_FALSE(soft_max_launch(32769, 4).fits);
    EXPECT_FALSE(soft_max_launch(8193, 1).fits);
    for (int64_t n : {1, 31, 33, 127, 129, 500, 1000, 2049, 8192}) {
        for (int width : {1, 4}) {
            const SoftMaxLaunch l = soft_max_launch(n, width);
            if (!l.fits) continue;
            const int64_t accesses = (n + width - 1) / width;
            EXPECT_GE(static_cast<int64_t>(l.threads) * l.per_thread, accesses) << n << " " << width;
            EXPECT_EQ(l.threads % kWarpSize, 0);
            EXPECT_LE(l.per_thread, kSoftMaxMaxPerThread);
        }
    }
}

// Decoding (a few query rows per head, head sizes of the vector kernel's templates, 16-byte K/V
// rows) takes the vector kernel, its keys cut into chunks of whole 64-key steps, enough blocks to
// fill the GPU; every other shape the general kernel.
TEST(CudaLaunch, FlashPlanPicksTheVectorKernelForDecoding) {
    FlashShape decode;
    decode.d = decode.dv = 128;
    decode.n_q = 1;
    decode.n_head = 32;
    decode.n_seq = 1;
    decode.n_kv = 4096;
    decode.kv_vectors = true;
    const FlashPlan p = plan_flash(decode);
    EXPECT_TRUE(p.vector);
    EXPECT_EQ(p.rows_per_block, 1);
    EXPECT_EQ(p.splits, 32);  // 32 heads x 32 chunks of 128 keys: 1024 blocks
    EXPECT_EQ(p.chunk, 128);
    EXPECT_EQ(p.partial_bytes, flash_partial_bytes(32, 32, 128));

    for (int64_t d : {64, 80, 96, 112, 256}) {
        FlashShape s = decode;
        s.d = s.dv = d;
        EXPECT_TRUE(plan_flash(s).vector) << d;
    }
    FlashShape rows3 = decode;
    rows3.n_q = 3;
    EXPECT_EQ(plan_flash(rows3).rows_per_block, 4);
    rows3.n_q = 2;
    EXPECT_EQ(plan_flash(rows3).rows_per_block, 2);

    FlashShape other = decode;
    other.n_q = kFlashVecMaxRows + 1;  // a prompt
    EXPECT_FALSE(plan_flash(other).vector);
    EXPECT_EQ(plan_flash(other).splits, flash_splits(other.n_q * other.n_head, other.n_kv));
    other = decode;
    other.dv = 64;  // v's head size differs
    EXPECT_FALSE(plan_flash(other).vector);
    other = decode;
    other.d = other.dv = 72;  // no template
    EXPECT_FALSE(plan_flash(other).vector);
    other = decode;
    other.kv_vectors = false;  // K or V rows not 16-byte aligned
    EXPECT_FALSE(plan_flash(other).vector);

    FlashShape short_kv = decode;
    short_kv.n_kv = 100;  // fewer keys than a chunk: one split, no partial results
    EXPECT_EQ(plan_flash(short_kv).splits, 1);
    EXPECT_EQ(plan_flash(short_kv).partial_bytes, 0u);
    // Chunks cover every key once, whatever the shape.
    for (int64_t n_kv : {1, 63, 64, 65, 1000, 4097, 131072}) {
        for (int64_t heads : {1, 8, 64}) {
            FlashShape s = decode;
            s.n_kv = n_kv;
            s.n_head = heads;
            const FlashPlan f = plan_flash(s);
            EXPECT_GE(f.splits * f.chunk, n_kv) << n_kv << " " << heads;
            EXPECT_LT((f.splits - 1) * f.chunk, n_kv) << n_kv << " " << heads;
            EXPECT_EQ(f.chunk % kFlashVecChunkStep, 0);
            EXPECT_LE(f.splits, kFlashMaxSplits);
        }
    }
}

TEST(CudaLaunch, FlashAttentionSharedMemoryPerWarp) {
    EXPECT_EQ(flash_bytes_per_warp(128, 128), 1024u);
    EXPECT_TRUE(flash_head_sizes_fit(128, 128));
    EXPECT_TRUE(flash_head_sizes_fit(6144, 6144));   // exactly 48 KiB
    EXPECT_FALSE(flash_head_sizes_fit(6144, 6145));
    const WarpLaunch small = flash_launch(128, 128, 1000);
    EXPECT_EQ(small.warps_per_block, 4);
    EXPECT_EQ(small.blocks, 250);
    EXPECT_EQ(small.shared_bytes, 4096u);
    const WarpLaunch big = flash_launch(4096, 4096, 3);
    EXPECT_EQ(big.warps_per_block, 1);
    EXPECT_EQ(big.blocks, 3);
    EXPECT_EQ(big.shared_bytes, 32768u);
    EXPECT_LE(flash_launch(6144, 6144, 1).shared_bytes, kMaxSharedBytes);
}

// --- tensor descriptors --------------------------------------------------------------------------

// Every element's address through the descriptor (flat index -> coordinates -> bytes) is the
// tensor's own element address, visited in logical order.
void expect_same_addresses(const Tensor& t) {
    const TensorDesc d = describe(t);
    EXPECT_EQ(element_count(d), t.nelements());
    int64_t flat = 0;
    for (int64_t i3 = 0; i3 < t.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < t.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < t.ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < t.ne[0]; ++i0, ++flat) {
                    const Index4 idx = unravel(d, flat);
                    ASSERT_EQ(idx.i[0], i0);
                    ASSERT_EQ(idx.i[3], i3);
                    ASSERT_EQ(static_cast<void*>(element_address(d, idx)),
                              static_cast<void*>(t.element_ptr(i0, i1, i2, i3)))
                        << t.display_name() << " at flat " << flat;
                }
}

TEST(CudaTensorDesc, PairableNeedsAFloatTypeEvenContiguousRowsAndAlignedStarts) {
    alignas(16) static char storage[4096];
    const TensorDesc f16 = packed_desc(storage, DType::F16, {64, 3, 2, 1});
    EXPECT_TRUE(pairable(f16));
    EXPECT_TRUE(pairable(packed_desc(storage, DType::F32, {2, 5, 1, 1})));
    EXPECT_FALSE(pairable(packed_desc(storage, DType::F16, {63, 3, 1, 1})));       // odd rows
    EXPECT_FALSE(pairable(packed_desc(storage, DType::I32, {64, 3, 1, 1})));       // not a float type
    EXPECT_FALSE(pairable(packed_desc(storage + 2, DType::F16, {64, 3, 1, 1})));   // start not on a pair
    EXPECT_TRUE(pairable(packed_desc(storage + 4, DType::F16, {64, 3, 1, 1})));
    TensorDesc strided = f16;
    strided.nb[0] = 4;  // every other element
    EXPECT_FALSE(pairable(strided));
    TensorDesc odd_rows = f16;
    odd_rows.nb[1] = 130;  // rows 65 elements apart
    EXPECT_FALSE(pairable(odd_rows));
    odd_rows.ne[1] = 1;    // a row stride that is never used does not matter
    odd_rows.nb[2] = 132;
    EXPECT_TRUE(pairable(odd_rows));
}

TEST(CudaTensorDesc, StridesOfContiguousPermutedTransposedAndOffsetViews) {
    Context ctx({.alloc_data = true});
    Tensor* x = ctx.new_tensor(DType::F16, {9, 8, 4, 3});
    x->name = "x";
    expect_same_addresses(*x);
    Tensor* p = permute(ctx, x, {2, 0, 3, 1});
    expect_same_addresses(*p);
    Tensor* t = transpose(ctx, x);
    expect_same_addresses(*t);
    Tensor* v = view(ctx, x, {5, 3, 2, 1}, {x->nb[1], x->nb[2], x->nb[3]}, 1 * x->nb[0] + 2 * x->nb[1] + x->nb[2]);
    expect_same_addresses(*v);
    EXPECT_EQ(describe(*v).data, static_cast<char*>(x->data) + v->view_offs);
}

TEST(CudaTensorDesc, RowStartsWrapAndElementSizes) {
    Context ctx({.alloc_data = true});
    Tensor* a = ctx.new_tensor(DType::F32, {13, 6, 4, 3});
    const TensorDesc d = describe(*a);
    EXPECT_EQ(row_count(d), 6 * 4 * 3);
    int64_t row = 0;
    for (int64_t i3 = 0; i3 < 3; ++i3)
        for (int64_t i2 = 0; i2 < 4; ++i2)
            for (int64_t i1 = 0; i1 < 6; ++i1, ++row) {
                const Index4 r = row_start(d, row);
                EXPECT_EQ(r.i[0], 0);
                EXPECT_EQ(r.i[1], i1);
                EXPECT_EQ(r.i[2], i2);
                EXPECT_EQ(r.i[3], i3);
            }
    // b [13, 3, 2, 1] tiled over a: every coordinate wraps around b's size (ggml's repeat rule).
    Tensor* b = ctx.new_tensor(DType::F32, {13, 3, 2, 1});
    const Index4 w = wrap(describe(*b), Index4{{12, 5, 3, 2}});
    EXPECT_EQ(w.i[0], 12);
    EXPECT_EQ(w.i[1], 2);
    EXPECT_EQ(w.i[2], 1);
    EXPECT_EQ(w.i[3], 0);
    // with_dim and at_dim (a runtime dimension, as concat's) touch that coordinate alone.
    const Index4 c{{10, 11, 12, 13}};
    for (int dim = 0; dim < kMaxDims; ++dim) {
        EXPECT_EQ(at_dim(c, dim), 10 + dim);
        const Index4 set = with_dim(c, dim, -1);
        for (int k = 0; k < kMaxDims; ++k) EXPECT_EQ(set.i[k], k == dim ? -1 : 10 + k) << dim << " " << k;
    }
    for (int t = 0; t < kDTypeCount; ++t) {
        const auto type = static_cast<DType>(t);
        // Quantized types have no per-element size: their kernels address whole blocks.
        EXPECT_EQ(static_cast<size_t>(element_bytes(type)), is_quantized(type) ? 0 : type_size(type)) << dtype_name(type);
    }
}

TEST(CudaTensorDesc, PackedDescriptorsAreContiguous) {
    const std::array<int64_t, kMaxDims> ne{67, 5, 3, 2};
    const TensorDesc d = packed_desc(nullptr, DType::BF16, ne);
    const auto nb = contiguous_strides(DType::BF16, ne);
    for (int k = 0; k < kMaxDims; ++k) EXPECT_EQ(static_cast<size_t>(d.nb[k]), nb[k]);
}

// --- error messages --------------------------------------------------------------------------------

TEST(CudaErrors, SourcePathsAreShortened) {
    EXPECT_EQ(short_source_path("/home/ci/work/main/lib/cuda/cuda_buffer.cpp"), "lib/cuda/cuda_buffer.cpp");
    EXPECT_EQ(short_source_path("/x/tests/cuda/test_cuda_host.cpp"), "tests/cuda/test_cuda_host.cpp");
    EXPECT_EQ(short_source_path("lib/cuda/matmul.cpp"), "lib/cuda/matmul.cpp");
    EXPECT_EQ(short_source_path("/tmp/other/kernel.cu"), "kernel.cu");
    EXPECT_EQ(short_source_path("kernel.cu"), "kernel.cu");
}

TEST(CudaErrors, CallErrorsNameTheErrorStatementFileAndLine) {
    const std::string text = format_call_error("CUDA", "cudaErrorInvalidValue", "invalid argument",
                                               CallSite{"cudaMemcpy(a, b, n, kind)", "set_tensor",
                                                        "/src/xbackend/lib/cuda/cuda_buffer.cpp", 42});
    EXPECT_EQ(text, "CUDA error cudaErrorInvalidValue (invalid argument) in `cudaMemcpy(a, b, n, kind)` at "
                    "lib/cuda/cuda_buffer.cpp:42 (set_tensor)");
}

TEST(CudaErrors, SizesAreReadable) {
    EXPECT_EQ(format_bytes(0), "0 B");
    EXPECT_EQ(format_bytes(1023), "1023 B");
    EXPECT_EQ(format_bytes(1024), "1.0 KiB");
    EXPECT_EQ(format_bytes(1536), "1.5 KiB");
    EXPECT_EQ(format_bytes(size_t{80} << 30), "80.0 GiB");
    EXPECT_EQ(format_bytes(size_t{1} << 60), "1.0 EiB");
}

Status failing_cuda_call(int& line) {
    line = __LINE__ + 1;
    XB_CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(cudaErrorMemoryAllocation));
    return Status::ok();
}

Status failing_cublas_call(int& line) {
    line = __LINE__ + 1;
    XB_CUBLAS_RETURN_IF_ERROR(static_cast<cublasStatus_t>(CUBLAS_STATUS_NOT_SUPPORTED));
    return Status::ok();
}

Status succeeding_calls() {
    XB_CUDA_RETURN_IF_ERROR(cudaSuccess);
    XB_CUBLAS_RETURN_IF_ERROR(CUBLAS_STATUS_SUCCESS);
    return Status::ok();
}

// The real macros with real runtime error values (the runtime's error names need no GPU).
TEST(CudaErrors, CheckMacrosReturnStatusesWithTheCallSite) {
    int line = 0;
    const Status cuda = failing_cuda_call(line);
    EXPECT_EQ(cuda.code(), StatusCode::OutOfMemory);
    const std::string where = "tests/cuda/test_cuda_host.cpp:" + std::to_string(line);
    EXPECT_NE(cuda.message().find("CUDA error cudaErrorMemoryAllocation"), std::string::npos) << cuda.message();
    EXPECT_NE(cuda.message().find("static_cast<cudaError_t>(cudaErrorMemoryAllocation)"), std::string::npos)
        << cuda.message();
    EXPECT_NE(cuda.message().find(where), std::string::npos) << cuda.message();
    EXPECT_NE(cuda.message().find("failing_cuda_call"), std::string::npos) << cuda.message();

    const Status cublas = failing_cublas_call(line);
    EXPECT_EQ(cublas.code(), StatusCode::NotSupported);
    EXPECT_NE(cublas.message().find("cuBLAS error CUBLAS_STATUS_NOT_SUPPORTED"), std::string::npos)
        << cublas.message();
    EXPECT_NE(cublas.message().find("tests/cuda/test_cuda_host.cpp:" + std::to_string(line)), std::string::npos)
        << cublas.message();

    EXPECT_TRUE(succeeding_calls().is_ok());
    EXPECT_TRUE(XB_CUDA_STATUS(cudaSuccess).is_ok());
    EXPECT_EQ(status_code_for(cudaErrorIllegalAddress), StatusCode::Internal);
    EXPECT_EQ(status_code_for(CUBLAS_STATUS_ALLOC_FAILED), StatusCode::OutOfMemory);
}

// cuBLAS is opened on first use (cublas_library.hpp). CUDA builds need the toolkit, whose
// libcublas this opens without a GPU: every entry point xbackend calls must be found in it.
TEST(CublasLibrary, TheToolkitsLibraryHasEveryEntryPoint) {
    EXPECT_EQ(cublas_library_name(), "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR));
    Result<CublasLibrary> lib = open_cublas_library(cublas_library_name());
    ASSERT_TRUE(lib.is_ok()) << lib.status().to_string();
    EXPECT_NE(lib->create, nullptr);
    EXPECT_NE(lib->destroy, nullptr);
    EXPECT_NE(lib->set_stream, nullptr);
    EXPECT_NE(lib->set_math_mode, nullptr);
    EXPECT_NE(lib->gemm_ex, nullptr);
    EXPECT_NE(lib->gemm_strided_batched_ex, nullptr);
    EXPECT_NE(lib->gemm_batched_ex, nullptr);
}

TEST(CublasLibrary, AMissingLibraryOrEntryPointIsOneErrorNamingIt) {
    const Result<CublasLibrary> missing = open_cublas_library("libxb-no-such-cublas.so.0");
    ASSERT_FALSE(missing.is_ok());
    EXPECT_EQ(missing.status().code(), StatusCode::NotSupported);
    EXPECT_NE(missing.status().message().find("cuBLAS: cannot open libxb-no-such-cublas.so.0"), std::string::npos)
        << missing.status().message();
    // A library that opens but is not cuBLAS (the C library is in every process).
    const Result<CublasLibrary> not_cublas = open_cublas_library("libc.so.6");
    ASSERT_FALSE(not_cublas.is_ok());
    EXPECT_NE(not_cublas.status().message().find("cuBLAS: libc.so.6 has no cublasCreate_v2"), std::string::npos)
        << not_cublas.status().message();
}

TEST(CudaErrors, KernelErrorsNameTheNode) {
    KernelErrorRecord record;
    record.kind = kKernelErrorIndexOutOfRange;
    record.slot = 1;
    record.value = 12;
    record.bound = 9;
    const std::vector<std::string> labels = {"set_rows of node 'a'", "get_rows of node 'tok_embd'"};
    EXPECT_EQ(describe_kernel_error(record, labels, "CUDA0"),
              "CUDA0: get_rows of node 'tok_embd': index 12 out of range [0, 9)");
    record.slot = 5;
    EXPECT_NE(describe_kernel_error(record, labels, "CUDA0").find("unknown node (slot 5)"), std::string::npos);
    record.kind = kKernelErrorNone;
    EXPECT_EQ(describe_kernel_error(record, labels, "CUDA0"), "");
}

// --- settings ------------------------------------------------------------------------------------

TEST(CudaSettingsParse, KeysValuesAndErrors) {
    auto none = parse_cuda_params("", "CUDA0");
    ASSERT_TRUE(none.is_ok());
    CudaSettings s;
    none->apply_to(s);
    EXPECT_EQ(format_cuda_settings(s), "offload_min_batch=32,tf32=0,graphs=1");

    auto both = parse_cuda_params("offload_min_batch=8,tf32=on", "CUDA0");
    ASSERT_TRUE(both.is_ok()) << both.status().to_string();
    both->apply_to(s);
    EXPECT_EQ(s.offload_min_batch, 8);
    EXPECT_TRUE(s.tf32);
    EXPECT_EQ(format_cuda_settings(s), "offload_min_batch=8,tf32=1,graphs=1");

    auto no_graphs = parse_cuda_params("graphs=0", "CUDA0");
    ASSERT_TRUE(no_graphs.is_ok()) << no_graphs.status().to_string();
    no_graphs->apply_to(s);
    EXPECT_FALSE(s.graphs);
    EXPECT_EQ(format_cuda_settings(s), "offload_min_batch=8,tf32=1,graphs=0");

    for (const char* bad :
         {"offload_min_batch=-1", "offload_min_batch=x", "offload_min_batch=", "tf32=maybe", "graphs=2"}) {
        auto r = parse_cuda_params(bad, "CUDA0");
        ASSERT_FALSE(r.is_ok()) << bad;
        EXPECT_EQ(r.status().code(), StatusCode::InvalidArgument);
        EXPECT_NE(r.status().message().find("CUDA0"), std::string::npos) << r.status().message();
    }
    auto unknown = parse_cuda_params("colour=blue", "CUDA1");
    ASSERT_FALSE(unknown.is_ok());
    EXPECT_NE(unknown.status().message().find("unknown parameter 'colour'"), std::string::npos);
}

// --- the GEMM plan -------------------------------------------------------------------------------

Tensor* input(Context& ctx, DType t, std::initializer_list<int64_t> ne) { return ctx.new_tensor(t, ne); }

TEST(CudaGemmPlan, InputTypes) {
    EXPECT_EQ(gemm_input_type(DType::F32, DType::F32), DType::F32);
    EXPECT_EQ(gemm_input_type(DType::F16, DType::F16), DType::F16);
    EXPECT_EQ(gemm_input_type(DType::F16, DType::F32), DType::F16);    // b rounded to the weights' type
    EXPECT_EQ(gemm_input_type(DType::BF16, DType::F32), DType::BF16);
    EXPECT_EQ(gemm_input_type(DType::F32, DType::F16), DType::F32);    // exact widening of b
    EXPECT_EQ(gemm_input_type(DType::F16, DType::BF16), DType::F32);
}

TEST(CudaGemmPlan, ContiguousF32MatMulIsOneGemmInPlace) {
    Context ctx;
    Tensor* y = mul_mat(ctx, input(ctx, DType::F32, {67, 13}), input(ctx, DType::F32, {67, 7}));
    ASSERT_TRUE(gemm_supported(*y));
    const GemmPlan p = plan_gemm(*y);
    EXPECT_EQ(p.input_type, DType::F32);
    EXPECT_EQ(p.m, 13);
    EXPECT_EQ(p.n, 7);
    EXPECT_EQ(p.k, 67);
    EXPECT_TRUE(p.a.transposed);
    EXPECT_FALSE(p.b.transposed);
    EXPECT_FALSE(p.a.pack);
    EXPECT_FALSE(p.b.pack);
    EXPECT_EQ(p.a.ld, 67);
    EXPECT_EQ(p.b.ld, 67);
    EXPECT_EQ(p.c_ld, 13);
    EXPECT_EQ(p.batching, GemmBatching::Single);
    EXPECT_EQ(p.scratch_bytes, 0u);
}

TEST(CudaGemmPlan, MixedTypesPackTheOperandThatChanges) {
    Context ctx;
    Tensor* half_weights = mul_mat(ctx, input(ctx, DType::F16, {67, 13}), input(ctx, DType::F32, {67, 7}));
    GemmPlan p = plan_gemm(*half_weights);
    EXPECT_EQ(p.input_type, DType::F16);
    EXPECT_FALSE(p.a.pack);
    EXPECT_TRUE(p.b.pack);
    EXPECT_EQ(p.b.scratch_bytes, 67u * 7u * 2u);
    EXPECT_EQ(p.scratch_bytes, align_scratch(67 * 7 * 2));

    Tensor* half_b = mul_mat(ctx, input(ctx, DType::F32, {33, 9}), input(ctx, DType::F16, {33, 5}));
    p = plan_gemm(*half_b);
    EXPECT_EQ(p.input_type, DType::F32);
    EXPECT_FALSE(p.a.pack);
    EXPECT_TRUE(p.b.pack);

    Tensor* both = mul_mat(ctx, input(ctx, DType::F16, {33, 9}), input(ctx, DType::BF16, {33, 5}));
    p = plan_gemm(*both);
    EXPECT_TRUE(p.a.pack && p.b.pack);
    EXPECT_EQ(p.b.scratch_offset, align_scratch(33 * 9 * 4));
    EXPECT_EQ(p.scratch_bytes, align_scratch(33 * 9 * 4) + align_scratch(33 * 5 * 4));
}

// Quantized weights never go through cuBLAS (nor a dequantized copy of the matrix): up to eight
// columns to the integer mat-vec kernel, with the columns quantized in scratch; more to the tiles.
TEST(CudaQuantProducts, ColumnsChooseTheKernelAndTheScratch) {
    Context ctx;
    Tensor* decode = mul_mat(ctx, input(ctx, DType::Q6_K, {512, 9, 2}), input(ctx, DType::F32, {512, 1, 4}));
    Tensor* batch8 = mul_mat(ctx, input(ctx, DType::Q4_0, {96, 13}), input(ctx, DType::F32, {96, 8, 3}));
    Tensor* batch9 = mul_mat(ctx, input(ctx, DType::Q4_0, {96, 13}), input(ctx, DType::F32, {96, 9}));
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    for (const Tensor* t : {decode, batch8, batch9}) {
        EXPECT_TRUE(is_quant_product(*t));
        EXPECT_TRUE(gemm_supported(*t));
        EXPECT_TRUE(supports_node(*t));
        EXPECT_FALSE(uses_mat_vec(*t));  // that one is the half-precision kernel's
    }

    const QuantProductPlan d = plan_quant_product(*decode);
    EXPECT_EQ(d.path, QuantProductPath::MatVec);
    EXPECT_EQ(d.k, 512);
    EXPECT_EQ(d.rows, 9);
    EXPECT_EQ(d.columns, 1);
    EXPECT_EQ(d.batches, 4);
    EXPECT_EQ(d.r2, 2);
    // 4 columns of 512 int8 values, then 4 x 16 scales of 8 bytes.
    EXPECT_EQ(d.quantized.values_offset, 0u);
    EXPECT_EQ(d.quantized.scales_offset, align_scratch(4 * 512));
    EXPECT_EQ(d.scratch_bytes, align_scratch(4 * 512) + align_scratch(4 * 16 * sizeof(Q8Scale)));
    EXPECT_EQ(node_scratch_bytes(*decode), d.scratch_bytes);

    const QuantProductPlan b8 = plan_quant_product(*batch8);
    EXPECT_EQ(b8.path, QuantProductPath::MatVec);
    EXPECT_EQ(b8.columns, 8);
    EXPECT_EQ(b8.scratch_bytes, align_scratch(24 * 96) + align_scratch(24 * 3 * sizeof(Q8Scale)));

    const QuantProductPlan b9 = plan_quant_product(*batch9);
    EXPECT_EQ(b9.path, QuantProductPath::Tiles);
    EXPECT_EQ(b9.scratch_bytes, 0u);
    EXPECT_EQ(node_scratch_bytes(*batch9), 0u) << "tiles are decoded in shared memory";
}

// mul_mat_id: a warp per output while decoding; from kExpertTilesMinTokens tokens on, quantized
// experts go through the tiles with their pairs grouped by expert in scratch.
TEST(CudaExpertProducts, TokensAndTypesChooseThePathAndItsScratch) {
    Context ctx;
    auto experts = [&](DType t, int64_t n_as, int64_t n_used, int64_t n_b, int64_t tokens) {
        return mul_mat_id(ctx, input(ctx, t, {256, 37, n_as}), input(ctx, DType::F32, {256, n_b, tokens}),
                          input(ctx, DType::I32, {n_used, tokens}));
    };
    Tensor* decode = experts(DType::Q4_K, 8, 2, 1, 1);
    Tensor* below = experts(DType::Q4_K, 8, 3, 3, kExpertTilesMinTokens - 1);
    Tensor* prefill = experts(DType::Q4_K, 8, 2, 1, 100);
    Tensor* floats = experts(DType::F16, 8, 2, 1, 100);
    Tensor* float_decode = experts(DType::F32, 8, 2, 2, 1);
    Tensor* too_many = experts(DType::Q8_0, kExpertTilesMaxExperts + 1, 1, 1, 32);
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();

    // Float experts: a warp per output, no scratch.
    for (const Tensor* t : {floats, float_decode}) {
        EXPECT_EQ(plan_expert_product(*t).path, ExpertProductPath::PerPair);
        EXPECT_EQ(node_scratch_bytes(*t), 0u);
    }

    // Quantized experts below the tiles' token count, or with more experts than the grouping
    // counts: b's columns (per slot or shared) quantized, k int8 values and k / 32 scales each.
    struct MatVecCase {
        const Tensor* node;
        int64_t columns;
    };
    for (const MatVecCase& c : {MatVecCase{decode, 1}, MatVecCase{below, 3 * (kExpertTilesMinTokens - 1)},
                                MatVecCase{too_many, 32}}) {
        const ExpertProductPlan p = plan_expert_product(*c.node);
        EXPECT_EQ(p.path, ExpertProductPath::MatVec);
        EXPECT_EQ(p.columns, c.columns);
        EXPECT_EQ(p.k, 256);
        EXPECT_EQ(p.quantized.values_offset, 0u);
        EXPECT_EQ(p.quantized.scales_offset, align_scratch(static_cast<size_t>(c.columns) * 256));
        EXPECT_EQ(p.scratch_bytes,
                  align_scratch(static_cast<size_t>(c.columns) * 256) + align_scratch(c.columns * 8 * sizeof(Q8Scale)));
        EXPECT_EQ(node_scratch_bytes(*c.node), p.scratch_bytes);
    }
    EXPECT_EQ(plan_expert_product(*decode).pairs, 2);
    EXPECT_EQ(plan_expert_product(*below).pairs, 3 * (kExpertTilesMinTokens - 1));

    // Experts taller than the tile kernel's grid of row tiles take the mat-vec path.
    auto tall = [&](int64_t rows) {
        return mul_mat_id(ctx, input(ctx, DType::Q8_0, {32, rows, 1}), input(ctx, DType::F32, {32, 1, 32}),
                          input(ctx, DType::I32, {1, 32}));
    };
    const Tensor* tallest_tiled = tall(kTileWeightRows * kMaxGridYZ);
    const Tensor* too_tall = tall(kTileWeightRows * kMaxGridYZ + 1);
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    EXPECT_EQ(plan_expert_product(*tallest_tiled).path, ExpertProductPath::Tiles);
    EXPECT_EQ(plan_expert_product(*too_tall).path, ExpertProductPath::MatVec);

    const ExpertProductPlan p = plan_expert_product(*prefill);
    EXPECT_EQ(p.path, ExpertProductPath::Tiles);
    EXPECT_EQ(p.experts, 8);
    EXPECT_EQ(p.pairs, 200);
    EXPECT_EQ(p.max_tiles, (200 + kTileColumns - 1) / kTileColumns + 8);
    // pair_start and tile_start (9 ints each), then the 200 pairs, each part aligned.
    EXPECT_EQ(p.pair_start_offset, 0u);
    EXPECT_EQ(p.tile_start_offset, align_scratch(9 * 4));
    EXPECT_EQ(p.pairs_offset, 2 * align_scratch(9 * 4));
    EXPECT_EQ(p.scratch_bytes, 2 * align_scratch(9 * 4) + align_scratch(200 * 4));
    EXPECT_EQ(node_scratch_bytes(*prefill), p.scratch_bytes);
}

// Each (slot, token) pair reads its own column of b, the slot's or the token's shared one, as
// row_start numbers b's rows (what the kernels' quantized columns follow), and writes dst[:, slot,
// token]; every pair is seen once.
TEST(CudaExpertProducts, EveryPairFindsItsColumnOfB) {
    Context ctx;
    const int64_t n_used = 3, tokens = 5;
    for (int64_t b_columns : {int64_t{1}, n_used}) {
        const TensorDesc b = describe(*input(ctx, DType::F32, {64, b_columns, tokens}));
        ASSERT_TRUE(ctx.ok());
        std::set<std::pair<int64_t, int64_t>> outputs;
        for (int64_t p = 0; p < n_used * tokens; ++p) {
            const ExpertPair pair = expert_pair(p, n_used, b_columns);
            EXPECT_EQ(pair.slot + n_used * pair.token, p);
            outputs.insert({pair.slot, pair.token});
            const Index4 at = row_start(b, pair.b_column);
            EXPECT_EQ(at.i[1], b_columns == 1 ? 0 : pair.slot) << p;
            EXPECT_EQ(at.i[2], pair.token) << p;
            EXPECT_EQ(at.i[3], 0);
        }
        EXPECT_EQ(outputs.size(), static_cast<size_t>(n_used * tokens));
    }
}

// The experts' mat-vec takes 16-byte loads on the terms of the dense one: q4_K/q5_K rows all
// 16-byte aligned.
TEST(CudaExpertProducts, WideLoadsNeedAlignedExpertRows) {
    Context ctx;
    alignas(256) static char storage[3 * 2 * 176];
    for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
        Tensor* as = input(ctx, t, {256, 2, 3});
        as->data = storage;
        Tensor* y = mul_mat_id(ctx, as, input(ctx, DType::F32, {256, 1, 1}), input(ctx, DType::I32, {2, 1}));
        ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
        EXPECT_EQ(plan_expert_product(*y).wide_loads, has_wide_units(t)) << dtype_name(t);
        as->data = storage + 4;
        EXPECT_FALSE(plan_expert_product(*y).wide_loads) << dtype_name(t);
    }
}

// The grouped tiles: each expert gets whole tiles of its pairs but the last, none when unused, and
// every tile finds its expert, experts without pairs skipped.
TEST(CudaExpertProducts, EveryColumnTileFindsItsExpert) {
    const std::vector<int32_t> pairs_per_expert = {0, 1, 64, 0, 0, 65, 130, 0};
    std::vector<int32_t> tile_start = {0};
    for (int32_t c : pairs_per_expert) tile_start.push_back(tile_start.back() + expert_tiles(c));
    EXPECT_EQ(tile_start, (std::vector<int32_t>{0, 0, 1, 2, 2, 2, 4, 7, 7}));
    const auto experts = static_cast<int64_t>(pairs_per_expert.size());
    std::vector<int64_t> owner;
    for (int32_t tile = 0; tile < tile_start.back(); ++tile) owner.push_back(expert_of_tile(tile_start.data(), experts, tile));
    EXPECT_EQ(owner, (std::vector<int64_t>{1, 2, 5, 5, 6, 6, 6}));
    // One expert alone, and pairs only in the last one.
    const std::vector<int32_t> one = {0, 3};
    EXPECT_EQ(expert_of_tile(one.data(), 1, 2), 0);
    const std::vector<int32_t> last = {0, 0, 0, 2};
    EXPECT_EQ(expert_of_tile(last.data(), 3, 0), 2);
    EXPECT_EQ(expert_of_tile(last.data(), 3, 1), 2);
}

// 16-byte loads of the weights' quants only for the types laid out for them, and only when every
// row starts 16-byte aligned.
TEST(CudaQuantProducts, WideLoadsNeedAlignedRows) {
    Context ctx;
    alignas(256) static char storage[4 * 176];
    for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_0}) {
        Tensor* w = input(ctx, t, {256, 2});
        w->data = storage;
        Tensor* y = mul_mat(ctx, w, input(ctx, DType::F32, {256, 1}));
        ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
        EXPECT_EQ(plan_quant_product(*y).wide_loads, has_wide_units(t)) << dtype_name(t);
        w->data = storage + 4;  // rows 4-byte aligned only
        EXPECT_FALSE(plan_quant_product(*y).wide_loads) << dtype_name(t);
    }
    EXPECT_TRUE(has_wide_units(DType::Q4_K) && has_wide_units(DType::Q5_K));
    EXPECT_FALSE(has_wide_units(DType::Q6_K) || has_wide_units(DType::Q4_0) || has_wide_units(DType::Q8_K));
}

TEST(CudaGemmPlan, HalfWeightsTimesOneF32ColumnUseTheMatVecKernel) {
    Context ctx;
    for (DType t : {DType::F16, DType::BF16}) {
        Tensor* decode = mul_mat(ctx, input(ctx, t, {264, 29, 2}), input(ctx, DType::F32, {264, 1, 4}));
        ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
        EXPECT_TRUE(uses_mat_vec(*decode)) << dtype_name(t);
        EXPECT_EQ(node_scratch_bytes(*decode), 0u) << "the activations are read as they are, not rounded into scratch";
    }
    // Several columns go to cuBLAS, and so do f16 activations and f32 weights.
    EXPECT_FALSE(uses_mat_vec(*mul_mat(ctx, input(ctx, DType::F16, {264, 29}), input(ctx, DType::F32, {264, 2}))));
    EXPECT_FALSE(uses_mat_vec(*mul_mat(ctx, input(ctx, DType::F16, {264, 29}), input(ctx, DType::F16, {264, 1}))));
    EXPECT_FALSE(uses_mat_vec(*mul_mat(ctx, input(ctx, DType::F32, {264, 29}), input(ctx, DType::F32, {264, 1}))));
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
}

TEST(CudaGemmPlan, StridedOperandsArePackedOrUsedWithTheirRowStride) {
    Context ctx;
    // b transposed: its elements are a row apart, which cuBLAS cannot read in place.
    Tensor* tb = mul_mat(ctx, input(ctx, DType::F32, {67, 13}), transpose(ctx, input(ctx, DType::F32, {7, 67})));
    GemmPlan p = plan_gemm(*tb);
    EXPECT_FALSE(p.a.pack);
    EXPECT_TRUE(p.b.pack);
    EXPECT_EQ(p.b.ld, 67);

    // A window of a wider matrix: rows packed, so its row stride becomes the leading dimension.
    Tensor* wide = input(ctx, DType::F32, {25, 6});
    Tensor* window = view_2d(ctx, wide, 21, 6, wide->nb[1], 2 * wide->nb[0]);
    Tensor* w = mul_mat(ctx, input(ctx, DType::F32, {21, 4}), window);
    p = plan_gemm(*w);
    EXPECT_FALSE(p.b.pack);
    EXPECT_EQ(p.b.ld, 25);
}

TEST(CudaGemmPlan, BatchesStridedPointerArraysAndBroadcast) {
    Context ctx;
    Tensor* batched = mul_mat(ctx, input(ctx, DType::F32, {64, 33, 2, 1}), input(ctx, DType::F32, {64, 17, 2, 1}));
    GemmPlan p = plan_gemm(*batched);
    EXPECT_EQ(p.batching, GemmBatching::Strided);
    EXPECT_EQ(p.stride_a, 64 * 33);
    EXPECT_EQ(p.stride_b, 64 * 17);
    EXPECT_EQ(p.stride_c, 33 * 17);
    EXPECT_EQ(p.batch_count(), 2);

    // a broadcast over dims 2 and 3: pointer arrays, after the packed operands in scratch.
    Tensor* bcast = mul_mat(ctx, input(ctx, DType::F16, {33, 9, 2, 3}), input(ctx, DType::F32, {33, 5, 4, 3}));
    p = plan_gemm(*bcast);
    EXPECT_EQ(p.batching, GemmBatching::Pointers);
    EXPECT_EQ(p.r2, 2);
    EXPECT_EQ(p.r3, 1);
    EXPECT_EQ(p.batch_count(), 12);
    EXPECT_EQ(p.pointers_offset, align_scratch(33 * 5 * 12 * 2));
    EXPECT_EQ(p.scratch_bytes, p.pointers_offset + align_scratch(3 * 12 * sizeof(void*)));

    // A permuted f16 a (heads before rows) reads in place with a row stride of 66 elements and a
    // batch stride of 33.
    Tensor* pa = permute(ctx, input(ctx, DType::F16, {33, 2, 9, 1}), {0, 2, 1, 3});
    Tensor* permuted = mul_mat(ctx, pa, input(ctx, DType::F32, {33, 5, 2, 1}));
    p = plan_gemm(*permuted);
    EXPECT_FALSE(p.a.pack);
    EXPECT_EQ(p.a.ld, 66);
    EXPECT_EQ(p.batching, GemmBatching::Strided);
    EXPECT_EQ(p.stride_a, 33);
}

TEST(CudaGemmPlan, OutProdUsesBTransposed) {
    Context ctx;
    Tensor* y = out_prod(ctx, input(ctx, DType::F32, {13, 9}), input(ctx, DType::F32, {7, 9}));
    ASSERT_TRUE(gemm_supported(*y));
    const GemmPlan p = plan_gemm(*y);
    EXPECT_EQ(p.m, 13);
    EXPECT_EQ(p.n, 7);
    EXPECT_EQ(p.k, 9);
    EXPECT_FALSE(p.a.transposed);
    EXPECT_TRUE(p.b.transposed);
    EXPECT_EQ(p.a.ld, 13);
    EXPECT_EQ(p.b.ld, 7);
}

TEST(CudaGemmPlan, SizesBeyondCublasIntsAreNotSupported) {
    Context ctx;
    Tensor* tall = mul_mat(ctx, input(ctx, DType::F32, {2, int64_t{3} << 30}), input(ctx, DType::F32, {2, 1}));
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    EXPECT_FALSE(gemm_supported(*tall));
    EXPECT_FALSE(supports_node(*tall));
}

// --- supports_op -----------------------------------------------------------------------------------

TEST(CudaSupport, EveryOpTheBuildersMake) {
    Context ctx;
    Tensor* x = input(ctx, DType::F32, {64, 8, 4, 1});
    Tensor* h = input(ctx, DType::F16, {64, 8, 4, 1});
    Tensor* rows = input(ctx, DType::I32, {5});
    Tensor* rows64 = input(ctx, DType::I64, {3});
    Tensor* pos = input(ctx, DType::I32, {4});
    Tensor* mask = input(ctx, DType::F16, {8, 8});
    RopeParams rp;
    rp.n_dims = 32;
    std::vector<Tensor*> nodes = {
        add(ctx, x, input(ctx, DType::BF16, {64})), mul(ctx, h, x), add1(ctx, x, input(ctx, DType::F32, {1})),
        scale(ctx, x, 0.5f), sqr(ctx, x), sqrt(ctx, x), log(ctx, x), clamp(ctx, h, -1.0f, 1.0f), silu(ctx, x),
        gelu(ctx, h), swiglu(ctx, x), glu_split(ctx, x, x, GluOp::GeGlu), dup(ctx, transpose(ctx, x)),
        cont(ctx, permute(ctx, h, {1, 0, 2, 3})), cast(ctx, x, DType::BF16), repeat(ctx, input(ctx, DType::F32, {64}), x),
        concat(ctx, x, x, 2), pad(ctx, h, {1, 2, 0, 0}), arange(ctx, 0.0f, 10.0f, 1.0f),
        get_rows(ctx, input(ctx, DType::F32, {16, 9}), rows), get_rows(ctx, input(ctx, DType::I32, {16, 9}), rows),
        set_rows(ctx, input(ctx, DType::F16, {64, 9}), input(ctx, DType::F32, {64, 3}), rows64), sum(ctx, x),
        sum_rows(ctx, h), mean(ctx, x), argmax(ctx, input(ctx, DType::F32, {10, 4})), norm(ctx, x, 1e-5f),
        rms_norm(ctx, h, 1e-5f), soft_max_ext(ctx, input(ctx, DType::F32, {8, 8, 4}), mask, 0.5f, 0.0f),
        diag_mask_inf(ctx, input(ctx, DType::F32, {8, 8}), 0), rope(ctx, h, pos, rp),
        mul_mat(ctx, h, x), out_prod(ctx, input(ctx, DType::F32, {13, 9}), input(ctx, DType::F32, {7, 9})),
        flash_attn_ext(ctx, input(ctx, DType::F32, {64, 7, 4, 1}), input(ctx, DType::F16, {64, 8, 2, 1}),
                       input(ctx, DType::F16, {64, 8, 2, 1}), mask, 0.125f),
    };
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    for (const Tensor* n : nodes) EXPECT_TRUE(supports_node(*n)) << n->op_label() << " " << n->shape_string();
    EXPECT_TRUE(supports_node(*x));                  // a leaf
    EXPECT_TRUE(supports_node(*transpose(ctx, x)));  // a view computes nothing
}

TEST(CudaSupport, QuantizedTypesDequantizeAndQuantize) {
    Context ctx;
    Tensor* q = input(ctx, DType::Q5_K, {256, 6, 2});
    Tensor* rows = input(ctx, DType::I32, {3, 2});
    EXPECT_TRUE(supports_node(*get_rows(ctx, q, rows)));
    EXPECT_TRUE(supports_node(*cast(ctx, q, DType::F32)));
    EXPECT_TRUE(supports_node(*cpy(ctx, q, input(ctx, DType::F16, {256, 12}))));
    EXPECT_TRUE(supports_node(*dup(ctx, q)));  // same type, both packed: a memcpy
    EXPECT_TRUE(supports_node(*mul_mat(ctx, q, input(ctx, DType::F32, {256, 5, 2}))));
    EXPECT_FALSE(supports_node(*cont(ctx, permute(ctx, q, {0, 2, 1, 3}))));  // a strided block copy
    // Float sources quantize, from any strides, into every type core can make (the builders refuse
    // the read-only ones, the codebook formats and nvfp4, and other row lengths).
    Tensor* x = input(ctx, DType::F32, {256, 6});
    EXPECT_TRUE(supports_node(*cast(ctx, x, DType::Q4_K)));
    EXPECT_TRUE(supports_node(*cast(ctx, input(ctx, DType::BF16, {64, 3}), DType::IQ4_NL)));
    EXPECT_TRUE(supports_node(*cpy(ctx, transpose(ctx, input(ctx, DType::F16, {6, 256})), input(ctx, DType::Q8_0, {256, 6}))));
    EXPECT_TRUE(supports_node(*cpy(ctx, x, input(ctx, DType::MXFP4, {256, 3, 2}))));  // the rows cut differently
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
}

TEST(CudaSupport, UnknownCodesHugeHeadsAndMisalignedViewsAreRefused) {
    Context ctx;
    Tensor* x = input(ctx, DType::F32, {64, 8});
    Tensor* bad_unary = silu(ctx, x);
    UnaryParams{.op = static_cast<UnaryOp>(99)}.store(*bad_unary);
    EXPECT_FALSE(supports_node(*bad_unary));

    Tensor* q = input(ctx, DType::F32, {8192, 2, 1, 1});
    Tensor* kv = input(ctx, DType::F16, {8192, 4, 1, 1});
    EXPECT_FALSE(supports_node(*flash_attn_ext(ctx, q, kv, kv, nullptr, 0.01f)));

    // A float view 2 bytes into its storage: the device would fault on the misaligned loads.
    Tensor* shifted = view_1d(ctx, x, 16, 2);
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    EXPECT_FALSE(supports_node(*add(ctx, shifted, shifted)));
    EXPECT_TRUE(supports_node(*add(ctx, view_1d(ctx, x, 16, 4), view_1d(ctx, x, 16, 8))));
}

TEST(CudaSupport, ScratchForRopeAndPackedOperands) {
    Context ctx;
    RopeParams rp;
    rp.n_dims = 24;
    Tensor* r = rope(ctx, input(ctx, DType::F32, {40, 3, 7}), input(ctx, DType::I32, {7}), rp);
    EXPECT_EQ(node_scratch_bytes(*r), align_scratch(7 * 24 * sizeof(float)));
    Tensor* mm = mul_mat(ctx, input(ctx, DType::F16, {67, 13}), input(ctx, DType::F32, {67, 7}));
    EXPECT_EQ(node_scratch_bytes(*mm), align_scratch(67 * 7 * 2));
    EXPECT_EQ(node_scratch_bytes(*add(ctx, input(ctx, DType::F32, {4}), input(ctx, DType::F32, {4}))), 0u);
}

// --- registration --------------------------------------------------------------------------------

TEST(CudaRegistry, DevicesMatchTheRuntimeCount) {
    const CudaAvailability available = cuda_availability();
    if (available.device_count == 0) {
        EXPECT_FALSE(available.reason.empty());
        EXPECT_EQ(global_registry().dev_by_name("CUDA0"), nullptr) << "no GPU: nothing is registered";
        return;
    }
    for (int i = 0; i < available.device_count; ++i) {
        Device* d = global_registry().dev_by_name("CUDA" + std::to_string(i));
        ASSERT_NE(d, nullptr);
        EXPECT_EQ(d->type(), DeviceType::GPU);
        EXPECT_FALSE(d->is_simulated());
    }
}

}  // namespace
}  // namespace xb::cuda

#else

TEST(CudaHost, NeedsACudaBuild) { XB_SKIP_WITHOUT_GPU("built without CUDA"); }

#endif
