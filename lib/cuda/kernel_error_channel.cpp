#include "cuda/kernel_error_channel.hpp"

#include "cuda/cuda_check.hpp"

namespace xb::cuda {

Result<KernelErrorChannel> KernelErrorChannel::create(int device, cudaStream_t stream) {
    KernelErrorChannel channel;
    XB_ASSIGN_OR_RETURN(channel.memory_, DeviceMemory::allocate(device, sizeof(KernelErrorRecord)));
    // On the stream the kernels use: ordered before any of them (cudaMalloc'd memory is not zeroed).
    XB_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(channel.memory_.get(), 0, sizeof(KernelErrorRecord), stream));
    return channel;
}

int KernelErrorChannel::add_slot(std::string label) {
    labels_.push_back(std::move(label));
    return static_cast<int>(labels_.size() - 1);
}

std::vector<std::string> KernelErrorChannel::labels_from(size_t first) const {
    if (first >= labels_.size()) return {};
    return {labels_.begin() + static_cast<std::ptrdiff_t>(first), labels_.end()};
}

void KernelErrorChannel::truncate(size_t count) {
    if (count < labels_.size()) labels_.resize(count);
}

void KernelErrorChannel::add_slots(const std::vector<std::string>& labels) {
    labels_.insert(labels_.end(), labels.begin(), labels.end());
}

Status KernelErrorChannel::collect(cudaStream_t stream, const std::string& device_name) {
    if (labels_.empty()) return Status::ok();
    KernelErrorRecord found;
    XB_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&found, record(), sizeof found, cudaMemcpyDeviceToHost, stream));
    XB_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    Status error;
    if (found.kind != kKernelErrorNone) {
        error = Status(StatusCode::OutOfRange, describe_kernel_error(found, labels_, device_name));
        XB_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(record(), 0, sizeof found, stream));
        XB_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    }
    labels_.clear();
    return error;
}

}  // namespace xb::cuda
