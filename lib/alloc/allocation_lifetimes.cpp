#include "alloc/allocation_lifetimes.hpp"

#include <algorithm>
#include <string>

#include "backend/buffer.hpp"
#include "core/pointer_map.hpp"

namespace xb {

namespace {

const Tensor* root_of(const Tensor* t) { return t->view_src ? t->view_src : t; }

Status check_placement(const Tensor& t) {
    const Buffer& b = *t.buffer;
    const auto* base = static_cast<const std::byte*>(const_cast<Buffer&>(b).base());
    const auto* data = static_cast<const std::byte*>(t.data);
    const size_t size = b.alloc_size(t);
    if (data < base || data + size > base + b.size()) {
        return Status(StatusCode::Internal, "allocation check: '" + t.display_name() + "' lies outside its buffer");
    }
    if (reinterpret_cast<uintptr_t>(data) % b.alignment() != 0) {
        return Status(StatusCode::Internal, "allocation check: '" + t.display_name() + "' is not aligned to " +
                                                std::to_string(b.alignment()));
    }
    return Status::ok();
}

}  // namespace

Result<std::vector<StorageLifetime>> storage_lifetimes(const Graph& graph) {
    const int n = graph.n_nodes();
    PointerMap index;  // storage root -> its entry of out
    std::vector<StorageLifetime> out;
    // keep: the storage is read by the user after the graph (an output seen through a view).
    auto touch = [&](const Tensor* t, int at, bool keep = false) -> Status {
        const Tensor* r = root_of(t);
        if (r->data == nullptr || r->buffer == nullptr) return Status::ok();
        const auto [entry, fresh] = index.insert(r, static_cast<int32_t>(out.size()));
        if (fresh) {
            XB_RETURN_IF_ERROR(check_placement(*r));
            const auto* begin = static_cast<const std::byte*>(r->data);
            // Leafs, inputs and params are set before the graph runs; they and outputs outlive it.
            const bool exists_before = r->op == Op::None || r->is_input() || r->is_param() || !graph.contains(r);
            const bool survives = exists_before || r->is_output();
            out.push_back({r, begin, begin + r->buffer->alloc_size(*r), exists_before ? -1 : at, survives ? n : at});
        }
        StorageLifetime& s = out[static_cast<size_t>(entry)];
        s.last = keep ? n : std::max(s.last, at);
        return Status::ok();
    };
    for (int i = 0; i < n; ++i) {
        const Tensor* node = graph.node(i);
        for (const Tensor* src : node->src) {
            if (src != nullptr) XB_RETURN_IF_ERROR(touch(src, i));
        }
        // A node writes its own storage, or its view source's (cpy, set_rows); an output view keeps
        // its source's storage alive.
        if (!op_is_view(node->op) || node->is_output()) XB_RETURN_IF_ERROR(touch(node, i, node->is_output()));
    }
    return out;
}

bool is_inplace_successor(const StorageLifetime& a, const StorageLifetime& b) {
    if (a.last != b.first || a.begin != b.begin || !op_can_inplace(b.tensor->op)) return false;
    for (const Tensor* src : b.tensor->src) {
        if (src != nullptr && root_of(src) == a.tensor) return true;
    }
    return false;
}

}  // namespace xb
