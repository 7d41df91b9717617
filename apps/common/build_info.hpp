// Which code and build made a tool: the commit (written at build time by cmake/build_info.cmake, from
// git or, in a tree without .git, from the XB_COMMIT_FILE that scripts/gpu-check --prepare writes),
// the build type and the compiler (from the configuration).
#pragma once

namespace xb::tools {

extern const char* const kBuildCommit;  // short hash, or "unknown" without git and XB_COMMIT_FILE
extern const bool kBuildDirty;          // the tree differed from the commit at build time (tracked
                                        // changes or untracked files that git does not ignore)

}  // namespace xb::tools
