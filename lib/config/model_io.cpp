#include "config/model_io.hpp"

#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "backend/tensor_io.hpp"
#include "formats/gguf.hpp"
#include "formats/npy.hpp"
#include "core/message_text.hpp"

namespace xb {

Result<NpyArray> npy_from_tensor(const Tensor& t) {
    NpyArray a;
    for (int i = t.n_dims() - 1; i >= 0; --i) a.shape.push_back(t.ne[static_cast<size_t>(i)]);
    const bool raw = t.is_contiguous() && npy_has_type(t.type);
    if (raw) {
        a.type = t.type;
        a.data.resize(t.nbytes());
        XB_RETURN_IF_ERROR(tensor_get(t, a.data.data(), 0, a.data.size()));
        return a;
    }
    XB_ASSIGN_OR_RETURN(const std::vector<float> values, tensor_get_f32(t));
    a.type = DType::F32;
    a.data.resize(values.size() * sizeof(float));
    std::memcpy(a.data.data(), values.data(), a.data.size());
    return a;
}

Status save_npy(const Tensor& t, const std::string& path) {
    XB_ASSIGN_OR_RETURN(const NpyArray a, npy_from_tensor(t));
    return write_npy(path, a);
}

}  // namespace xb

namespace xb::config {

Status save_weights(const Model& model, const std::string& path) {
    GgufWriter w;
    w.set_kv("general.architecture", GgufValue::string("xbackend"));
    w.set_kv("general.name", GgufValue::string(model.name));
    w.set_kv("xbackend.seed", GgufValue::u64(model.seed));
    w.set_kv("xbackend.config", GgufValue::string(model.source));
    for (Tensor* t : model.weights) {
        if (t->data == nullptr) {
            return Status(StatusCode::InvalidArgument, path + ": weight " + quoted_name(t->name) + " is not placed (call place_and_init first)");
        }
        XB_RETURN_IF_ERROR(w.add_tensor(t->name, t->type, t->ne, [t](std::span<std::byte> out) {
            return tensor_get(*t, out.data(), 0, out.size());
        }));
    }
    return w.write(path);
}

Status save_outputs(const Model& model, const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status(StatusCode::NotFound, dir + ": cannot create the directory: " + ec.message());
    for (const Tensor* t : model.outputs) {
        std::string file = t->name.empty() ? "output" : t->name;
        for (char& c : file) {
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
        }
        XB_RETURN_IF_ERROR(save_npy(*t, (std::filesystem::path(dir) / (file + ".npy")).string()));
    }
    return Status::ok();
}

Result<std::vector<NonFiniteOutput>> nonfinite_outputs(const Model& model, const TensorValues& values) {
    std::vector<NonFiniteOutput> found;
    for (const Tensor* t : model.outputs) {
        // Integers hold no NaN; what tensor_get_f32 cannot read is not checked either.
        if ((!values && t->data == nullptr) || !(is_float_type(t->type) || is_quantized(t->type))) continue;
        XB_ASSIGN_OR_RETURN(const std::vector<float> v, values ? values(*t) : tensor_get_f32(*t));
        NonFiniteOutput o{t, 0, 0, static_cast<int64_t>(v.size())};
        for (const float x : v) {
            o.nan += std::isnan(x) ? 1 : 0;
            o.inf += std::isinf(x) ? 1 : 0;
        }
        if (o.nan + o.inf > 0) found.push_back(o);
    }
    return found;
}

}  // namespace xb::config
