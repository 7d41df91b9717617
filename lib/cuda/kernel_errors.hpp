// Errors that kernels find in the data (a row index out of range in get_rows or set_rows). A
// kernel cannot return a status: it writes the first such error into a KernelErrorRecord in device
// memory, and the backend reads the record when it synchronizes (take_async_error reports it).
//
// Each kernel that checks data is given a slot number; the backend keeps the slot's label (node
// name and op) on the host, so that the message names the node. Pure host code: testable anywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xb::cuda {

enum KernelErrorKind : int32_t {
    kKernelErrorNone = 0,
    kKernelErrorIndexOutOfRange = 1,
};

// Laid out for the device: written by one thread (the first to claim `kind`), read by the host
// only after the stream that ran the kernel has completed.
struct KernelErrorRecord {
    int32_t kind = kKernelErrorNone;
    int32_t slot = 0;
    int64_t value = 0;  // the offending index
    int64_t bound = 0;  // the valid range is [0, bound)
};

// "CUDA0: get_rows: index 12 out of range [0, 9) (node 'tok_embd')"; labels[slot] names the node
// ("get_rows" and "node 'x'" parts), an unknown slot is reported as such.
std::string describe_kernel_error(const KernelErrorRecord& record, const std::vector<std::string>& labels,
                                  const std::string& device_name);

}  // namespace xb::cuda
