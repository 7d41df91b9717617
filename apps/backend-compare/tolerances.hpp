// Per-op NMSE tolerances of backend-compare.
#pragma once

#include <map>
#include <set>
#include <string>

#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb::tools {

class Tolerances {
public:
    Tolerances();
    // "mul_mat=1e-3": overrides one op (op names as in the README's op list; "default" for all
    // others).
    Status set(const std::string& assignment);
    double for_node(const Tensor& node) const;
    const std::map<std::string, double>& table() const { return by_op_; }

private:
    std::map<std::string, double> by_op_;
    std::set<std::string> given_;  // ops whose tolerance --tol set
};

}  // namespace xb::tools
