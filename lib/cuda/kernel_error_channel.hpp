// KernelErrorChannel: a backend's KernelErrorRecord in device memory (see kernel_errors.hpp), the
// labels of the kernels that may write it, and the read-back when the backend synchronizes.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "core/status.hpp"
#include "cuda/cuda_handles.hpp"
#include "cuda/kernel_errors.hpp"

namespace xb::cuda {

class KernelErrorChannel {
public:
    // A record on `device`, cleared by work queued on `stream` (the stream its kernels run on).
    static Result<KernelErrorChannel> create(int device, cudaStream_t stream);

    KernelErrorRecord* record() const { return static_cast<KernelErrorRecord*>(memory_.get()); }
    // The slot of a kernel that checks its data; `label` names it in the message.
    int add_slot(std::string label);
    // The slots added since the last collect; those from `first` on; dropping those from `count`
    // on; adding a list again (a replayed CUDA graph's kernels write the slots of its capture).
    size_t slots() const { return labels_.size(); }
    std::vector<std::string> labels_from(size_t first) const;
    void truncate(size_t count);
    void add_slots(const std::vector<std::string>& labels);
    // The first error that kernels recorded since the last call (OutOfRange naming the node; Ok when
    // none), read after `stream` has completed; the record is cleared for the next work. Costs a
    // small copy only when kernels that check data were queued since the last call.
    Status collect(cudaStream_t stream, const std::string& device_name);

private:
    DeviceMemory memory_;
    std::vector<std::string> labels_;
};

}  // namespace xb::cuda
