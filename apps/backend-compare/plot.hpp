// backend-compare --plot FILE.png|svg: the verdict as a picture, drawn by scripts/compare_plot.py
// (matplotlib) from the JSON report: each node's NMSE in graph order against its tolerance and its
// end-to-end budget, introduced nodes marked, layers on the axis.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.hpp"

namespace xb::tools {

// Ok when the plot can be drawn, asked before anything is computed: FILE ends in .png or .svg, the
// script is there (next to the tool's repository or installed copy), and python3 imports
// matplotlib. Otherwise one line saying what is missing.
Status check_plot(const std::string& path);

// Draws `report` (backend-compare's JSON report) with `title` into `path`.
Status draw_plot(const nlohmann::ordered_json& report, const std::string& title, const std::string& path);

}  // namespace xb::tools
