#include "backend/backend.hpp"

#include "backend/buffer.hpp"
#include "backend/modelled_link.hpp"

namespace xb {

Status Backend::set_tensor_async(Tensor& t, const void* data, size_t offset, size_t size) {
    // No queue: the synchronous path is already ordered with everything before it.
    return storage_buffer(t)->set_tensor(t, data, offset, size);
}

Status Backend::get_tensor_async(const Tensor& t, void* data, size_t offset, size_t size) {
    return storage_buffer(t)->get_tensor(t, data, offset, size);
}

const ModelledLink* modelled_link(const Backend& backend) { return dynamic_cast<const ModelledLink*>(&backend); }

std::optional<double> copy_link_gbps(Backend& src, Backend& dst) {
    if (const ModelledLink* link = modelled_link(dst)) return link->link_gbps(src);
    if (const ModelledLink* link = modelled_link(src)) return link->link_gbps(dst);
    const auto host = [](const Backend& b) { return b.device().type() != DeviceType::GPU; };
    if (host(src) && !host(dst)) return dst.device().host_link_gbps();
    if (!host(src) && host(dst)) return src.device().host_link_gbps();
    return std::nullopt;
}

Status Backend::graph_compute(const Graph& graph) {
    Status status = graph_compute_async(graph);
    synchronize();
    Status async_error = take_async_error();
    return status.is_ok() ? async_error : status;
}

}  // namespace xb
