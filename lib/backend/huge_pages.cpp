#include "backend/huge_pages.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace xb {

namespace {

std::string first_line(const char* path) {
    std::ifstream in(path);
    std::string line;
    if (in) std::getline(in, line);
    return line;
}

HugePageSupport read_huge_page_support() {
    HugePageSupport support;
    support.mode = parse_huge_page_mode(first_line("/sys/kernel/mm/transparent_hugepage/enabled"));
    if (support.mode == HugePageMode::Never) return support;
    try {
        support.page_bytes = std::stoull(first_line("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"));
    } catch (const std::exception&) {
        support.page_bytes = 0;
    }
    const auto small_page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    // A size that is no whole number of small pages is no page size the kernel uses: ignore it.
    if (support.page_bytes <= small_page || support.page_bytes % small_page != 0) support = HugePageSupport{};
    return support;
}

// "4 KiB", "2 MiB", "1 GiB".
std::string page_size_text(size_t bytes) {
    if (bytes >= (size_t{1} << 30)) return std::to_string(bytes >> 30) + " GiB";
    if (bytes >= (size_t{1} << 20)) return std::to_string(bytes >> 20) + " MiB";
    return std::to_string(bytes >> 10) + " KiB";
}

const char* mode_name(HugePageMode mode) {
    switch (mode) {
        case HugePageMode::Always: return "always";
        case HugePageMode::Madvise: return "madvise";
        case HugePageMode::Never: break;
    }
    return "never";
}

}  // namespace

HugePageMode parse_huge_page_mode(std::string_view enabled_text) {
    const size_t open = enabled_text.find('[');
    const size_t close = enabled_text.find(']', open);
    if (open == std::string_view::npos || close == std::string_view::npos) return HugePageMode::Never;
    const std::string_view chosen = enabled_text.substr(open + 1, close - open - 1);
    if (chosen == "always") return HugePageMode::Always;
    if (chosen == "madvise") return HugePageMode::Madvise;
    return HugePageMode::Never;
}

const HugePageSupport& huge_page_support() {
    static const HugePageSupport support = read_huge_page_support();  // the kernel's policy, read once
    return support;
}

HostAllocationPlan plan_host_allocation(size_t size, size_t alignment, bool use_huge_pages, const HugePageSupport& support,
                                        size_t small_page_bytes) {
    const size_t page = support.page_bytes;
    if (support.mode == HugePageMode::Never || page == 0 || size < page || alignment > page) return {alignment, 0, false};
    // The tail past the last whole page stays unadvised: a huge page there would make resident up
    // to a huge page the buffer does not use (and advice must not reach past the buffer).
    if (use_huge_pages) return {page, size / page * page, true};
    // Off: under "madvise" nothing to do; under "always" the kernel would use huge pages anyway.
    if (support.mode == HugePageMode::Madvise) return {alignment, 0, false};
    return {std::max(alignment, small_page_bytes), size / small_page_bytes * small_page_bytes, false};
}

AlignedBytes allocate_host_bytes(size_t size, size_t alignment, bool use_huge_pages) {
    const auto small_page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const HostAllocationPlan plan = plan_host_allocation(size, alignment, use_huge_pages, huge_page_support(), small_page);
    AlignedBytes bytes(size, plan.alignment);
    // Before the first touch, so the pages are what was asked from their first fault. A refusal (an
    // old kernel) only costs speed.
    if (bytes.data() != nullptr && plan.advised_bytes > 0) {
        (void)madvise(bytes.data(), plan.advised_bytes, plan.huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    }
    return bytes;
}

std::string huge_pages_description(bool use_huge_pages) {
    const HugePageSupport& support = huge_page_support();
    const std::string small = page_size_text(static_cast<size_t>(sysconf(_SC_PAGESIZE)));
    const std::string policy = std::string("transparent huge pages: ") + mode_name(support.mode);
    if (support.mode == HugePageMode::Never) return small + " pages (" + policy + ")";
    if (!use_huge_pages) return small + " pages (huge_pages=off; " + policy + ")";
    const std::string huge = page_size_text(support.page_bytes);
    return huge + " pages for buffers of " + huge + " or more (" + policy + ")";
}

}  // namespace xb
