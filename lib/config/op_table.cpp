#include "config/op_table.hpp"

#include <cmath>

#include "core/ops.hpp"

namespace xb::config {

const char* param_kind_name(ParamKind kind) {
    switch (kind) {
        case ParamKind::Number: return "a number";
        case ParamKind::Int: return "an integer";
        case ParamKind::IntList: return "a list of integers";
        case ParamKind::Bool: return "true or false";
        case ParamKind::Choice: return "a name";
    }
    return "?";
}

// --- OpParamReader ----------------------------------------------------------------------------------
// The parser has checked every value's kind against the op's ParamDesc, so a value of another
// alternative than the one asked for cannot occur; the fallbacks only cover absent keys.

double OpParamReader::number(std::string_view key, double fallback) const {
    auto it = params_.find(key);
    if (it == params_.end()) return fallback;
    const double* v = std::get_if<double>(&it->second.value);
    return v ? *v : fallback;
}

int64_t OpParamReader::integer(std::string_view key, int64_t fallback) const {
    return static_cast<int64_t>(number(key, static_cast<double>(fallback)));
}

bool OpParamReader::flag(std::string_view key, bool fallback) const {
    auto it = params_.find(key);
    if (it == params_.end()) return fallback;
    const bool* v = std::get_if<bool>(&it->second.value);
    return v ? *v : fallback;
}

std::string OpParamReader::choice(std::string_view key, std::string_view fallback) const {
    auto it = params_.find(key);
    if (it == params_.end()) return std::string(fallback);
    const std::string* v = std::get_if<std::string>(&it->second.value);
    return v ? *v : std::string(fallback);
}

std::vector<int64_t> OpParamReader::ints(std::string_view key) const {
    std::vector<int64_t> out;
    auto it = params_.find(key);
    if (it == params_.end()) return out;
    if (const auto* v = std::get_if<std::vector<double>>(&it->second.value)) {
        for (double d : *v) out.push_back(static_cast<int64_t>(d));
    }
    return out;
}

namespace {

using Args = std::vector<Tensor*>;
using P = const OpParamReader&;

ParamDesc number(std::string_view key, bool required = false) { return {key, ParamKind::Number, required, {}, 0}; }
ParamDesc integer(std::string_view key, bool required = false) { return {key, ParamKind::Int, required, {}, 0}; }
ParamDesc int_list(std::string_view key, bool required, size_t max_items = 4) {
    return {key, ParamKind::IntList, required, {}, max_items};
}
ParamDesc boolean(std::string_view key) { return {key, ParamKind::Bool, false, {}, 0}; }
ParamDesc choice(std::string_view key, bool required, std::vector<std::string_view> choices) {
    return {key, ParamKind::Choice, required, std::move(choices), 0};
}

std::vector<std::string_view> unary_names() {
    std::vector<std::string_view> names;
    for (int i = 0; i < kUnaryOpCount; ++i) names.push_back(unary_op_name(static_cast<UnaryOp>(i)));
    return names;
}
std::vector<std::string_view> glu_names() {
    std::vector<std::string_view> names;
    for (int i = 0; i < kGluOpCount; ++i) names.push_back(glu_op_name(static_cast<GluOp>(i)));
    return names;
}
std::vector<std::string_view> type_names() {
    std::vector<std::string_view> names;
    for (int i = 0; i < kDTypeCount; ++i) names.push_back(dtype_name(static_cast<DType>(i)));
    return names;
}

// Up to four sizes, the missing outer dims 1.
std::array<int64_t, kMaxDims> dims4(const std::vector<int64_t>& v, int64_t fill) {
    std::array<int64_t, kMaxDims> ne{fill, fill, fill, fill};
    for (size_t i = 0; i < v.size() && i < ne.size(); ++i) ne[i] = v[i];
    return ne;
}

Tensor* build_glu(Context& ctx, const Args& a, GluOp op, bool swapped) {
    if (a.size() > 1 && a[1] != nullptr) {
        if (swapped) return ctx.fail(Status(StatusCode::InvalidArgument, "glu: 'swapped' applies to the fused form (one argument) only"));
        return glu_split(ctx, a[0], a[1], op);
    }
    return glu(ctx, a[0], op, swapped);
}

Tensor* build_view(Context& ctx, const Args& a, P p) {
    const std::array<int64_t, kMaxDims> ne = dims4(p.ints("shape"), 1);
    const std::vector<int64_t> given = p.ints("strides");
    const int64_t offset = p.integer("offset", 0);
    if (offset < 0) return ctx.fail(Status(StatusCode::InvalidArgument, "view: offset must not be negative"));
    // Strides not given continue contiguously from the last one given (or from the row size).
    std::array<size_t, 3> nb{};
    size_t prev = row_size(a[0]->type, std::max<int64_t>(ne[0], 0));
    for (size_t i = 0; i < nb.size(); ++i) {
        if (i < given.size()) {
            if (given[i] < 0) return ctx.fail(Status(StatusCode::InvalidArgument, "view: strides must not be negative"));
            nb[i] = static_cast<size_t>(given[i]);
        } else {
            nb[i] = i == 0 ? prev : nb[i - 1] * static_cast<size_t>(std::max<int64_t>(ne[i], 0));
        }
        prev = nb[i];
    }
    return view(ctx, a[0], ne, nb, static_cast<size_t>(offset));
}

Tensor* build_permute(Context& ctx, const Args& a, P p) {
    const std::vector<int64_t> given = p.ints("axes");
    std::array<int, kMaxDims> axes{0, 1, 2, 3};
    for (size_t i = 0; i < given.size(); ++i) {
        axes[i] = given[i] < 0 || given[i] >= kMaxDims ? -1 : static_cast<int>(given[i]);
    }
    return permute(ctx, a[0], axes);
}

Tensor* build_pad(Context& ctx, const Args& a, P p) {
    const std::array<int64_t, kMaxDims> after = dims4(p.ints("after"), 0);
    std::array<int32_t, kMaxDims> pads{};
    for (int i = 0; i < kMaxDims; ++i) {
        if (after[i] < 0 || after[i] > INT32_MAX) {
            return ctx.fail(Status(StatusCode::InvalidArgument, "pad: padding must be between 0 and 2^31 - 1"));
        }
        pads[i] = static_cast<int32_t>(after[i]);
    }
    return pad(ctx, a[0], pads);
}

Tensor* build_rope(Context& ctx, const Args& a, P p) {
    RopeParams r;
    r.n_dims = static_cast<int>(p.integer("n_dims", a[0]->ne[0]));
    r.mode = p.choice("mode", "normal") == "neox" ? RopeMode::Neox : RopeMode::Normal;
    r.n_ctx_orig = static_cast<int>(p.integer("n_ctx_orig", 0));
    r.freq_base = static_cast<float>(p.number("freq_base", 10000.0));
    r.freq_scale = static_cast<float>(p.number("freq_scale", 1.0));
    r.ext_factor = static_cast<float>(p.number("ext_factor", 0.0));
    r.attn_factor = static_cast<float>(p.number("attn_factor", 1.0));
    r.beta_fast = static_cast<float>(p.number("beta_fast", 32.0));
    r.beta_slow = static_cast<float>(p.number("beta_slow", 1.0));
    return rope(ctx, a[0], a[1], r, a[2]);  // a[2]: the optional frequency factors
}

Tensor* build_flash_attn(Context& ctx, const Args& a, P p) {
    const double head = static_cast<double>(a[0]->ne[0] > 0 ? a[0]->ne[0] : 1);
    const auto scale_v = static_cast<float>(p.number("scale", 1.0 / std::sqrt(head)));
    Tensor* mask = a.size() > 3 ? a[3] : nullptr;
    Tensor* sinks = a.size() > 4 ? a[4] : nullptr;
    return flash_attn_ext(ctx, a[0], a[1], a[2], mask, scale_v, static_cast<float>(p.number("max_bias", 0.0)),
                          static_cast<float>(p.number("softcap", 0.0)), sinks);
}

Tensor* build_soft_max(Context& ctx, const Args& a, P p) {
    Tensor* mask = a.size() > 1 ? a[1] : nullptr;
    Tensor* sinks = a.size() > 2 ? a[2] : nullptr;
    return soft_max_ext(ctx, a[0], mask, static_cast<float>(p.number("scale", 1.0)),
                        static_cast<float>(p.number("max_bias", 0.0)), sinks);
}

Tensor* build_argsort(Context& ctx, const Args& a, P p) {
    return argsort(ctx, a[0], p.choice("order", "asc") == "desc" ? SortOrder::Descending : SortOrder::Ascending);
}

// gpt-oss's defaults: alpha 1.702, limit 7.
Tensor* build_swiglu_oai(Context& ctx, const Args& a, P p) {
    return swiglu_oai(ctx, a[0], a[1], static_cast<float>(p.number("alpha", 1.702)), static_cast<float>(p.number("limit", 7.0)));
}

Tensor* build_cast(Context& ctx, const Args& a, P p) {
    const std::optional<DType> type = dtype_from_name(p.choice("type", "f32"));
    return cast(ctx, a[0], type.value_or(DType::F32));
}

Tensor* build_arange(Context& ctx, const Args&, P p) {
    return arange(ctx, static_cast<float>(p.number("start", 0.0)), static_cast<float>(p.number("stop", 0.0)),
                  static_cast<float>(p.number("step", 1.0)));
}

Tensor* build_unary(Context& ctx, const Args& a, P p) {
    return unary(ctx, a[0], unary_op_from_name(p.choice("fn", "")).value_or(UnaryOp::Neg));
}

Tensor* build_glu_param(Context& ctx, const Args& a, P p) {
    return build_glu(ctx, a, glu_op_from_name(p.choice("fn", "")).value_or(GluOp::SwiGlu), p.flag("swapped", false));
}

// Unary and glu shorthands need the function in the table entry itself: one builder per function.
template <UnaryOp U>
Tensor* build_unary_fn(Context& ctx, const Args& a, P) {
    return unary(ctx, a[0], U);
}
template <GluOp G>
Tensor* build_glu_fn(Context& ctx, const Args& a, P p) {
    return build_glu(ctx, a, G, p.flag("swapped", false));
}

template <size_t... I>
void add_unary_shorthands(std::vector<OpDesc>& table, std::index_sequence<I...>) {
    (table.push_back(OpDesc{unary_op_name(static_cast<UnaryOp>(I)), Op::Unary, {"a"}, 1, {},
                            &build_unary_fn<static_cast<UnaryOp>(I)>}),
     ...);
}

std::vector<OpDesc> make_table() {
    std::vector<OpDesc> t = {
        {"dup", Op::Dup, {"a"}, 1, {}, [](Context& c, const Args& a, P) { return dup(c, a[0]); }},
        {"add", Op::Add, {"a", "b"}, 2, {}, [](Context& c, const Args& a, P) { return add(c, a[0], a[1]); }},
        {"sub", Op::Sub, {"a", "b"}, 2, {}, [](Context& c, const Args& a, P) { return sub(c, a[0], a[1]); }},
        {"mul", Op::Mul, {"a", "b"}, 2, {}, [](Context& c, const Args& a, P) { return mul(c, a[0], a[1]); }},
        {"div", Op::Div, {"a", "b"}, 2, {}, [](Context& c, const Args& a, P) { return div(c, a[0], a[1]); }},
        {"add1", Op::Add1, {"a", "scalar"}, 2, {}, [](Context& c, const Args& a, P) { return add1(c, a[0], a[1]); }},
        {"scale", Op::Scale, {"a"}, 1, {number("scale", true), number("bias")},
         [](Context& c, const Args& a, P p) {
             return scale(c, a[0], static_cast<float>(p.number("scale", 1.0)), static_cast<float>(p.number("bias", 0.0)));
         }},
        {"sqr", Op::Sqr, {"a"}, 1, {}, [](Context& c, const Args& a, P) { return sqr(c, a[0]); }},
        {"sqrt", Op::Sqrt, {"a"}, 1, {}, [](Context& c, const Args& a, P) { return sqrt(c, a[0]); }},
        {"log", Op::Log, {"a"}, 1, {}, [](Context& c, const Args& a, P) { return log(c, a[0]); }},
        {"sum", Op::Sum, {"a"}, 1, {}, [](Context& c, const Args& a, P) { return sum(c, a[0]); }},
        {"sum_rows", Op::SumRows, {"a"}, 1, {}, [](Context& c, const Args& a, P) { return sum_rows(c, a[0]); }},
        {"mean", Op::Mean, {"a"}, 1, {}, [](Context& c, const Args& a, P) { return mean(c, a[0]); }},
        {"argmax", Op::Argmax, {"a"}, 1, {}, [](Context& c, const Args& a, P) { return argmax(c, a[0]); }},
        {"repeat", Op::Repeat, {"a", "shape_of"}, 2, {}, [](Context& c, const Args& a, P) { return repeat(c, a[0], a[1]); }},
        {"concat", Op::Concat, {"a", "b"}, 2, {integer("dim", true)},
         [](Context& c, const Args& a, P p) { return concat(c, a[0], a[1], static_cast<int>(p.integer("dim", 0))); }},
        {"unary", Op::Unary, {"a"}, 1, {choice("fn", true, unary_names())}, &build_unary},
        {"glu", Op::Glu, {"a", "b"}, 1, {choice("fn", true, glu_names()), boolean("swapped")}, &build_glu_param},
        {"swiglu", Op::Glu, {"a", "b"}, 1, {boolean("swapped")}, &build_glu_fn<GluOp::SwiGlu>},
        {"geglu", Op::Glu, {"a", "b"}, 1, {boolean("swapped")}, &build_glu_fn<GluOp::GeGlu>},
        {"clamp", Op::Clamp, {"a"}, 1, {number("min", true), number("max", true)},
         [](Context& c, const Args& a, P p) {
             return clamp(c, a[0], static_cast<float>(p.number("min", 0.0)), static_cast<float>(p.number("max", 0.0)));
         }},
        {"norm", Op::Norm, {"a"}, 1, {number("eps")},
         [](Context& c, const Args& a, P p) { return norm(c, a[0], static_cast<float>(p.number("eps", 1e-5))); }},
        {"rms_norm", Op::RmsNorm, {"a"}, 1, {number("eps")},
         [](Context& c, const Args& a, P p) { return rms_norm(c, a[0], static_cast<float>(p.number("eps", 1e-5))); }},
        {"soft_max", Op::SoftMax, {"a", "mask", "sinks"}, 1, {number("scale"), number("max_bias")}, &build_soft_max},
        {"soft_max_ext", Op::SoftMax, {"a", "mask", "sinks"}, 1, {number("scale"), number("max_bias")}, &build_soft_max},
        {"diag_mask_inf", Op::DiagMaskInf, {"a"}, 1, {integer("n_past", true)},
         [](Context& c, const Args& a, P p) { return diag_mask_inf(c, a[0], static_cast<int>(p.integer("n_past", 0))); }},
        {"rope", Op::Rope, {"a", "positions", "freq_factors"}, 2,
         {integer("n_dims"), choice("mode", false, {"normal", "neox"}), integer("n_ctx_orig"), number("freq_base"),
          number("freq_scale"), number("ext_factor"), number("attn_factor"), number("beta_fast"), number("beta_slow")},
         &build_rope},
        {"mul_mat", Op::MulMat, {"a", "b"}, 2, {}, [](Context& c, const Args& a, P) { return mul_mat(c, a[0], a[1]); }},
        {"out_prod", Op::OutProd, {"a", "b"}, 2, {}, [](Context& c, const Args& a, P) { return out_prod(c, a[0], a[1]); }},
        {"get_rows", Op::GetRows, {"a", "rows"}, 2, {}, [](Context& c, const Args& a, P) { return get_rows(c, a[0], a[1]); }},
        {"set_rows", Op::SetRows, {"dst", "src", "rows"}, 3, {},
         [](Context& c, const Args& a, P) { return set_rows(c, a[0], a[1], a[2]); }},
        {"cpy", Op::Cpy, {"a", "b"}, 2, {}, [](Context& c, const Args& a, P) { return cpy(c, a[0], a[1]); }},
        {"cast", Op::Cpy, {"a"}, 1, {choice("type", true, type_names())}, &build_cast},
        {"cont", Op::Cont, {"a"}, 1, {}, [](Context& c, const Args& a, P) { return cont(c, a[0]); }},
        {"reshape", Op::Reshape, {"a"}, 1, {int_list("shape", true)},
         [](Context& c, const Args& a, P p) { return reshape(c, a[0], dims4(p.ints("shape"), 1)); }},
        {"view", Op::View, {"a"}, 1, {int_list("shape", true), int_list("strides", false, 3), integer("offset")}, &build_view},
        {"permute", Op::Permute, {"a"}, 1, {int_list("axes", true)}, &build_permute},
        {"transpose", Op::Transpose, {"a"}, 1, {}, [](Context& c, const Args& a, P) { return transpose(c, a[0]); }},
        {"pad", Op::Pad, {"a"}, 1, {int_list("after", true)}, &build_pad},
        {"arange", Op::Arange, {}, 0, {number("start"), number("stop", true), number("step")}, &build_arange},
        {"flash_attn_ext", Op::FlashAttnExt, {"q", "k", "v", "mask", "sinks"}, 3,
         {number("scale"), number("max_bias"), number("softcap")}, &build_flash_attn},
        {"argsort", Op::Argsort, {"a"}, 1, {choice("order", false, {"asc", "desc"})}, &build_argsort},
        {"top_k", Op::Argsort, {"a"}, 1, {integer("k", true)},
         [](Context& c, const Args& a, P p) { return top_k(c, a[0], static_cast<int>(p.integer("k", 1))); }},
        {"swiglu_oai", Op::Glu, {"a", "b"}, 2, {number("alpha"), number("limit")}, &build_swiglu_oai},
        {"mul_mat_id", Op::MulMatId, {"as", "b", "ids"}, 3, {},
         [](Context& c, const Args& a, P) { return mul_mat_id(c, a[0], a[1], a[2]); }},
        {"add_id", Op::AddId, {"a", "b", "ids"}, 3, {}, [](Context& c, const Args& a, P) { return add_id(c, a[0], a[1], a[2]); }},
        {"l2_norm", Op::L2Norm, {"a"}, 1, {number("eps")},
         [](Context& c, const Args& a, P p) { return l2_norm(c, a[0], static_cast<float>(p.number("eps", 1e-6))); }},
        {"ssm_conv", Op::SsmConv, {"sx", "c"}, 2, {}, [](Context& c, const Args& a, P) { return ssm_conv(c, a[0], a[1]); }},
        {"ssm_scan", Op::SsmScan, {"s", "x", "dt", "A", "B", "C", "ids"}, 7, {},
         [](Context& c, const Args& a, P) { return ssm_scan(c, a[0], a[1], a[2], a[3], a[4], a[5], a[6]); }},
        {"gated_delta_net", Op::GatedDeltaNet, {"q", "k", "v", "g", "beta", "state"}, 6, {},
         [](Context& c, const Args& a, P) { return gated_delta_net(c, a[0], a[1], a[2], a[3], a[4], a[5]); }},
    };
    add_unary_shorthands(t, std::make_index_sequence<kUnaryOpCount>{});
    return t;
}

}  // namespace

const std::vector<OpDesc>& op_table() {
    static const std::vector<OpDesc> table = make_table();  // immutable after first use
    return table;
}

const OpDesc* find_op_desc(std::string_view name) {
    for (const OpDesc& d : op_table()) {
        if (d.name == name) return &d;
    }
    return nullptr;
}

std::vector<std::string> op_table_names() {
    std::vector<std::string> names;
    for (const OpDesc& d : op_table()) names.emplace_back(d.name);
    return names;
}

}  // namespace xb::config
