#include "config/init.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "config/config_error.hpp"
#include "models/decoder.hpp"
#include "formats/npy.hpp"
#include "core/size_math.hpp"
#include "core/message_text.hpp"
#include "core/quant.hpp"
#include "core/quant_random.hpp"

namespace xb::config {

namespace {

// splitmix64's finaliser: a strong 64-bit mix, so hash(seed, i) is a counter-based generator.
uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Uniform in [0, 1) with 53 random bits: splitmix64 over the counter.
double unit(uint64_t seed, uint64_t i) { return static_cast<double>(mix(seed + i * 0x9e3779b97f4a7c15ull) >> 11) * 0x1.0p-53; }

std::string shape_string(const Tensor& t) {
    std::string s = "[";
    for (int i = 0; i < t.n_dims(); ++i) s += (i ? ", " : "") + std::to_string(t.ne[static_cast<size_t>(i)]);
    return s + "]";
}

// Calls store(i) for every element, in parallel for large tensors (each element is a pure
// function of its index, so the result does not depend on the thread count).
template <typename Store>
void for_each_element(int64_t n, Store store) {
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) store(i);
}

// Converts a value to `type` at p; integer types take the value rounded toward minus infinity.
template <DType T>
void put(std::byte* p, double v) {
    if constexpr (T == DType::F32) {
        const auto x = static_cast<float>(v);
        std::memcpy(p, &x, sizeof x);
    } else if constexpr (T == DType::F16) {
        const uint16_t x = f32_to_f16(static_cast<float>(v));
        std::memcpy(p, &x, sizeof x);
    } else if constexpr (T == DType::BF16) {
        const uint16_t x = f32_to_bf16(static_cast<float>(v));
        std::memcpy(p, &x, sizeof x);
    } else if constexpr (T == DType::I32) {
        const auto x = clamped_integer<int32_t>(std::floor(v));  // a draw rounded past the range (f32 near 2^31) saturates
        std::memcpy(p, &x, sizeof x);
    } else {
        const auto x = clamped_integer<int64_t>(std::floor(v));
        std::memcpy(p, &x, sizeof x);
    }
}

template <DType T, typename F>
void generate_as(std::byte* base, int64_t n, F f) {
    constexpr size_t kSize = T == DType::F32 || T == DType::I32 ? 4 : T == DType::I64 ? 8 : 2;
    for_each_element(n, [&](int64_t i) { put<T>(base + static_cast<size_t>(i) * kSize, f(static_cast<uint64_t>(i))); });
}

// n elements of `type` with values f(i) (a double), into out (n elements long).
template <typename F>
void generate(DType type, int64_t n, std::span<std::byte> out, F f) {
    switch (type) {
        case DType::F32: generate_as<DType::F32>(out.data(), n, f); break;
        case DType::F16: generate_as<DType::F16>(out.data(), n, f); break;
        case DType::BF16: generate_as<DType::BF16>(out.data(), n, f); break;
        case DType::I32: generate_as<DType::I32>(out.data(), n, f); break;
        case DType::I64: generate_as<DType::I64>(out.data(), n, f); break;
        default: break;  // quantized types are initialised through f32 (init_into)
    }
}

// Normal values by Box-Muller in float: one 64-bit hash gives the two uniforms of a pair of
// elements (2j, 2j+1), which take the cosine and sine halves.
template <DType T>
void normal_as(std::byte* base, int64_t n, uint64_t seed, float mean, float std, bool round) {
    constexpr size_t kSize = T == DType::F32 || T == DType::I32 ? 4 : T == DType::I64 ? 8 : 2;
    const int64_t pairs = (n + 1) / 2;
    for_each_element(pairs, [&](int64_t j) {
        const uint64_t h = mix(seed + static_cast<uint64_t>(j) * 0x9e3779b97f4a7c15ull);
        const float u1 = 1.0f - static_cast<float>(h >> 40) * 0x1.0p-24f;  // (0, 1]: log stays finite
        const float u2 = static_cast<float>((h >> 16) & 0xffffffu) * 0x1.0p-24f;
        const float r = std * std::sqrt(-2.0f * std::log(u1));
        const float a = 6.2831853f * u2;
        float v0 = mean + r * std::cos(a), v1 = mean + r * std::sin(a);
        if (round) {
            v0 = std::floor(v0 + 0.5f);
            v1 = std::floor(v1 + 0.5f);
        }
        put<T>(base + static_cast<size_t>(2 * j) * kSize, v0);
        if (2 * j + 1 < n) put<T>(base + static_cast<size_t>(2 * j + 1) * kSize, v1);
    });
}

void generate_normal(DType type, int64_t n, std::span<std::byte> out, uint64_t seed, double mean, double std) {
    const auto m = static_cast<float>(mean), s = static_cast<float>(std);
    switch (type) {
        case DType::F32: normal_as<DType::F32>(out.data(), n, seed, m, s, false); break;
        case DType::F16: normal_as<DType::F16>(out.data(), n, seed, m, s, false); break;
        case DType::BF16: normal_as<DType::BF16>(out.data(), n, seed, m, s, false); break;
        case DType::I32: normal_as<DType::I32>(out.data(), n, seed, m, s, true); break;
        case DType::I64: normal_as<DType::I64>(out.data(), n, seed, m, s, true); break;
        default: break;  // quantized types are initialised through f32 (init_into)
    }
}

Status check_int_range(const Tensor& t, const InitSpec& init, std::string_view source, double lo, double hi) {
    if (is_float_type(t.type)) return Status::ok();
    const double min = t.type == DType::I32 ? std::numeric_limits<int32_t>::min() : -9.2e18;
    const double max = t.type == DType::I32 ? std::numeric_limits<int32_t>::max() : 9.2e18;
    if (!(lo >= min && hi <= max)) {
        return config_error(source, init.path, std::string("values do not fit ") + dtype_name(t.type));
    }
    return Status::ok();
}

Status random_values(const Tensor& t, const InitSpec& init, uint64_t seed, std::string_view source, std::span<std::byte> out) {
    const int64_t n = t.nelements();
    if (init.kind == InitKind::Uniform) {
        XB_RETURN_IF_ERROR(check_int_range(t, init, source, init.min, init.max));
        const double lo = init.min, span = init.max - init.min;
        if (!is_float_type(t.type)) {
            // Integers in [min, max): whole numbers only, so that every one is equally likely.
            if (init.min != std::floor(init.min) || init.max != std::floor(init.max)) {
                return config_error(source, init.path, std::string("uniform over ") + dtype_name(t.type) + " needs integer min and max");
            }
            generate(t.type, n, out, [=](uint64_t i) { return lo + std::floor(unit(seed, i) * span); });
            return Status::ok();
        }
        generate(t.type, n, out, [=](uint64_t i) { return lo + unit(seed, i) * span; });
        return Status::ok();
    }
    XB_RETURN_IF_ERROR(check_int_range(t, init, source, init.mean - 10 * init.std, init.mean + 10 * init.std));
    generate_normal(t.type, n, out, seed, init.mean, init.std);
    return Status::ok();
}

Status causal_mask(const Tensor& t, const InitSpec& init, std::string_view source, std::span<std::byte> out) {
    if (!is_float_type(t.type)) return config_error(source, init.path, "causal_mask needs a float tensor");
    const int64_t n_cells = t.ne[0], n_q = t.ne[1];
    const int64_t n_kv = init.filled > 0 ? std::min(init.filled, n_cells) : n_cells;
    if (n_kv < n_q) {
        return config_error(source, init.path, "causal_mask needs ne0 (keys) >= ne1 (queries), got " + shape_string(t));
    }
    const std::vector<float> one = causal_mask_values(static_cast<int>(n_kv), static_cast<int>(n_q),
                                                      static_cast<int>(init.window), static_cast<int>(n_cells));
    const auto per_matrix = static_cast<uint64_t>(one.size());
    generate(t.type, t.nelements(), out, [&](uint64_t i) { return static_cast<double>(one[i % per_matrix]); });
    return Status::ok();
}

Status from_npy(const Tensor& t, const InitSpec& init, std::string_view source, std::span<std::byte> out) {
    Result<NpyArray> a = read_npy(init.file);
    if (!a.is_ok()) return config_error(a.status().code(), source, init.path, a.status().message());
    Result<std::array<int64_t, kMaxDims>> ne = a->ne();
    if (!ne.is_ok() || *ne != t.ne) {
        std::string have = "(";
        for (size_t i = 0; i < a->shape.size(); ++i) have += (i ? ", " : "") + std::to_string(a->shape[i]);
        have += a->shape.size() == 1 ? ",)" : ")";
        return config_error(source, init.path, init.file + ": the array's shape " + have + " does not match the tensor's " +
                                                   shape_string(t) + " (numpy lists dims outermost first)");
    }
    if (!convert_row(a->type, a->data.data(), t.type, out.data(), t.nelements())) {
        return config_error(source, init.path, init.file + ": the array's type " + dtype_name(a->type) +
                                                   " cannot initialise a tensor of type " + dtype_name(t.type));
    }
    return Status::ok();
}

// The file and tensor info a gguf init reads, checked against t's type and shape.
Result<std::pair<const GgufReader*, const GgufTensorInfo*>> gguf_source(const Tensor& t, const InitSpec& init, InitFiles& files,
                                                                         std::string_view source) {
    Result<const GgufReader*> file = files.gguf(init.file);
    if (!file.is_ok()) return config_error(file.status().code(), source, init.path, file.status().message());
    Result<const GgufTensorInfo*> info = (*file)->checked_tensor(init.tensor.empty() ? t.name : init.tensor, t.type, t.ne);
    if (!info.is_ok()) return config_error(info.status().code(), source, init.path, info.status().message());
    return std::pair{*file, *info};
}

Status from_gguf(const Tensor& t, const InitSpec& init, InitFiles& files, std::string_view source, std::span<std::byte> out) {
    XB_ASSIGN_OR_RETURN(auto file_and_info, gguf_source(t, init, files, source));
    const Status s = file_and_info.first->read_into(*file_and_info.second, out);
    return s.is_ok() ? s : config_error(s.code(), source, init.path, s.message());
}

Status from_values(const Tensor& t, const InitSpec& init, std::string_view source, std::span<std::byte> out) {
    const std::vector<double>& v = init.values;
    if (static_cast<int64_t>(v.size()) != t.nelements()) {
        return config_error(source, init.path, std::to_string(v.size()) + " values for tensor " + quoted_name(t.name) + " of " +
                                                   std::to_string(t.nelements()) + " elements " + shape_string(t));
    }
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    XB_RETURN_IF_ERROR(check_int_range(t, init, source, *lo, *hi));
    generate(t.type, t.nelements(), out, [&](uint64_t i) { return v[i]; });
    return Status::ok();
}

}  // namespace

uint64_t tensor_seed(uint64_t config_seed, std::string_view tensor_name) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the name
    for (char c : tensor_name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    return mix(config_seed ^ mix(h));
}

Result<const GgufReader*> InitFiles::gguf(const std::string& path) {
    auto it = gguf_.find(path);
    if (it == gguf_.end()) {
        XB_ASSIGN_OR_RETURN(GgufReader reader, GgufReader::open(path));
        it = gguf_.emplace(path, std::make_unique<GgufReader>(std::move(reader))).first;
    }
    return it->second.get();
}

namespace {

// A quantized tensor's values: those an f32 tensor of the same name and shape would get, quantized
// (so a q4_K weight is the quantization of the f32 weight the config would otherwise have). The
// read-only formats (iq1/iq2/iq3, nvfp4: no quantizer, as in ggml) get random valid blocks from the
// tensor's seed instead, whatever the init kind asks for.
Status init_quantized(const Tensor& t, const InitSpec& init, uint64_t seed, InitFiles& files, std::string_view source,
                      std::span<std::byte> out) {
    if (!can_quantize(t.type)) {
        fill_random_blocks(t.type, out.data(), static_cast<int64_t>(out.size() / type_size(t.type)), seed);
        return Status::ok();
    }
    Tensor as_f32;
    as_f32.type = DType::F32;
    as_f32.ne = t.ne;
    as_f32.nb = contiguous_strides(DType::F32, t.ne);
    as_f32.name = t.name;
    std::vector<std::byte> values(as_f32.nbytes());
    XB_RETURN_IF_ERROR(init_into(as_f32, init, seed, files, source, values));
    if (!convert_row(DType::F32, values.data(), t.type, out.data(), t.nelements())) {
        return config_error(source, init.path, std::string("cannot quantize to ") + dtype_name(t.type));
    }
    return Status::ok();
}

}  // namespace

Status init_into(const Tensor& t, const InitSpec& init, uint64_t seed, InitFiles& files, std::string_view source,
                 std::span<std::byte> out) {
    if (out.size() != row_size(t.type, t.ne[0]) * static_cast<size_t>(t.nrows())) {
        return Status(StatusCode::Internal, "init: the output does not fit tensor " + quoted_name(t.name));
    }
    // Files hold the bytes of their own type; everything else is made as f32 and quantized.
    if (is_quantized(t.type) && init.kind != InitKind::Gguf) return init_quantized(t, init, seed, files, source, out);
    switch (init.kind) {
        case InitKind::Uniform:
        case InitKind::Normal: return random_values(t, init, seed, source, out);
        case InitKind::Constant: {
            XB_RETURN_IF_ERROR(check_int_range(t, init, source, init.value, init.value));
            const double v = init.value;
            generate(t.type, t.nelements(), out, [=](uint64_t) { return v; });
            return Status::ok();
        }
        case InitKind::Arange: {
            const double start = init.start, step = init.step;
            const auto last = static_cast<double>(t.nelements() > 0 ? t.nelements() - 1 : 0);
            XB_RETURN_IF_ERROR(check_int_range(t, init, source, std::min(start, start + step * last), std::max(start, start + step * last)));
            generate(t.type, t.nelements(), out, [=](uint64_t i) { return start + step * static_cast<double>(i); });
            return Status::ok();
        }
        case InitKind::CausalMask: return causal_mask(t, init, source, out);
        case InitKind::Npy: return from_npy(t, init, source, out);
        case InitKind::Gguf: return from_gguf(t, init, files, source, out);
        case InitKind::Values: return from_values(t, init, source, out);
    }
    return config_error(source, init.path, "unknown init kind");
}

Status init_in_chunks(const Tensor& t, const InitSpec& init, InitFiles& files, std::string_view source, size_t chunk,
                      const GgufReader::ChunkSink& sink) {
    XB_ASSIGN_OR_RETURN(auto file_and_info, gguf_source(t, init, files, source));
    const Status s = file_and_info.first->read_chunks(*file_and_info.second, chunk, sink);
    return s.is_ok() ? s : config_error(s.code(), source, init.path, s.message());
}

Result<std::vector<std::byte>> init_values(const Tensor& t, const InitSpec& init, uint64_t seed, InitFiles& files,
                                           std::string_view source) {
    std::vector<std::byte> out(row_size(t.type, t.ne[0]) * static_cast<size_t>(t.nrows()));
    XB_RETURN_IF_ERROR(init_into(t, init, seed, files, source, out));
    return out;
}

}  // namespace xb::config
