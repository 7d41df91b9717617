// The expert a mul_mat_id (slot, token) pair chose, checked against the number of experts: shared
// by the kernels of mul_mat_id and add_id (kernels_moe.cu, kernels_mat_vec_q.cu).
#pragma once

#include <cstdint>

#include "cuda/kernel_common.cuh"

namespace xb::cuda {

// The expert id of (slot e, token t), or -1 when it is out of [0, n_as), reported through the
// kernel error record by the one thread that passes `reporter`.
__device__ __forceinline__ int64_t expert_id(const TensorDesc& ids, int64_t e, int64_t t, int64_t n_as,
                                             KernelErrorRecord* errors, int slot, bool reporter) {
    const int64_t id = load_index(ids, Index4{{e, t, 0, 0}});
    if (id < 0 || id >= n_as) {
        if (reporter) report_index_error(errors, slot, id, n_as);
        return -1;
    }
    return id;
}

}  // namespace xb::cuda
