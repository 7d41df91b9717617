#include "opcheck/guarded_buffer.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "backend/tensor_io.hpp"

namespace xb::opcheck {

namespace {

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

bool needs_memory(const Tensor& t) { return t.data == nullptr && !t.is_view(); }

// Where each tensor and guard goes: offsets of the tensors and the buffer's size.
struct Layout {
    std::vector<Tensor*> tensors;
    std::vector<size_t> offsets;
    std::vector<size_t> ends;  // offset + alloc size: where the guard after the tensor starts
    size_t size = 0;
};

Layout plan(Context& ctx, const BufferType& buft, size_t guard, size_t alignment) {
    Layout l;
    size_t at = guard;
    for (Tensor& t : ctx.tensors()) {
        if (!needs_memory(t)) continue;
        l.tensors.push_back(&t);
        l.offsets.push_back(at);
        l.ends.push_back(at + buft.alloc_size(t));
        at = round_up(l.ends.back() + guard, alignment);
    }
    l.size = at;
    return l;
}

std::string name_of(const Tensor* t) { return "'" + t->display_name() + "'"; }

// The report of a changed byte at `offset` inside a guard of `size` bytes.
std::string describe(const Tensor* before, const Tensor* after, size_t offset, size_t size, uint8_t value) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", value);
    if (before == nullptr) {
        return "write before the start of " + name_of(after) + " (" + std::to_string(size - offset) +
               " bytes before it, found " + byte + ")";
    }
    return "write past the end of " + name_of(before) + " (byte " + std::to_string(offset) + " after it, found " +
           byte + ")";
}

}  // namespace

Result<GuardedBuffer> GuardedBuffer::allocate(Context& ctx, BufferType& buft, size_t min_guard_bytes) {
    if (!ctx.ok()) return ctx.status();
    GuardedBuffer g;
    XB_RETURN_IF_ERROR(g.place(ctx, buft, min_guard_bytes));
    for (Tensor& t : ctx.tensors()) {
        if (t.is_view() && t.data == nullptr) XB_RETURN_IF_ERROR(view_init(t));
    }
    return g;
}

Status GuardedBuffer::place(Context& ctx, BufferType& buft, size_t min_guard_bytes) {
    // Guards are f16 tensors (2-byte elements: every type's size is a multiple of 2), so both ends
    // of a guard must be even; tensors start at the buffer type's alignment.
    const size_t alignment = std::lcm<size_t>(std::max<size_t>(buft.alignment(), 1), 2);
    const size_t guard = round_up(std::max<size_t>(min_guard_bytes, 2), alignment);
    const Layout l = plan(ctx, buft, guard, alignment);
    // Slack at the end: a buffer type may pad a guard tensor's alloc size.
    const size_t size = l.size + alignment;
    if (size > buft.max_size()) {
        return Status(StatusCode::InvalidArgument, "guarded allocation needs " + std::to_string(size) +
                                                       " bytes in one buffer, more than the " + buft.name() +
                                                       " maximum " + std::to_string(buft.max_size()));
    }
    XB_ASSIGN_OR_RETURN(buffer_, buft.alloc_buffer(size));
    buffer_->clear(kFillByte);
    guard_ctx_ = std::make_unique<Context>();
    auto* base = static_cast<std::byte*>(buffer_->base());
    size_t guard_begin = 0;
    for (size_t i = 0; i < l.tensors.size(); ++i) {
        XB_RETURN_IF_ERROR(add_guard(guard_begin, l.offsets[i], i > 0 ? l.tensors[i - 1] : nullptr, l.tensors[i]));
        XB_RETURN_IF_ERROR(tensor_alloc(*buffer_, *l.tensors[i], base + l.offsets[i]));
        guard_begin = round_up(l.ends[i], 2);
    }
    return add_guard(guard_begin, l.size, l.tensors.empty() ? nullptr : l.tensors.back(), nullptr);
}

Status GuardedBuffer::add_guard(size_t begin, size_t end, const Tensor* before, const Tensor* after) {
    if (end <= begin) return Status::ok();
    Tensor* region = guard_ctx_->new_tensor(DType::F16, {static_cast<int64_t>((end - begin) / 2)});
    region->name = "guard" + std::to_string(guards_.size());
    XB_RETURN_IF_ERROR(tensor_alloc(*buffer_, *region, static_cast<std::byte*>(buffer_->base()) + begin));
    XB_RETURN_IF_ERROR(tensor_memset(*region, kGuardByte, 0, region->nbytes()));
    guards_.push_back({region, before, after});
    return Status::ok();
}

Result<std::string> GuardedBuffer::find_overrun() const {
    std::vector<uint8_t> bytes;
    for (const Guard& g : guards_) {
        bytes.resize(g.region->nbytes());
        XB_RETURN_IF_ERROR(tensor_get(*g.region, bytes.data(), 0, bytes.size()));
        const auto changed = std::find_if(bytes.begin(), bytes.end(), [](uint8_t b) { return b != kGuardByte; });
        if (changed == bytes.end()) continue;
        const auto offset = static_cast<size_t>(changed - bytes.begin());
        // A guard has two neighbours; the one nearer the changed byte is the likelier culprit.
        const bool nearer_after = g.after != nullptr && (g.before == nullptr || offset >= bytes.size() / 2);
        return nearer_after ? describe(nullptr, g.after, offset, bytes.size(), *changed)
                            : describe(g.before, g.after, offset, bytes.size(), *changed);
    }
    return std::string();
}

}  // namespace xb::opcheck
