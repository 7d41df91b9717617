// Context: the arena that owns tensor metadata (and, optionally, their data).
//
// Tensors made by a context live exactly as long as it does and never move. By default a context
// holds metadata only (data is placed later in backend buffers, as ggml's no_alloc contexts);
// with `alloc_data` every non-view tensor gets its own host memory, which tests use.
//
// Op builders never abort on bad arguments: they record the first error on the context (sticky)
// and return a placeholder tensor so that a chain of builder calls stays safe. Graph::build reports
// that error; `status()` can also be checked directly.
#pragma once

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

#include "core/aligned_bytes.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb {

struct ContextParams {
    bool alloc_data = false;     // give every non-view tensor its own host memory
    size_t data_alignment = 64;  // alignment of that memory
};

class Context {
public:
    explicit Context(ContextParams params = {});
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    // A new tensor with contiguous strides. Dims beyond those given are 1.
    Tensor* new_tensor(DType type, std::span<const int64_t> ne);
    Tensor* new_tensor(DType type, std::initializer_list<int64_t> ne) {
        return new_tensor(type, std::span<const int64_t>(ne.begin(), ne.size()));
    }
    // Same type, shape and strides as `t`; for copies that must keep t's layout.
    Tensor* dup_tensor_layout(const Tensor& t);
    // A tensor that aliases `src` (its view_src root) at byte `offset` with the given shape/strides.
    Tensor* new_view(Tensor& src, const std::array<int64_t, kMaxDims>& ne,
                     const std::array<size_t, kMaxDims>& nb, size_t offset);

    // Every tensor made by this context, in creation order.
    const std::deque<Tensor>& tensors() const { return tensors_; }
    std::deque<Tensor>& tensors() { return tensors_; }
    size_t tensor_count() const { return tensors_.size(); }
    Tensor* find(std::string_view name);

    bool allocates_data() const { return params_.alloc_data; }

    // Sticky error of the op builders: the first failure wins.
    const Status& status() const { return status_; }
    bool ok() const { return status_.is_ok(); }
    // Records `error` (if none is recorded yet) and returns a placeholder tensor of `shape_like`'s
    // type and shape (or [1] f32) so that callers can keep building.
    Tensor* fail(Status error, const Tensor* shape_like = nullptr);
    // The placeholder alone, for callers whose checks already recorded the error.
    Tensor* placeholder(const Tensor* shape_like = nullptr);

private:
    Tensor* new_tensor_impl(DType type, const std::array<int64_t, kMaxDims>& ne, Tensor* view_src, size_t view_offs);

    ContextParams params_;
    std::deque<Tensor> tensors_;          // deque: growing never moves existing tensors
    std::vector<AlignedBytes> storage_;   // data of tensors when params_.alloc_data
    Status status_;
};

}  // namespace xb
