// ModelledLink: an optional interface of backends whose copies cost what a model of their link
// says rather than what they measure (the simulated devices, whose memory is host memory). The
// scheduler's profile reports the modelled copy time beside the measured one; backends of real
// devices do not implement it.
#pragma once

#include <cstddef>
#include <optional>

#include "core/tensor.hpp"

namespace xb {

class Backend;

class ModelledLink {
public:
    virtual ~ModelledLink() = default;
    // Modelled seconds of one copy of src into dst (both allocated, same size), one of them in this
    // backend's memory and the other in `other`'s (either direction). A host side in pinned memory
    // travels at the link's bandwidth, one in pageable memory at the slower pageable bandwidth.
    virtual double modelled_copy_seconds(const Tensor& src, const Tensor& dst, const Backend& other) const = 0;
    // The link's bandwidth in GB/s between this backend and `other`: what a copy from pinned host
    // memory (or between two devices, over their peer link) reaches at best.
    virtual double link_gbps(const Backend& other) const = 0;
};

// The backend's link model, or nullptr when it has none.
const ModelledLink* modelled_link(const Backend& backend);

// The bandwidth in GB/s of the link a copy from `src`'s memory to `dst`'s crosses, at best: a
// simulated side's modelled link, else for a copy between the host (a CPU or accelerator device)
// and a GPU the GPU's Device::host_link_gbps (CUDA measures it once); nullopt when unknown (two
// host backends, or two real GPUs).
std::optional<double> copy_link_gbps(Backend& src, Backend& dst);

}  // namespace xb
