#include "models/mlp.hpp"

#include <string>

#include "models/weight_rows.hpp"
#include "core/ops.hpp"

namespace xb {

Result<Mlp> build_mlp(Context& ctx, const MlpParams& p) {
    if (p.n_layers < 1 || p.n_embd < 1 || p.n_hidden < 1 || p.n_batch < 1) {
        return Status(StatusCode::InvalidArgument, "mlp: every size must be positive");
    }
    XB_RETURN_IF_ERROR(check_weight_rows("mlp", p.weight_type, {{"n_embd", p.n_embd}, {"n_hidden", p.n_hidden}}));
    Mlp m{};
    m.input = ctx.new_tensor(DType::F32, {p.n_embd, p.n_batch});
    m.input->name = "input";
    m.input->set_input();
    Tensor* x = m.input;
    for (int il = 0; il < p.n_layers; ++il) {
        const std::string pre = "mlp." + std::to_string(il) + ".";
        Tensor* w1 = ctx.new_tensor(p.weight_type, {p.n_embd, p.n_hidden});
        Tensor* b1 = ctx.new_tensor(DType::F32, {p.n_hidden});
        Tensor* w2 = ctx.new_tensor(p.weight_type, {p.n_hidden, p.n_embd});
        Tensor* b2 = ctx.new_tensor(DType::F32, {p.n_embd});
        w1->name = pre + "w1";
        b1->name = pre + "b1";
        w2->name = pre + "w2";
        b2->name = pre + "b2";
        m.weights.insert(m.weights.end(), {w1, b1, w2, b2});
        Tensor* h = unary(ctx, add(ctx, mul_mat(ctx, w1, x), b1), p.activation);
        x = add(ctx, add(ctx, mul_mat(ctx, w2, h), b2), x);
    }
    m.output = x;
    m.output->name = "output";
    m.output->set_output();
    if (!ctx.ok()) return ctx.status();
    return m;
}

}  // namespace xb
