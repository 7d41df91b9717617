// Event: a point in a backend's stream that other backends or the host can wait for
// (ggml_backend_event). Made by Device::event_new; move-only through unique_ptr.
#pragma once

#include "core/status.hpp"

namespace xb {

class Backend;
class Device;

class Event {
public:
    explicit Event(Device& device) : device_(&device) {}
    virtual ~Event() = default;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    Device& device() const { return *device_; }

    // Marks the current end of `backend`'s queue; the event completes when the work before it does.
    virtual Status record(Backend& backend) = 0;
    // Makes `backend` wait (on its own queue, without blocking the host) until the event completes.
    virtual Status wait(Backend& backend) = 0;
    // Blocks the host until the event completes.
    virtual Status synchronize() = 0;

private:
    Device* device_;
};

}  // namespace xb
