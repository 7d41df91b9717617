#include "blas/openblas.hpp"

#include <cblas.h>

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

}  // namespace xb::blas
