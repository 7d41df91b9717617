#include "opcheck/compare.hpp"

#include <cmath>
#include <limits>
#include <sstream>

namespace xb::opcheck {

namespace {

bool same_special(double out, double ref) { return std::isnan(ref) ? std::isnan(out) : out == ref; }

// Index of the element with the largest error, for the failure message.
int64_t worst_element(const RefArray& out, const RefArray& ref) {
    int64_t worst = 0;
    double worst_err = -1.0;
    for (int64_t i = 0; i < ref.size(); ++i) {
        const double e = std::isfinite(ref[i]) ? std::abs(out[i] - ref[i]) : 0.0;
        if (e > worst_err) {
            worst_err = e;
            worst = i;
        }
    }
    return worst;
}

}  // namespace

double nmse(const RefArray& out, const RefArray& ref) {
    if (out.ne() != ref.ne()) return std::numeric_limits<double>::quiet_NaN();
    double err = 0.0, norm = 0.0;
    for (int64_t i = 0; i < ref.size(); ++i) {
        if (!std::isfinite(ref[i])) continue;
        err += (out[i] - ref[i]) * (out[i] - ref[i]);
        norm += ref[i] * ref[i];
    }
    return norm > 0.0 ? err / norm : err;
}

double max_abs_error(const RefArray& out, const RefArray& ref) {
    if (out.ne() != ref.ne()) return std::numeric_limits<double>::quiet_NaN();
    double worst = 0.0;
    for (int64_t i = 0; i < ref.size(); ++i) {
        // NaN compares false: a NaN output stays visible through nonfinite_mismatch instead.
        if (std::isfinite(ref[i]) && std::abs(out[i] - ref[i]) > worst) worst = std::abs(out[i] - ref[i]);
    }
    return worst;
}

std::string index_text(const Shape& ne, int64_t flat) {
    std::ostringstream s;
    s << "[" << flat % ne[0] << ", " << flat / ne[0] % ne[1] << ", " << flat / (ne[0] * ne[1]) % ne[2] << ", "
      << flat / (ne[0] * ne[1] * ne[2]) << "]";
    return s.str();
}

std::string shape_text(const Shape& ne) {
    std::ostringstream s;
    s << "[" << ne[0] << ", " << ne[1] << ", " << ne[2] << ", " << ne[3] << "]";
    return s.str();
}

std::string nonfinite_mismatch(const RefArray& out, const RefArray& ref, Specials specials) {
    if (out.ne() != ref.ne()) return "output shape " + shape_text(out.ne()) + " != expected " + shape_text(ref.ne());
    for (int64_t i = 0; i < ref.size(); ++i) {
        const bool ref_finite = std::isfinite(ref[i]);
        const bool special_ok = specials == Specials::Same ? same_special(out[i], ref[i]) : !std::isfinite(out[i]);
        if (ref_finite ? !std::isfinite(out[i]) : !special_ok) {
            std::ostringstream s;
            s << "at " << index_text(ref.ne(), i) << " output " << out[i] << ", expected " << ref[i];
            return s.str();
        }
    }
    return {};
}

std::string mismatch(const RefArray& out, const RefArray& ref, double tolerance, Specials specials) {
    if (std::string special = nonfinite_mismatch(out, ref, specials); !special.empty()) return special;
    const double e = nmse(out, ref);
    if (e <= tolerance) return {};
    const int64_t w = worst_element(out, ref);
    std::ostringstream s;
    s << "NMSE " << e << " > tolerance " << tolerance << "; worst at " << index_text(ref.ne(), w) << ": output "
      << out[w] << ", expected " << ref[w];
    return s.str();
}

}  // namespace xb::opcheck
