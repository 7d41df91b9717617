// The host CPU's identity: microarchitectures from cpuid's family and model, cache sizes from a
// Linux cache folder, and the one line every report names the machine by.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/cpu_identity.hpp"

namespace xb {
namespace {

TEST(CpuIdentity, NamesTheMicroarchitecturesOfTheMachinesThisProjectRunsOn) {
    EXPECT_EQ(microarchitecture_name("GenuineIntel", 6, 143), "Sapphire Rapids");
    EXPECT_EQ(microarchitecture_name("GenuineIntel", 6, 207), "Emerald Rapids");
    EXPECT_EQ(microarchitecture_name("GenuineIntel", 6, 106), "Ice Lake-SP");
    EXPECT_EQ(microarchitecture_name("GenuineIntel", 6, 173), "Granite Rapids");
    EXPECT_EQ(microarchitecture_name("AuthenticAMD", 25, 17), "Zen 4");   // EPYC Genoa (the machine)
    EXPECT_EQ(microarchitecture_name("AuthenticAMD", 25, 0x61), "Zen 4");  // Ryzen 7000
    EXPECT_EQ(microarchitecture_name("AuthenticAMD", 25, 1), "Zen 3");     // EPYC Milan
    EXPECT_EQ(microarchitecture_name("AuthenticAMD", 23, 49), "Zen 2");    // EPYC Rome
    EXPECT_EQ(microarchitecture_name("AuthenticAMD", 26, 2), "Zen 5");
}

TEST(CpuIdentity, AnUnknownPartHasNoMicroarchitectureRatherThanAGuess) {
    EXPECT_EQ(microarchitecture_name("GenuineIntel", 6, 1), "");
    EXPECT_EQ(microarchitecture_name("GenuineIntel", 25, 17), "");  // AMD's numbers under Intel's name
    EXPECT_EQ(microarchitecture_name("AuthenticAMD", 6, 143), "");
    EXPECT_EQ(microarchitecture_name("HygonGenuine", 24, 1), "");
    EXPECT_EQ(microarchitecture_name("", 0, 0), "");
}

class CacheFolder : public testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() / ("xb-cache-" + std::to_string(::getpid()));
        std::filesystem::remove_all(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    void add(int index, const char* level, const char* type, const char* size) {
        const std::filesystem::path d = dir_ / ("index" + std::to_string(index));
        std::filesystem::create_directories(d);
        std::ofstream(d / "level") << level << "\n";
        std::ofstream(d / "type") << type << "\n";
        std::ofstream(d / "size") << size << "\n";
    }
    std::filesystem::path dir_;
};

TEST_F(CacheFolder, ReadsEachLevelsDataOrUnifiedCache) {
    add(0, "1", "Data", "48K");
    add(1, "1", "Instruction", "32K");
    add(2, "2", "Unified", "2048K");
    add(3, "3", "Unified", "32M");
    const CpuCaches c = read_cpu_caches(dir_);
    EXPECT_EQ(c.l1d_bytes, 48u << 10);
    EXPECT_EQ(c.l2_bytes, 2u << 20);
    EXPECT_EQ(c.l3_bytes, 32u << 20);
}

TEST_F(CacheFolder, WhatTheFolderLacksOrCannotBeReadIsZero) {
    EXPECT_EQ(read_cpu_caches(dir_).l2_bytes, 0u);  // no folder at all
    add(0, "1", "Data", "lots");
    add(1, "2", "Unified", "");
    const CpuCaches c = read_cpu_caches(dir_);
    EXPECT_EQ(c.l1d_bytes, 0u);
    EXPECT_EQ(c.l2_bytes, 0u);
    EXPECT_EQ(c.l3_bytes, 0u);
}

TEST(CpuIdentity, DescribesTheMachineInOneLine) {
    CpuIdentity cpu;
    cpu.vendor = "AuthenticAMD";
    cpu.model_name = "AMD EPYC 9R14";
    cpu.family = 25;
    cpu.model = 17;
    cpu.microarchitecture = "Zen 4";
    cpu.caches = {.l1d_bytes = 32u << 10, .l2_bytes = 1u << 20, .l3_bytes = 32u << 20};
    EXPECT_EQ(describe_cpu(cpu), "AMD EPYC 9R14 (Zen 4, family 25 model 17; L1d 32 KiB, L2 1 MiB, L3 32 MiB)");
    cpu.microarchitecture.clear();
    cpu.caches = {};
    EXPECT_EQ(describe_cpu(cpu), "AMD EPYC 9R14 (family 25 model 17)");
    EXPECT_EQ(describe_cpu(CpuIdentity{}), "CPU");
}

TEST(CpuIdentity, TheHostIsReadOnce) {
    const CpuIdentity& cpu = host_cpu();
    EXPECT_EQ(&cpu, &host_cpu());
#if defined(__x86_64__)
    EXPECT_FALSE(cpu.vendor.empty());
    EXPECT_GE(cpu.family, 6);
    // The microarchitecture, where known, is the table's for the host's own numbers.
    EXPECT_EQ(cpu.microarchitecture, microarchitecture_name(cpu.vendor, cpu.family, cpu.model));
#endif
}

}  // namespace
}  // namespace xb
