#include "cuda/cuda_event.hpp"

#include <string>

#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_device.hpp"

namespace xb::cuda {

CudaEvent::CudaEvent(CudaDevice& device, EventPtr event)
    : Event(device), cuda_device_(&device), event_(std::move(event)) {}

Result<std::unique_ptr<CudaEvent>> CudaEvent::create(CudaDevice& device) {
    XB_ASSIGN_OR_RETURN(EventPtr event, create_event(device.id()));
    return std::unique_ptr<CudaEvent>(new CudaEvent(device, std::move(event)));
}

Status CudaEvent::record(Backend& backend) {
    auto* cuda = dynamic_cast<CudaBackend*>(&backend);
    if (cuda == nullptr || &cuda->cuda_device() != cuda_device_) {
        return Status(StatusCode::InvalidArgument, std::string(cuda_device_->name()) + ": an event of " +
                                                       cuda_device_->name() + " cannot be recorded on backend " +
                                                       backend.name());
    }
    XB_RETURN_IF_ERROR(use_device(cuda_device_->id()));
    XB_CUDA_RETURN_IF_ERROR(cudaEventRecord(event_.get(), cuda->stream()));
    return Status::ok();
}

Status CudaEvent::wait(Backend& backend) {
    auto* cuda = dynamic_cast<CudaBackend*>(&backend);
    if (cuda == nullptr) return synchronize();  // no queue to wait on: the host waits
    XB_RETURN_IF_ERROR(use_device(cuda->cuda_device().id()));
    XB_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(cuda->stream(), event_.get(), 0));
    return Status::ok();
}

Status CudaEvent::synchronize() {
    XB_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(event_.get()));
    return Status::ok();
}

}  // namespace xb::cuda
