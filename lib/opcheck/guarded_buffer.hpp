// Memory for a case with guard bytes around every tensor, to catch kernels that write outside
// their output.
//
// Every tensor of the context that needs memory gets its own slot in one buffer, with a guard
// region before the first and after each one: [guard][t0][guard][t1]...[guard]. The guards are
// filled with kGuardByte and the tensors with kFillByte (0xff: NaN in every float type, -1 in the
// integer types, so that an output element an op forgets to write shows up as NaN). After the
// computation find_overrun() reads every guard back through the buffer's own get path (so it works
// for memory the host cannot see) and names the first one that changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/buffer.hpp"
#include "backend/buffer_type.hpp"
#include "core/context.hpp"
#include "core/status.hpp"

namespace xb::opcheck {

inline constexpr uint8_t kGuardByte = 0xa5;
inline constexpr uint8_t kFillByte = 0xff;

class GuardedBuffer {
public:
    // Places every tensor of `ctx` without data in one new buffer of `buft`, guards of at least
    // `min_guard_bytes` (rounded up to the type's alignment) around each, then initialises views.
    // OutOfMemory / InvalidArgument when the buffer type cannot hold it all in one buffer.
    static Result<GuardedBuffer> allocate(Context& ctx, BufferType& buft, size_t min_guard_bytes = 64);

    GuardedBuffer(GuardedBuffer&&) noexcept = default;
    GuardedBuffer& operator=(GuardedBuffer&&) noexcept = default;
    ~GuardedBuffer() = default;

    Buffer& buffer() const { return *buffer_; }
    size_t guard_count() const { return guards_.size(); }

    // "" when every guard still holds kGuardByte; otherwise the first changed byte, e.g.
    // "write past the end of 'node_1' (byte 0 after it, found 0x00)".
    Result<std::string> find_overrun() const;

private:
    // A guard region, seen as a tensor of its own so that the public tensor_get reaches it.
    struct Guard {
        Tensor* region;
        const Tensor* before;  // the tensor it follows (nullptr for the first guard)
        const Tensor* after;   // the tensor it precedes (nullptr for the last guard)
    };

    GuardedBuffer() = default;
    Status place(Context& ctx, BufferType& buft, size_t min_guard_bytes);
    Status add_guard(size_t begin, size_t end, const Tensor* before, const Tensor* after);

    std::unique_ptr<Buffer> buffer_;
    std::unique_ptr<Context> guard_ctx_;  // owns the guard tensors
    std::vector<Guard> guards_;
};

}  // namespace xb::opcheck
