// Which code and build made a tool: the commit (written at build time by cmake/build_info.cmake),
// the build type and the compiler (from the configuration).
#pragma once

namespace xb::tools {

extern const char* const kBuildCommit;  // short hash, or "unknown" outside a git checkout
extern const bool kBuildDirty;          // tracked files differed from the commit at build time

}  // namespace xb::tools
