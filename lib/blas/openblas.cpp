#include "blas/openblas.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstdint>

namespace xb::blas {

namespace {

const char* parallel_name(int mode) {
    switch (mode) {
        case 0: return "sequential";
        case 1: return "pthreads";
        case 2: return "OpenMP";
        default: return "unknown threading";
    }
}

// Fewer multiply-adds than this per thread cost more in a parallel region than they save.
constexpr int64_t kMinFlopsPerThread = int64_t{1} << 21;
// Column blocks are a multiple of this, so that each block keeps OpenBLAS's kernels full width.
constexpr int kColumnGrain = 16;

// The operand's matrix after op(), starting at column `col`: the k x n matrix op(y) with y stored
// row-major, or stored transposed (then column j of op(y) is row j of the storage).
GemmOperand from_column(const GemmOperand& y, bool stored_transposed_of_op, int col) {
    GemmOperand shifted = y;
    shifted.data += stored_transposed_of_op ? static_cast<int64_t>(col) * y.ld : col;
    return shifted;
}

int thread_count_for(int64_t m, int64_t n, int64_t k, int n_threads) {
    const int64_t by_work = m * n * k / kMinFlopsPerThread;
    const int64_t by_columns = (n + kColumnGrain - 1) / kColumnGrain;
    return static_cast<int>(std::clamp<int64_t>(std::min(by_work, by_columns), 1, std::max(n_threads, 1)));
}

}  // namespace

std::string openblas_description() {
    const char* config = openblas_get_config();
    std::string text = config != nullptr ? config : "OpenBLAS";
    // The config string ends with a space in some builds.
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text + ", " + parallel_name(openblas_get_parallel());
}

int openblas_threads() { return openblas_get_num_threads(); }

ThreadScope::ThreadScope(int n_threads) : previous_(openblas_get_num_threads()), changed_(previous_ != n_threads) {
    if (changed_) openblas_set_num_threads(n_threads);
}

ThreadScope::~ThreadScope() {
    if (changed_) openblas_set_num_threads(previous_);
}

void sgemm(const GemmOperand& x, bool trans_x, const GemmOperand& y, bool trans_y, int m, int n, int k, float* c,
           int ldc) {
    // The storage holds x or x^T; cblas transposes what is stored.
    const CBLAS_TRANSPOSE tx = (trans_x != x.transposed) ? CblasTrans : CblasNoTrans;
    const CBLAS_TRANSPOSE ty = (trans_y != y.transposed) ? CblasTrans : CblasNoTrans;
    cblas_sgemm(CblasRowMajor, tx, ty, m, n, k, 1.0f, x.data, x.ld, y.data, y.ld, 0.0f, c, ldc);
}

void parallel_sgemm(const GemmOperand& x, bool trans_x, const GemmOperand& y, bool trans_y, int m, int n, int k,
                    float* c, int ldc, int n_threads) {
    const int threads = thread_count_for(m, n, k, n_threads);
    if (threads == 1) {
        sgemm(x, trans_x, y, trans_y, m, n, k, c, ldc);
        return;
    }
    const bool y_stored_transposed = trans_y != y.transposed;
    const int per_block = (n / threads + kColumnGrain - 1) / kColumnGrain * kColumnGrain;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int begin = 0; begin < n; begin += per_block) {
        const int width = std::min(per_block, n - begin);
        sgemm(x, trans_x, from_column(y, y_stored_transposed, begin), trans_y, m, width, k, c + begin, ldc);
    }
}

}  // namespace xb::blas
