// Products of row-split weights (backend/row_split_buffer.hpp) on the CUDA backend, as ggml's CUDA
// split buffer computes them: each slice's rows are multiplied on the slice's device, on a stream
// and cuBLAS handle of that device's own (a lane), with the activations copied there; its rows of
// the result are then copied into the node's rows on the main device. Each lane starts after the
// main stream's work so far (the activations exist) and the main stream waits for every lane, so
// the product is ordered like any other node of the graph.
#pragma once

#include <memory>
#include <vector>

#include "cuda/cuda_handles.hpp"
#include "cuda/kernels.hpp"

namespace xb::cuda {

class CudaDevice;

class RowSplitProducts {
public:
    explicit RowSplitProducts(CudaDevice& main) : main_(&main) {}

    // True for a mul_mat whose weight is split by rows.
    static bool applies(const Tensor& node);
    // Checks the slices: every one in a CUDA device's memory; InvalidArgument naming the weight
    // otherwise.
    static Status check(const Tensor& node);
    // Queues `node` (applies() true, checked) after the work of `main` (the main device's launch
    // context), and makes main.stream wait for it.
    Status launch(const LaunchContext& main, const Tensor& node);

private:
    struct Lane {
        int device = -1;
        StreamPtr stream;
        CublasPtr cublas;
        EventPtr done;
    };
    Result<Lane*> lane(int device);

    CudaDevice* main_;
    EventPtr ready_;  // recorded on the main stream before a product: its activations exist
    std::vector<std::unique_ptr<Lane>> lanes_;
};

}  // namespace xb::cuda
