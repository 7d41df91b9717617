// Every op in exact (float64) arithmetic, written from the op definitions in core/ops.hpp: the one
// implementation of each op's meaning that both judges use. op-check's cases compute their expected
// output with these from their inputs as stored (so that input rounding to f16/bf16 never counts as
// error), and the F64 device (lib/f64) computes every node of a graph with them (node_eval.hpp).
// No op rounds inside: sums, exponentials and products are double precision from inputs read
// exactly (quantized weights dequantized in double, dequantize.hpp).
#pragma once

#include <array>
#include <functional>

#include "core/ops.hpp"
#include "exact/ref_array.hpp"

namespace xb::exact {

// --- element-wise (ops_elementwise.cpp) ---
RefArray map(const RefArray& a, const std::function<double(double)>& f);
// f(a[i], b[i % ne_b]) along every dim: b is tiled over a.
RefArray binary(const RefArray& a, const RefArray& b, const std::function<double(double, double)>& f);
double gelu(double x);        // tanh approximation
double gelu_quick(double x);  // x * sigmoid(1.702 x)
double silu(double x);
double sigmoid(double x);
double softplus(double x);  // log(1 + exp(x)), without overflow
double unary(UnaryOp op, double x);
double glu_activation(GluOp op, double x);
RefArray glu(const RefArray& a, GluOp op, bool swapped);  // fused halves along dim 0
RefArray glu_split(const RefArray& a, const RefArray& b, GluOp op);
// gpt-oss's SwiGLU, split form: min(a, limit) sigmoid(alpha min(a, limit)) (clamp(b, -limit, limit) + 1).
RefArray swiglu_oai(const RefArray& a, const RefArray& b, double alpha, double limit);

// --- layout and copies (ops_layout.cpp) ---
RefArray reshape(const RefArray& a, Shape ne);                 // same elements in the same logical order
RefArray permute(const RefArray& a, std::array<int, 4> axes);  // dim i of a becomes dim axes[i]
RefArray transpose(const RefArray& a);
// The elements of a contiguous tensor's storage (its values in logical order) seen through a view
// of shape ne with element strides and an element offset.
RefArray strided_view(const RefArray& storage, Shape ne, std::array<int64_t, 4> strides, int64_t offset);
RefArray repeat(const RefArray& a, Shape ne);
RefArray concat(const RefArray& a, const RefArray& b, int dim);
RefArray pad(const RefArray& a, std::array<int, 4> after);
RefArray arange(double start, double stop, double step);
// a's rows read one at a time (a may be a quantized weight where it is stored).
RefArray get_rows(const RowSource& a, const RefArray& rows);
RefArray set_rows(const RefArray& dst, const RefArray& src, const RefArray& rows);
// The row of dst that row (j, i2, i3) of set_rows's src goes to.
int64_t set_rows_target(const RefArray& rows, int64_t j, int64_t i2, int64_t i3);

// --- reductions and normalisation (ops_reduce.cpp) ---
RefArray sum(const RefArray& a);
RefArray sum_rows(const RefArray& a);
RefArray mean(const RefArray& a);
RefArray argmax(const RefArray& a);
// Each row's indices in ascending or descending order of value, equal values in index order, NaN last.
RefArray argsort(const RefArray& a, SortOrder order);
RefArray norm(const RefArray& a, double eps);
RefArray rms_norm(const RefArray& a, double eps);
RefArray l2_norm(const RefArray& a, double eps);
// fn(row values) -> one value, for every row of a: result [1, ne1, ne2, ne3].
RefArray reduce_rows(const RefArray& a, const std::function<double(const std::vector<double>&)>& fn);
// fn(row, i1, i2, i3) rewrites every row of a in place (in a copy of a).
RefArray transform_rows(const RefArray& a,
                        const std::function<void(std::vector<double>&, int64_t i1, int64_t i2, int64_t i3)>& fn);

// --- attention (ops_attention.cpp) ---
double alibi_slope(int h, int n_head, double max_bias);
// sinks (nullptr: none): one logit per head (dim 2) that joins each row's normalisation.
RefArray soft_max(const RefArray& a, const RefArray* mask, double scale, double max_bias, const RefArray* sinks = nullptr);
RefArray diag_mask_inf(const RefArray& a, int n_past);
// freq_factors (nullptr: none) divides pair k's angle by freq_factors[k].
RefArray rope(const RefArray& a, const RefArray& positions, const RopeParams& p, const RefArray* freq_factors = nullptr);
RefArray flash_attn_ext(const RefArray& q, const RefArray& k, const RefArray& v, const RefArray* mask, double scale,
                        double max_bias, double softcap, const RefArray* sinks = nullptr);

// --- matrix products and mixture of experts (ops_matmul.cpp) ---
// Each row of a (or of the experts, as) is read once and meets every column of b that uses it,
// on all OpenMP threads.
RefArray mul_mat(const RowSource& a, const RowSource& b);
RefArray out_prod(const RefArray& a, const RefArray& b);
// as [k, m, n_as], b [k, n_b, n_t], ids [n_used, n_t] -> [m, n_used, n_t]: column (e, t) is
// matrix ids[e, t] of as times column (e % n_b, t) of b.
RefArray mul_mat_id(const RowSource& as, const RowSource& b, const RefArray& ids);
// a [n, n_used, n_t] plus row ids[e, t] of b [n, n_as] at (e, t).
RefArray add_id(const RefArray& a, const RefArray& b, const RefArray& ids);

// --- recurrent layers (ops_recurrent.cpp; shapes as core/ops.hpp's builders) ---
RefArray ssm_conv(const RefArray& sx, const RefArray& c);
// ids must be in [0, s.ne[3]) (node_eval checks).
RefArray ssm_scan(const RefArray& s, const RefArray& x, const RefArray& dt, const RefArray& A, const RefArray& B,
                  const RefArray& C, const RefArray& ids);
RefArray gated_delta_net(const RefArray& q, const RefArray& k, const RefArray& v, const RefArray& g, const RefArray& beta,
                         const RefArray& state);

}  // namespace xb::exact
