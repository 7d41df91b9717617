// Every seed input and every past finding of the fuzzers (tests/fuzz/seeds.txt) through its
// target: under the ASan+UBSan job this is the regression suite of the fuzzing, and in every
// build it shows the targets take the inputs without crashing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_targets.hpp"
#include "test_config_util.hpp"

namespace xb::fuzz {
namespace {

struct SeedSet {
    std::string target;
    std::string extension;
    std::vector<std::filesystem::path> dirs;
};

std::vector<SeedSet> seed_sets() {
    const std::filesystem::path root = config::testing::repo_root();
    std::ifstream in(root / "tests" / "fuzz" / "seeds.txt");
    std::vector<SeedSet> sets;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        SeedSet s;
        fields >> s.target >> s.extension;
        for (std::string dir; fields >> dir;) s.dirs.push_back(root / dir);
        sets.push_back(std::move(s));
    }
    return sets;
}

std::vector<uint8_t> read_all(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(FuzzRegressions, EveryTargetHasSeeds) {
    const std::vector<SeedSet> sets = seed_sets();
    ASSERT_EQ(sets.size(), 8u) << "tests/fuzz/seeds.txt lists every target";
    for (const SeedSet& s : sets) {
        ASSERT_NE(find_target(s.target), nullptr) << s.target;
        size_t files = 0;
        for (const auto& dir : s.dirs) {
            if (!std::filesystem::is_directory(dir)) continue;
            for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.path().extension() == s.extension ? 1 : 0;
        }
        EXPECT_GE(files, 2u) << s.target << " has too few seeds";
    }
}

// Seeds have the target's extension; past findings (tests/data/fuzz/<target>) any name.
TEST(FuzzRegressions, SeedsAndFindingsRunThroughTheirTargets) {
    size_t ran = 0;
    for (const SeedSet& s : seed_sets()) {
        const Target target = find_target(s.target);
        ASSERT_NE(target, nullptr);
        for (const auto& dir : s.dirs) {
            if (!std::filesystem::is_directory(dir)) continue;
            const bool findings = dir.parent_path().filename() == "fuzz" && dir.parent_path().parent_path().filename() == "data";
            for (const auto& e : std::filesystem::directory_iterator(dir)) {
                if (!e.is_regular_file() || (!findings && e.path().extension() != s.extension)) continue;
                const std::vector<uint8_t> bytes = read_all(e.path());
                SCOPED_TRACE(s.target + ": " + e.path().string());
                EXPECT_EQ(target(bytes.data(), bytes.size()), 0);
                ++ran;
            }
        }
    }
    EXPECT_GT(ran, 100u);
}

// The gguf_compute fuzz target reaches the compute with every fixture model (so it covers the whole
// path, not only the parser), and stops at the reader for the refused hostile files.
TEST(FuzzGgufCompute, SeedsReachTheComputeAndHostileFilesAreRefused) {
    // Every architecture's fixture too: experts, sliding windows, sinks and latent attention.
    for (const char* dir : {"models", "models/arch"}) {
        for (const auto& e : std::filesystem::directory_iterator(config::testing::data_path(dir))) {
            if (e.path().extension() != ".gguf") continue;
            const std::vector<uint8_t> bytes = read_all(e.path().string());
            EXPECT_EQ(gguf_compute_stage(bytes.data(), bytes.size()), ComputeStage::Computed) << e.path();
        }
    }
    for (const char* name : {"nan-weights", "vocab-1-row", "vocab-1-row-1-dim"}) {
        const std::vector<uint8_t> bytes = read_all(config::testing::data_path(std::string("models/hostile/") + name + ".gguf"));
        EXPECT_EQ(gguf_compute_stage(bytes.data(), bytes.size()), ComputeStage::Computed) << name;
    }
    for (const char* name : {"overlap-all-at-0", "offset-wraps", "newline-tensor-name"}) {
        const std::vector<uint8_t> bytes = read_all(config::testing::data_path(std::string("models/hostile/") + name + ".gguf"));
        EXPECT_EQ(gguf_compute_stage(bytes.data(), bytes.size()), ComputeStage::Refused) << name;
    }
}

}  // namespace
}  // namespace xb::fuzz
