#include "blas/blas_backend.hpp"
namespace xb::blas {
void register_blas_backend(Registry& registry) { (void)registry; }
}  // namespace xb::blas
