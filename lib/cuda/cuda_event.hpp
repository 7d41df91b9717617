// CudaEvent: a cudaEvent_t of one GPU (ggml_backend_event). record() marks the end of a CUDA
// backend's queue on the event's device; wait() makes a CUDA backend of any device wait for it on
// its stream without blocking the host (a backend without a queue, the CPU, waits on the host);
// synchronize() blocks the host. As with CUDA events, wait and synchronize refer to the latest
// record and return at once when there was none.
#pragma once

#include <memory>

#include "backend/event.hpp"
#include "cuda/cuda_handles.hpp"

namespace xb::cuda {

class CudaDevice;

class CudaEvent final : public Event {
public:
    static Result<std::unique_ptr<CudaEvent>> create(CudaDevice& device);

    // InvalidArgument unless `backend` is a CUDA backend of this event's device.
    Status record(Backend& backend) override;
    Status wait(Backend& backend) override;
    Status synchronize() override;

private:
    CudaEvent(CudaDevice& device, EventPtr event);

    CudaDevice* cuda_device_;
    EventPtr event_;
};

}  // namespace xb::cuda
