// Comparing a case's output with what it should be (the float64 reference, or another backend's
// output of the same case), without any test framework: "" means it matches, any other text says
// where and why it does not.
#pragma once

#include <string>

#include "exact/ref_array.hpp"

namespace xb::opcheck {

// Cases read and compute values as the exact layer's arrays (exact/ref_array.hpp).
using exact::element_count;
using exact::for_each_index;
using exact::RefArray;
using exact::Shape;

// NMSE of out against ref over the positions where ref is finite (absolute when ref is all zeros);
// NaN when the shapes differ.
double nmse(const RefArray& out, const RefArray& ref);
// The largest |out - ref| over the positions where ref is finite; NaN when the shapes differ.
double max_abs_error(const RefArray& out, const RefArray& ref);

// What an output must hold where the reference is not finite.
enum class Specials {
    Same,          // the same value: the same infinity, NaN for NaN
    AnyNonFinite,  // any NaN or infinity: for inputs holding infinities, where inf - inf and inf * 0
                   // make NaN of an infinity in one order of evaluation (or one rounding of a
                   // quantized block) and not in another
};

// "" when out has ref's shape and is non-finite exactly where ref is, with the value `specials`
// asks for there; otherwise the first position that differs: a NaN or an infinity where a finite
// value belongs, or a finite value where ref's is not, is a failure whatever the tolerance.
std::string nonfinite_mismatch(const RefArray& out, const RefArray& ref, Specials specials = Specials::Same);

// "" when out passes nonfinite_mismatch and its NMSE is within `tolerance`; otherwise why not
// (with the worst element for an NMSE failure).
std::string mismatch(const RefArray& out, const RefArray& ref, double tolerance, Specials specials = Specials::Same);

// "[i0, i1, i2, i3]" and "[ne0, ne1, ne2, ne3]".
std::string index_text(const Shape& ne, int64_t flat);
std::string shape_text(const Shape& ne);

}  // namespace xb::opcheck
