// mul_mat and out_prod through cuBLAS (see gemm_plan.hpp for the mapping): operands are packed
// into scratch when cuBLAS cannot read them in place, then one GEMM, one strided batched GEMM or
// one pointer-array batched GEMM computes every batch in f32 (TF32 only when the backend asks).
#include "cuda/cublas_library.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/gemm_plan.hpp"
#include "cuda/kernels.hpp"

namespace xb::cuda {

namespace {

cudaDataType cuda_type(DType t) {
    switch (t) {
        case DType::F16: return CUDA_R_16F;
        case DType::BF16: return CUDA_R_16BF;
        default: return CUDA_R_32F;
    }
}

cublasOperation_t op_of(const GemmOperand& o) { return o.transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

// The operand's address for cuBLAS: the tensor itself, or its packed copy (made here).
Result<const char*> operand_data(const LaunchContext& ctx, const GemmOperand& o, DType input_type) {
    if (!o.pack) return static_cast<const char*>(o.tensor->data);
    if (o.scratch_offset + o.scratch_bytes > ctx.scratch_bytes) {
        return Status(StatusCode::Internal, "gemm: the scratch reserved for packed operands is too small");
    }
    char* packed = ctx.scratch + o.scratch_offset;
    const TensorDesc src = describe(*o.tensor);
    const TensorDesc dst = packed_desc(packed, input_type, o.tensor->ne);
    XB_RETURN_IF_ERROR(launch_copy(ctx, src, dst));
    return static_cast<const char*>(packed);
}

int as_int(int64_t v) { return static_cast<int>(v); }  // gemm_supported keeps every size in range

}  // namespace

Status launch_gemm(const LaunchContext& ctx, const Tensor& dst) {
    const GemmPlan plan = plan_gemm(dst);
    if (plan.scratch_bytes > ctx.scratch_bytes) {
        return Status(StatusCode::Internal, "gemm: the reserved scratch is smaller than the plan needs");
    }
    if (plan.k == 0) {
        // An empty sum: zeros (dst is contiguous, see gemm_supported).
        XB_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst.data, 0, dst.nbytes(), ctx.stream));
        return Status::ok();
    }
    XB_ASSIGN_OR_RETURN(const char* a, operand_data(ctx, plan.a, plan.input_type));
    XB_ASSIGN_OR_RETURN(const char* b, operand_data(ctx, plan.b, plan.input_type));
    auto* c = static_cast<char*>(dst.data);

    const cudaDataType type = cuda_type(plan.input_type);
    const cublasComputeType_t compute =
        plan.input_type == DType::F32 && ctx.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const float alpha = 1.0f;
    const float beta = 0.0f;
    const int m = as_int(plan.m);
    const int n = as_int(plan.n);
    const int k = as_int(plan.k);
    const int lda = as_int(plan.a.ld);
    const int ldb = as_int(plan.b.ld);
    const int ldc = as_int(plan.c_ld);

    switch (plan.batching) {
        case GemmBatching::Single:
            XB_CUBLAS_RETURN_IF_ERROR(cublas().gemm_ex(ctx.cublas, op_of(plan.a), op_of(plan.b), m, n, k, &alpha, a,
                                                       type, lda, b, type, ldb, &beta, c, CUDA_R_32F, ldc, compute,
                                                       CUBLAS_GEMM_DEFAULT));
            return Status::ok();
        case GemmBatching::Strided:
            XB_CUBLAS_RETURN_IF_ERROR(cublas().gemm_strided_batched_ex(
                ctx.cublas, op_of(plan.a), op_of(plan.b), m, n, k, &alpha, a, type, lda, plan.stride_a, b, type, ldb,
                plan.stride_b, &beta, c, CUDA_R_32F, ldc, plan.stride_c, as_int(plan.batch_count()), compute,
                CUBLAS_GEMM_DEFAULT));
            return Status::ok();
        case GemmBatching::Pointers: break;
    }

    GemmPointerArgs args;
    args.a = a;
    args.a_nb2 = plan.a.nb2;
    args.a_nb3 = plan.a.nb3;
    args.b = b;
    args.b_nb2 = plan.b.nb2;
    args.b_nb3 = plan.b.nb3;
    args.c = c;
    args.c_nb2 = static_cast<int64_t>(dst.nb[2]);
    args.c_nb3 = static_cast<int64_t>(dst.nb[3]);
    args.batch2 = plan.batch2;
    args.batch3 = plan.batch3;
    args.r2 = plan.r2;
    args.r3 = plan.r3;
    const size_t batches = static_cast<size_t>(plan.batch_count());
    auto** pointers = reinterpret_cast<void**>(ctx.scratch + plan.pointers_offset);
    args.a_out = const_cast<const void**>(pointers);
    args.b_out = const_cast<const void**>(pointers + batches);
    args.c_out = pointers + 2 * batches;
    XB_RETURN_IF_ERROR(launch_gemm_pointers(ctx, args));
    XB_CUBLAS_RETURN_IF_ERROR(cublas().gemm_batched_ex(ctx.cublas, op_of(plan.a), op_of(plan.b), m, n, k, &alpha,
                                                       args.a_out, type, lda, args.b_out, type, ldb, &beta,
                                                       args.c_out, CUDA_R_32F, ldc, as_int(plan.batch_count()),
                                                       compute, CUBLAS_GEMM_DEFAULT));
    return Status::ok();
}

}  // namespace xb::cuda
