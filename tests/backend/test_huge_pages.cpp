// Transparent huge pages for large host buffers (backend/huge_pages.hpp) and the CPU device's
// huge_pages setting.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "backend/huge_pages.hpp"
#include "backend/registry.hpp"
#include "local_registry.hpp"

namespace xb {
namespace {

constexpr size_t kSmallPage = 4096;
constexpr size_t kHugePage = size_t{2} << 20;

TEST(HugePages, ModeIsTheBracketedChoice) {
    EXPECT_EQ(parse_huge_page_mode("always [madvise] never"), HugePageMode::Madvise);
    EXPECT_EQ(parse_huge_page_mode("[always] madvise never"), HugePageMode::Always);
    EXPECT_EQ(parse_huge_page_mode("always madvise [never]"), HugePageMode::Never);
    EXPECT_EQ(parse_huge_page_mode(""), HugePageMode::Never) << "no file: no huge pages";
    EXPECT_EQ(parse_huge_page_mode("always madvise never"), HugePageMode::Never);
    EXPECT_EQ(parse_huge_page_mode("[sometimes] never"), HugePageMode::Never);
}

TEST(HugePages, PlanAdvisesTheWholeHugePagesOfLargeBuffers) {
    const HugePageSupport madvise{HugePageMode::Madvise, kHugePage};
    const size_t size = 3 * kHugePage + 100;
    HostAllocationPlan plan = plan_host_allocation(size, 64, true, madvise, kSmallPage);
    EXPECT_EQ(plan.alignment, kHugePage);
    EXPECT_EQ(plan.advised_bytes, 3 * kHugePage) << "the tail stays in small pages";
    EXPECT_TRUE(plan.huge);

    plan = plan_host_allocation(kHugePage - 1, 64, true, madvise, kSmallPage);
    EXPECT_EQ(plan.alignment, 64u) << "smaller than a huge page: as asked";
    EXPECT_EQ(plan.advised_bytes, 0u);

    plan = plan_host_allocation(size, 64, false, madvise, kSmallPage);
    EXPECT_EQ(plan.alignment, 64u) << "off under madvise: nothing to ask";
    EXPECT_EQ(plan.advised_bytes, 0u);

    plan = plan_host_allocation(size, 64, true, HugePageSupport{}, kSmallPage);
    EXPECT_EQ(plan.alignment, 64u) << "no huge pages on this kernel";
    EXPECT_EQ(plan.advised_bytes, 0u);
}

TEST(HugePages, OffUnderAlwaysAsksForSmallPages) {
    const HugePageSupport always{HugePageMode::Always, kHugePage};
    const HostAllocationPlan on = plan_host_allocation(5 * kHugePage, 64, true, always, kSmallPage);
    EXPECT_TRUE(on.huge);
    EXPECT_EQ(on.advised_bytes, 5 * kHugePage);
    const HostAllocationPlan off = plan_host_allocation(5 * kHugePage + 10, 64, false, always, kSmallPage);
    EXPECT_FALSE(off.huge);
    EXPECT_EQ(off.alignment, kSmallPage) << "advice starts on a page";
    EXPECT_EQ(off.advised_bytes, 5 * kHugePage) << "whole small pages inside the buffer";
}

// The kernel's flags of the mapping that holds `address` (/proc/self/smaps' VmFlags), or "" if
// none is found.
std::string vm_flags_at(const void* address) {
    const auto at = reinterpret_cast<uintptr_t>(address);
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
        uintptr_t begin = 0, end = 0;
        char dash = 0;
        std::istringstream range(line);
        if (line.find(':') > line.find(' ') && (range >> std::hex >> begin >> dash >> end) && dash == '-') {
            inside = begin <= at && at < end;
        } else if (inside && line.rfind("VmFlags:", 0) == 0) {
            return line.substr(8) + " ";
        }
    }
    return {};
}

TEST(HugePages, CpuBuffersOfAHugePageOrMoreAreAlignedAndAdvised) {
    const HugePageSupport& support = huge_page_support();
    if (support.mode == HugePageMode::Never) GTEST_SKIP() << "this kernel gives no transparent huge pages";
    xbt::LocalRegistry local;
    Device& cpu = *local.device("CPU");
    EXPECT_NE(cpu.settings().find("huge_pages=on"), std::string::npos) << cpu.settings();
    EXPECT_NE(cpu.description().find("pages for buffers of"), std::string::npos) << cpu.description();
    auto buffer = cpu.buffer_type().alloc_buffer(3 * support.page_bytes + 100);
    ASSERT_TRUE(buffer.is_ok()) << buffer.status().message();
    void* base = (*buffer)->base();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % support.page_bytes, 0u);
    EXPECT_NE(vm_flags_at(base).find(" hg "), std::string::npos) << "MADV_HUGEPAGE not set: " << vm_flags_at(base);
    EXPECT_NE(vm_flags_at(static_cast<std::byte*>(base) + 3 * support.page_bytes - 1).find(" hg "), std::string::npos);
}

TEST(HugePages, CpuSettingTurnsThemOff) {
    xbt::LocalRegistry local;
    Device& cpu = *local.device("CPU");
    ASSERT_TRUE(cpu.configure("huge_pages=off").is_ok());
    EXPECT_NE(cpu.settings().find("huge_pages=off"), std::string::npos) << cpu.settings();
    EXPECT_NE(cpu.description().find("pages ("), std::string::npos) << cpu.description();
    const HugePageSupport& support = huge_page_support();
    if (support.mode != HugePageMode::Never) {
        auto buffer = cpu.buffer_type().alloc_buffer(3 * support.page_bytes);
        ASSERT_TRUE(buffer.is_ok());
        // Under "always" the buffer is marked MADV_NOHUGEPAGE; under "madvise" it is not marked
        // MADV_HUGEPAGE (heap memory reused from an earlier advised buffer may carry the mark).
        if (support.mode == HugePageMode::Always) {
            EXPECT_NE(vm_flags_at((*buffer)->base()).find(" nh "), std::string::npos) << vm_flags_at((*buffer)->base());
        }
    }
    const Status bad = cpu.configure("huge_pages=maybe");
    EXPECT_EQ(bad.code(), StatusCode::InvalidArgument);
    EXPECT_NE(bad.message().find("huge_pages must be on or off"), std::string::npos) << bad.message();
    ASSERT_TRUE(cpu.configure("huge_pages=on").is_ok());
    EXPECT_NE(cpu.settings().find("huge_pages=on"), std::string::npos);
}

}  // namespace
}  // namespace xb
