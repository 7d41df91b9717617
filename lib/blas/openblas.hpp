// The few OpenBLAS entry points the BLAS backend uses, so that cblas.h is included in one file
// (its include directory is private to the library).
//
// Threads: the backend's sgemm calls run with OpenBLAS set to one thread, and the backend splits
// each product's output columns over OpenMP threads itself (parallel_sgemm). The point is sharing
// the cores with the CPU backend: after a CPU split, libgomp's threads keep spinning for a while
// (GOMP_SPINCOUNT) waiting for the next parallel region. OpenBLAS's own workers would compete with
// those spinning threads on every core, and on the 2-core reference machine a 2816x1024x32 sgemm
// right after a CPU graph ran twice as slow as alone. Running the sgemm blocks *in* the same
// libgomp team puts the spinning threads to work instead, with no user tuning of OMP_WAIT_POLICY.
//
// OpenBLAS keeps its thread count in one process-wide variable. The backend never leaves it
// changed: ThreadScope sets the count for the duration of its sgemm calls and puts the previous
// value back, under a mutex that the BLAS device owns, so that two BLAS backends on different
// host threads cannot interleave their settings.
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

// sgemm with c's columns split into blocks over up to n_threads OpenMP threads, each block one
// sgemm call on the calling thread. Small products run on one thread. OpenBLAS must be set to one
// thread (ThreadScope(1)) so that the blocks do not start OpenBLAS workers of their own.
void parallel_sgemm(const GemmOperand& x, bool trans_x, const GemmOperand& y, bool trans_y, int m, int n, int k,
                    float* c, int ldc, int n_threads);

}  // namespace xb::blas
