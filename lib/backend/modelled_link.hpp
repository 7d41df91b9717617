// ModelledLink: an optional interface of backends whose copies cost what a model of their link
// says rather than what they measure (the simulated devices, whose memory is host memory). The
// scheduler's profile reports the modelled copy time beside the measured one; backends of real
// devices do not implement it.
#pragma once

#include <cstddef>

namespace xb {

class Backend;

class ModelledLink {
public:
    virtual ~ModelledLink() = default;
    // Modelled seconds of one copy of `bytes` between this backend and `other` (either direction).
    virtual double modelled_copy_seconds(size_t bytes, const Backend& other) const = 0;
};

// The backend's link model, or nullptr when it has none.
const ModelledLink* modelled_link(const Backend& backend);

}  // namespace xb
