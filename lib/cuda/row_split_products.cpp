#include "cuda/row_split_products.hpp"

#include <string>

#include "backend/row_split_buffer.hpp"
#include "cuda/cuda_buffer.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/cuda_support.hpp"

namespace xb::cuda {

namespace {

// Stream-ordered device memory of one lane, freed on the lane's stream when it goes out of scope
// (after the work queued on that stream that uses it).
class LaneMemory {
public:
    explicit LaneMemory(cudaStream_t stream) : stream_(stream) {}
    ~LaneMemory() {
        for (void* p : blocks_) static_cast<void>(cudaFreeAsync(p, stream_));
    }
    LaneMemory(const LaneMemory&) = delete;
    LaneMemory& operator=(const LaneMemory&) = delete;

    Result<void*> allocate(size_t bytes) {
        if (bytes == 0) return static_cast<void*>(nullptr);
        void* p = nullptr;
        XB_CUDA_RETURN_IF_ERROR(cudaMallocAsync(&p, bytes, stream_));
        blocks_.push_back(p);
        return p;
    }

private:
    cudaStream_t stream_;
    std::vector<void*> blocks_;
};

const RowSplitBuffer* weights_of(const Tensor& node) { return row_split_storage(*node.src[0]); }

// `height` rows of `width` bytes from (src, src_pitch) on src_device to (dst, dst_pitch) on
// dst_device. Between two GPUs a 3-D peer copy, which works with or without peer access (a plain
// 2-D copy between devices needs it).
Status copy_rows(void* dst, size_t dst_pitch, int dst_device, const void* src, size_t width, int src_device, size_t height,
                 cudaStream_t stream) {
    if (dst_device == src_device) {
        XB_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(dst, dst_pitch, src, width, width, height, cudaMemcpyDeviceToDevice, stream));
        return Status::ok();
    }
    cudaMemcpy3DPeerParms p{};
    p.srcPtr = make_cudaPitchedPtr(const_cast<void*>(src), width, width, height);
    p.srcDevice = src_device;
    p.dstPtr = make_cudaPitchedPtr(dst, dst_pitch, width, height);
    p.dstDevice = dst_device;
    p.extent = make_cudaExtent(width, height, 1);
    XB_CUDA_RETURN_IF_ERROR(cudaMemcpy3DPeerAsync(&p, stream));
    return Status::ok();
}

}  // namespace

bool RowSplitProducts::applies(const Tensor& node) {
    return node.op == Op::MulMat && node.src[0] != nullptr && weights_of(node) != nullptr;
}

Status RowSplitProducts::check(const Tensor& node) {
    const Tensor& w = *node.src[0];
    const auto* slices = weights_of(node)->slices(w);
    const Tensor* x = node.src[1];
    if (slices == nullptr || x == nullptr || !x->is_contiguous() || !node.is_contiguous() || node.type != DType::F32) {
        return Status(StatusCode::InvalidArgument, "the product of the row-split weight '" + w.display_name() +
                                                       "' needs initialised slices, contiguous activations and an f32 result");
    }
    for (const auto& s : *slices) {
        if (cuda_storage(s->tensor) == nullptr) {
            return Status(StatusCode::InvalidArgument, "a slice of the row-split weight '" + w.display_name() +
                                                           "' is not in a CUDA device's memory");
        }
    }
    return Status::ok();
}

Result<RowSplitProducts::Lane*> RowSplitProducts::lane(int device) {
    for (const auto& l : lanes_) {
        if (l->device == device) return l.get();
    }
    auto l = std::make_unique<Lane>();
    l->device = device;
    XB_ASSIGN_OR_RETURN(l->stream, create_stream(device));
    XB_ASSIGN_OR_RETURN(l->cublas, create_cublas(device, l->stream.get()));
    XB_ASSIGN_OR_RETURN(l->done, create_event(device));
    main_->enable_peer_access(device);  // the rows come back by peer copies where the GPUs allow
    lanes_.push_back(std::move(l));
    return lanes_.back().get();
}

Status RowSplitProducts::launch(const LaunchContext& main, const Tensor& node) {
    const int main_device = main_->id();
    if (!ready_) {
        XB_ASSIGN_OR_RETURN(ready_, create_event(main_device));
    }
    XB_RETURN_IF_ERROR(use_device(main_device));
    XB_CUDA_RETURN_IF_ERROR(cudaEventRecord(ready_.get(), main.stream));
    const Tensor& x = *node.src[1];
    const int64_t columns = node.ne[1] * node.ne[2] * node.ne[3];  // rows of the result, in ggml's terms
    for (const auto& slice : *weights_of(node)->slices(*node.src[0])) {
        const int device = cuda_storage(slice->tensor)->device_id();
        XB_ASSIGN_OR_RETURN(Lane * l, lane(device));
        XB_RETURN_IF_ERROR(use_device(device));
        XB_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(l->stream.get(), ready_.get(), 0));
        {  // the lane's temporaries are freed on its stream, after the work below, at the end of this block
            LaneMemory memory(l->stream.get());
            // The activations, on the slice's device.
            const void* x_data = x.data;
            if (device != main_device) {
                XB_ASSIGN_OR_RETURN(void* copy, memory.allocate(x.nbytes()));
                XB_CUDA_RETURN_IF_ERROR(cudaMemcpyPeerAsync(copy, device, x.data, main_device, x.nbytes(), l->stream.get()));
                x_data = copy;
            }
            Tensor xs;  // x where this lane reads it
            xs.type = x.type;
            xs.ne = x.ne;
            xs.nb = x.nb;
            xs.name = x.name;
            xs.data = const_cast<void*>(x_data);
            // The slice's product: its rows of the result, packed.
            Tensor part;
            describe_slice_product(node, *slice, slice->tensor, xs, part);
            XB_ASSIGN_OR_RETURN(part.data, memory.allocate(part.nbytes()));
            const size_t scratch_bytes = node_scratch_bytes(part);
            XB_ASSIGN_OR_RETURN(void* scratch, memory.allocate(scratch_bytes));
            LaunchContext ctx = main;
            ctx.stream = l->stream.get();
            ctx.cublas = l->cublas.get();
            ctx.scratch = static_cast<char*>(scratch);
            ctx.scratch_bytes = scratch_bytes;
            XB_RETURN_IF_ERROR(launch_node(ctx, part));
            // Gathered: each column's rows [row_begin, row_end) of the node, from the packed product.
            const size_t row_bytes = static_cast<size_t>(part.ne[0]) * sizeof(float);
            char* into = static_cast<char*>(node.data) + static_cast<size_t>(slice->row_begin) * node.nb[0];
            XB_RETURN_IF_ERROR(copy_rows(into, node.nb[1], main_device, part.data, row_bytes, device,
                                         static_cast<size_t>(columns), l->stream.get()));
        }
        XB_CUDA_RETURN_IF_ERROR(cudaEventRecord(l->done.get(), l->stream.get()));
        XB_RETURN_IF_ERROR(use_device(main_device));
        XB_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(main.stream, l->done.get(), 0));
    }
    return use_device(main_device);
}

}  // namespace xb::cuda
