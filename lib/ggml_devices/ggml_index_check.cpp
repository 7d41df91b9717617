#include "ggml_devices/ggml_index_check.hpp"

#include <ggml-backend.h>
#include <ggml.h>

#include <cstring>
#include <string>
#include <vector>

namespace xb::ggml_devices {

namespace {

struct IndexUse {
    const ggml_tensor* indices = nullptr;
    int64_t limit = 0;  // valid indices are [0, limit)
};

IndexUse index_use(const ggml_tensor* node) {
    switch (node->op) {
        case GGML_OP_GET_ROWS: return {node->src[1], node->src[0]->ne[1]};
        case GGML_OP_SET_ROWS: return {node->src[2], node->ne[1]};
        case GGML_OP_MUL_MAT_ID: return {node->src[2], node->src[0]->ne[2]};
        case GGML_OP_ADD_ID: return {node->src[2], node->src[1]->ne[1]};
        default: return {};
    }
}

}  // namespace

bool reads_indices(const ggml_tensor* node) { return index_use(node).indices != nullptr; }

Status check_indices(const ggml_tensor* node) {
    const IndexUse use = index_use(node);
    const ggml_tensor* t = use.indices;
    if (t == nullptr || ggml_nelements(t) == 0) return Status::ok();
    const bool wide = t->type == GGML_TYPE_I64;
    if (!wide && t->type != GGML_TYPE_I32) return Status::ok();  // the builders allow no other type
    // The span of the index tensor's bytes, read in one transfer, then walked with its strides.
    std::vector<unsigned char> bytes(ggml_nbytes(t));
    ggml_backend_tensor_get(t, bytes.data(), 0, bytes.size());
    for (int64_t i3 = 0; i3 < t->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < t->ne[2]; ++i2) {
            for (int64_t i1 = 0; i1 < t->ne[1]; ++i1) {
                for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
                    const size_t at = static_cast<size_t>(i0) * t->nb[0] + static_cast<size_t>(i1) * t->nb[1] +
                                      static_cast<size_t>(i2) * t->nb[2] + static_cast<size_t>(i3) * t->nb[3];
                    int64_t v = 0;
                    if (wide) {
                        std::memcpy(&v, bytes.data() + at, sizeof v);
                    } else {
                        int32_t v32 = 0;
                        std::memcpy(&v32, bytes.data() + at, sizeof v32);
                        v = v32;
                    }
                    if (v < 0 || v >= use.limit) {
                        return Status(StatusCode::InvalidArgument,
                                      std::string("node '") + ggml_get_name(node) + "' (" + ggml_op_desc(node) + "): index " +
                                          std::to_string(v) + " is out of range [0, " + std::to_string(use.limit) + ")");
                    }
                }
            }
        }
    }
    return Status::ok();
}

}  // namespace xb::ggml_devices
