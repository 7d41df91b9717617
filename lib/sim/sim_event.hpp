// SimEvent: a mark in a sim stream (ggml_backend_event). record() queues the mark on a stream of
// the event's device; wait() makes another stream (of any sim device) wait for it on its worker,
// without blocking the host; synchronize() blocks the host. As with CUDA events, wait and
// synchronize refer to the latest record made before them, and return at once when there is none.
#pragma once

#include <memory>

#include "backend/event.hpp"
#include "sim/sim_fence.hpp"

namespace xb::sim {

class SimDevice;

class SimEvent final : public Event {
public:
    explicit SimEvent(SimDevice& device);

    // InvalidArgument unless `backend` is a stream of this event's device.
    Status record(Backend& backend) override;
    // On a backend without a queue (CPU), the host waits instead: its next work then starts after.
    Status wait(Backend& backend) override;
    Status synchronize() override;

private:
    SimDevice* sim_device_;
    std::shared_ptr<Fence> fence_;  // shared with queued marks that may outlive the event
};

}  // namespace xb::sim
