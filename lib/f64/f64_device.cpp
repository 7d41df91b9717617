#include "f64/f64_device.hpp"

#include <omp.h>

#include <array>
#include <limits>
#include <optional>

#include "backend/host_memory.hpp"
#include "backend/host_threads.hpp"
#include "core/quant.hpp"
#include "f64/tensor_rows.hpp"

namespace xb::f64 {

namespace {

// Sets the calling thread's OpenMP team size for a scope, and puts the old one back.
class OmpThreads {
public:
    explicit OmpThreads(int n) : previous_(omp_get_max_threads()) { omp_set_num_threads(n); }
    ~OmpThreads() { omp_set_num_threads(previous_); }
    OmpThreads(const OmpThreads&) = delete;
    OmpThreads& operator=(const OmpThreads&) = delete;

private:
    int previous_;
};

}  // namespace

std::string F64Device::description() const {
    return "float64 reference: every op in exact arithmetic, weights dequantized exactly (slow; not a real device)";
}

MemoryInfo F64Device::memory() const { return {available_memory_bytes() / 2, physical_memory_bytes() / 2}; }

Result<std::unique_ptr<Backend>> F64Device::init_backend(std::string_view params) {
    XB_ASSIGN_OR_RETURN(int threads, parse_threads_setting("F64", params));
    return std::unique_ptr<Backend>(std::make_unique<F64Backend>(*this, threads));
}

bool F64Device::supports_op(const Tensor& op) const {
    if (computes_nothing(op)) return true;
    return !is_quantized(op.type) || can_quantize(op.type);
}

bool F64Backend::set_n_threads(int n_threads) {
    if (n_threads < 1) return false;
    n_threads_ = n_threads;
    return true;
}

bool F64Backend::set_abort_callback(AbortCallback callback) {
    abort_ = std::move(callback);
    return true;
}

Status F64Backend::compute_node(Tensor& node) const {
    std::array<std::optional<TensorRows>, kMaxSrc> rows;
    std::array<const exact::RowSource*, kMaxSrc> srcs{};
    for (int j = 0; j < kMaxSrc; ++j) {
        const Tensor* src = node.src[static_cast<size_t>(j)];
        if (src == nullptr) continue;
        if (f64_storage(*src) == nullptr) {
            return Status(StatusCode::InvalidArgument, "F64: source '" + src->display_name() + "' of node '" +
                                                           node.display_name() + "' is not in F64 memory");
        }
        srcs[static_cast<size_t>(j)] = &rows[static_cast<size_t>(j)].emplace(*src);
    }
    XB_ASSIGN_OR_RETURN(exact::NodeValues values, exact::evaluate_node(node, srcs));
    return write_node(node, values);
}

Status F64Backend::graph_compute_async(const Graph& graph) {
    for (const Tensor* node : graph.nodes()) {
        if (computes_nothing(*node)) continue;
        if (f64_storage(*node) == nullptr) {
            return Status(StatusCode::InvalidArgument, "F64: node '" + node->display_name() + "' (" +
                                                           node->op_label() + ") is not in F64 memory");
        }
        if (!device().supports_op(*node)) {
            return Status(StatusCode::NotSupported, "F64: node '" + node->display_name() + "' (" + node->op_label() +
                                                        ") writes " + dtype_name(node->type) + ", which has no quantizer");
        }
    }
    OmpThreads threads(n_threads_ > 0 ? n_threads_ : default_host_threads());
    for (Tensor* node : graph.nodes()) {
        if (computes_nothing(*node)) continue;
        if (abort_ && abort_()) return Status(StatusCode::Aborted, "F64: computation aborted by the abort callback");
        XB_RETURN_IF_ERROR(compute_node(*node));
    }
    return Status::ok();
}

void register_f64_backend(Registry& registry) {
    if (registry.reg_by_name("F64") != nullptr) return;
    BackendReg& reg = registry.add(std::make_unique<BackendReg>("F64"));
    reg.add_device(std::make_unique<F64Device>(reg));
}

}  // namespace xb::f64
