#include "opcheck/cases.hpp"

#include <iterator>

namespace xb::opcheck {

std::vector<OpCase> all_cases() {
    std::vector<OpCase> all;
    for (auto family : {elementwise_cases, layout_cases, reduce_cases, attention_cases, matmul_cases, quant_cases, moe_cases,
                        recurrent_cases, nonfinite_cases}) {
        std::vector<OpCase> cases = family();
        all.insert(all.end(), std::make_move_iterator(cases.begin()), std::make_move_iterator(cases.end()));
    }
    return all;
}

}  // namespace xb::opcheck
