// The few OpenBLAS entry points the BLAS backend uses, so that cblas.h is included in one file
// (its include directory is private to the library).
//
// OpenBLAS keeps its thread count in one process-wide variable. The backend never leaves it
// changed: ThreadScope sets a backend's count for the duration of its sgemm calls and puts the
// previous value back, under a mutex that the BLAS device owns, so that two BLAS backends on
// different host threads cannot interleave their settings. Setting the count costs well under a
// microsecond once OpenBLAS's workers exist.
//
// Sharing cores with the CPU backend: OpenBLAS's idle workers yield while they wait, and did not
// measurably slow a CPU-backend graph that followed an sgemm; the other way round, libgomp's
// threads keep spinning after a CPU graph (GOMP_SPINCOUNT) and starve OpenBLAS's worker, so a
// two-thread sgemm right after a CPU split ran about twice as slow (as slow as one thread) on
// the 2-core reference machine. That is fixed where the OpenMP threads are (scheduler/CPU
// backend, or OMP_WAIT_POLICY/GOMP_SPINCOUNT); this backend only avoids adding threads of its
// own that outlive a call.
#pragma once

#include <string>

namespace xb::blas {

// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64, pthreads".
std::string openblas_description();

// OpenBLAS's current thread count (openblas_get_num_threads).
int openblas_threads();

// Sets OpenBLAS's thread count to `n_threads` while alive; restores the previous count after.
// The caller holds the device's BLAS mutex for the scope's lifetime.
class ThreadScope {
public:
    explicit ThreadScope(int n_threads);
    ~ThreadScope();
    ThreadScope(const ThreadScope&) = delete;
    ThreadScope& operator=(const ThreadScope&) = delete;

private:
    int previous_;
    bool changed_;
};

// A row-major operand for sgemm: `data` holds the matrix (or its transpose when `transposed`)
// row by row, `ld` floats apart.
struct GemmOperand {
    const float* data = nullptr;
    int ld = 0;
    bool transposed = false;
};

// c (m x n, row-major, ldc) = op(x) * op(y), where op(x) is x's matrix, transposed when trans_x
// (likewise y). x's matrix is m x k after op, y's k x n.
void sgemm(const GemmOperand& x, bool trans_x, const GemmOperand& y, bool trans_y, int m, int n, int k, float* c,
           int ldc);

}  // namespace xb::blas
