#include "blas/blas_backend.hpp"

#include "backend/tensor_io.hpp"
#include "blas/openblas.hpp"

namespace xb::blas {

namespace {

std::string node_text(const Tensor& node) { return "node '" + node.display_name() + "' (" + node.op_label() + ")"; }

// sgemm reads and writes through tensor->data: the memory must be the host's.
Status check_host_data(const Tensor& node, const Tensor& t) {
    if (t.data == nullptr) {
        return Status(StatusCode::InvalidArgument,
                      "BLAS: tensor '" + t.display_name() + "' of " + node_text(node) + " is not allocated");
    }
    const Buffer* buffer = storage_buffer(t);
    if (buffer != nullptr && !buffer->is_host()) {
        return Status(StatusCode::InvalidArgument, "BLAS: tensor '" + t.display_name() + "' of " + node_text(node) +
                                                       " is in a " + buffer->name() + " buffer, not host memory");
    }
    return Status::ok();
}

}  // namespace

BlasBackend::BlasBackend(BlasDevice& device, int n_threads)
    : Backend(device), device_(&device), n_threads_(n_threads) {}

bool BlasBackend::set_n_threads(int n_threads) {
    if (n_threads < 1) return false;
    n_threads_ = n_threads;
    return true;
}

int BlasBackend::n_threads() const { return n_threads_ > 0 ? n_threads_ : device_->n_threads(); }

Status BlasBackend::check_node(const Tensor& node) const {
    if (node.op != Op::MulMat && node.op != Op::OutProd) {
        return Status(
            StatusCode::NotSupported,
            "BLAS: " + node_text(node) + " is not supported (the BLAS backend computes mul_mat and out_prod)");
    }
    if (!matmul_supported(node)) {
        return Status(StatusCode::NotSupported, "BLAS: " + node_text(node) + " " + node.shape_string() +
                                                    " is not supported (operand types or result layout)");
    }
    XB_RETURN_IF_ERROR(check_host_data(node, node));
    XB_RETURN_IF_ERROR(check_host_data(node, *node.src[0]));
    return check_host_data(node, *node.src[1]);
}

Status BlasBackend::graph_compute_async(const Graph& graph) {
    // Check everything first: a graph is computed completely or not at all.
    for (const Tensor* node : graph.nodes()) {
        if (!computes_nothing(*node)) XB_RETURN_IF_ERROR(check_node(*node));
    }
    const int n = n_threads();
    std::lock_guard lock(device_->openblas_mutex());
    const ThreadScope single_threaded_blocks(1);  // the n threads are OpenMP's (blas/openblas.hpp)
    for (const Tensor* node : graph.nodes()) {
        if (!computes_nothing(*node)) XB_RETURN_IF_ERROR(compute_matmul(*node, ws_, n));
    }
    return Status::ok();
}

}  // namespace xb::blas
