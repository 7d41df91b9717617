// Typed parameters of the ops that have any. A node keeps them as 32-bit words in
// Tensor::op_params (so that a graph copy carries them without knowing the op); each struct here is
// the one place that knows which field is which word. Builders store them, kernels, backends and
// op-check load them:
//
//     ScaleParams{.scale = 0.5f}.store(*t);
//     const ScaleParams p = ScaleParams::load(node);
//
// Each struct lists its fields once, in word order, in `fields`; store and load both walk that list.
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include "core/op.hpp"
#include "core/tensor.hpp"

namespace xb {

namespace op_params_detail {

// Writes fields into consecutive words of t.op_params.
class Writer {
public:
    explicit Writer(Tensor& t) : words_(t.op_params) {}
    void operator()(float v) { put(static_cast<int32_t>(float_bits(v))); }
    void operator()(int32_t v) { put(v); }
    void operator()(bool v) { put(v ? 1 : 0); }
    template <typename E>
        requires std::is_enum_v<E>
    void operator()(E v) {
        put(static_cast<int32_t>(v));
    }
    template <typename T, size_t N>
    void operator()(const std::array<T, N>& values) {
        for (const T& v : values) (*this)(v);
    }

private:
    void put(int32_t v) { words_.at(next_++) = v; }  // at(): a struct longer than kMaxOpParams throws
    std::array<int32_t, kMaxOpParams>& words_;
    size_t next_ = 0;
};

// Reads fields from consecutive words of t.op_params.
class Reader {
public:
    explicit Reader(const Tensor& t) : words_(t.op_params) {}
    void operator()(float& v) { v = bits_float(static_cast<uint32_t>(get())); }
    void operator()(int32_t& v) { v = get(); }
    void operator()(bool& v) { v = get() != 0; }
    template <typename E>
        requires std::is_enum_v<E>
    void operator()(E& v) {
        v = static_cast<E>(get());
    }
    template <typename T, size_t N>
    void operator()(std::array<T, N>& values) {
        for (T& v : values) (*this)(v);
    }

private:
    int32_t get() { return words_.at(next_++); }
    const std::array<int32_t, kMaxOpParams>& words_;
    size_t next_ = 0;
};

template <typename P>
void store(const P& p, Tensor& t) {
    Writer w(t);
    P::fields(p, w);
}

template <typename P>
P load(const Tensor& t) {
    P p;
    Reader r(t);
    P::fields(p, r);
    return p;
}

}  // namespace op_params_detail

// The two members every parameter struct has.
#define XB_OP_PARAMS_IO(Type)                                                        \
    void store(Tensor& t) const { op_params_detail::store(*this, t); }              \
    static Type load(const Tensor& t) { return op_params_detail::load<Type>(t); }

// scale: a * scale + bias
struct ScaleParams {
    float scale = 1.0f;
    float bias = 0.0f;
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.scale);
        io(s.bias);
    }
    XB_OP_PARAMS_IO(ScaleParams)
};

struct ClampParams {
    float min = 0.0f;
    float max = 0.0f;
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.min);
        io(s.max);
    }
    XB_OP_PARAMS_IO(ClampParams)
};

struct UnaryParams {
    UnaryOp op = UnaryOp::Neg;
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.op);
    }
    XB_OP_PARAMS_IO(UnaryParams)
};

// glu: act(x) * g; fused halves trade roles when swapped (the split form is never swapped).
struct GluParams {
    GluOp op = GluOp::SwiGlu;
    bool swapped = false;
    float alpha = 0.0f;  // SwiGluOai only
    float limit = 0.0f;
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.op);
        io(s.swapped);
        io(s.alpha);
        io(s.limit);
    }
    XB_OP_PARAMS_IO(GluParams)
};

struct ArgsortParams {
    SortOrder order = SortOrder::Ascending;
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.order);
    }
    XB_OP_PARAMS_IO(ArgsortParams)
};

// norm and rms_norm
struct NormParams {
    float eps = 0.0f;
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.eps);
    }
    XB_OP_PARAMS_IO(NormParams)
};

// soft_max: softmax(x * scale + slope * mask), slope from ALiBi when max_bias > 0
struct SoftMaxParams {
    float scale = 1.0f;
    float max_bias = 0.0f;
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.scale);
        io(s.max_bias);
    }
    XB_OP_PARAMS_IO(SoftMaxParams)
};

struct DiagMaskInfParams {
    int32_t n_past = 0;
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.n_past);
    }
    XB_OP_PARAMS_IO(DiagMaskInfParams)
};

// permute: dim i of the source becomes dim axes[i] of the result
struct PermuteParams {
    std::array<int32_t, kMaxDims> axes{0, 1, 2, 3};
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.axes);
    }
    XB_OP_PARAMS_IO(PermuteParams)
};

struct ConcatParams {
    int32_t dim = 0;
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.dim);
    }
    XB_OP_PARAMS_IO(ConcatParams)
};

// pad: zeros after the end of each dim
struct PadParams {
    std::array<int32_t, kMaxDims> after{};
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.after);
    }
    XB_OP_PARAMS_IO(PadParams)
};

struct ArangeParams {
    float start = 0.0f;
    float stop = 0.0f;
    float step = 1.0f;
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.start);
        io(s.stop);
        io(s.step);
    }
    XB_OP_PARAMS_IO(ArangeParams)
};

// flash_attn_ext: softmax(q k^T * scale + slope * mask) v; softcap > 0 caps the scores at
// softcap * tanh(score / softcap)
struct FlashAttnParams {
    float scale = 1.0f;
    float max_bias = 0.0f;
    float softcap = 0.0f;
    // The factor q.k is multiplied by before the cap: with the cap on, 1/softcap folds into it.
    float score_scale() const { return softcap != 0.0f ? scale / softcap : scale; }
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.scale);
        io(s.max_bias);
        io(s.softcap);
    }
    XB_OP_PARAMS_IO(FlashAttnParams)
};

// rope: rotary position embedding, with YaRN's context extension
struct RopeParams {
    int32_t n_dims = 0;             // rotated leading dims of each head (even, <= head size)
    RopeMode mode = RopeMode::Normal;
    int32_t n_ctx_orig = 0;         // training context (YaRN)
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;
    float ext_factor = 0.0f;        // YaRN extrapolation mix; 0 disables YaRN ramps
    float attn_factor = 1.0f;
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    template <typename S, typename Io>
    static void fields(S& s, Io& io) {
        io(s.n_dims);
        io(s.mode);
        io(s.n_ctx_orig);
        io(s.freq_base);
        io(s.freq_scale);
        io(s.ext_factor);
        io(s.attn_factor);
        io(s.beta_fast);
        io(s.beta_slow);
    }
    XB_OP_PARAMS_IO(RopeParams)
};

#undef XB_OP_PARAMS_IO

}  // namespace xb
