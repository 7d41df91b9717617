#include "sim/sim_event.hpp"

#include <string>

#include "sim/sim_backend.hpp"
#include "sim/sim_device.hpp"

namespace xb::sim {

SimEvent::SimEvent(SimDevice& device) : Event(device), sim_device_(&device), fence_(std::make_shared<Fence>()) {}

Status SimEvent::record(Backend& backend) {
    auto* sim = dynamic_cast<SimBackend*>(&backend);
    if (sim == nullptr || &sim->sim_device() != sim_device_) {
        return Status(StatusCode::InvalidArgument, std::string(sim_device_->name()) + ": an event of " +
                                                       sim_device_->name() + " cannot be recorded on backend " +
                                                       backend.name());
    }
    const uint64_t mark = fence_->mark();
    sim->stream().enqueue([fence = fence_, mark] {
        fence->signal(mark);
        return Status::ok();
    });
    return Status::ok();
}

Status SimEvent::wait(Backend& backend) {
    const uint64_t mark = fence_->last_mark();
    auto* sim = dynamic_cast<SimBackend*>(&backend);
    if (sim == nullptr) {
        fence_->wait(mark);
        return Status::ok();
    }
    sim->stream().enqueue([fence = fence_, mark] {
        fence->wait(mark);
        return Status::ok();
    });
    return Status::ok();
}

Status SimEvent::synchronize() {
    fence_->wait(fence_->last_mark());
    return Status::ok();
}

}  // namespace xb::sim
