// Transparent huge pages for large host buffers.
//
// A one-token product reads every weight byte once per token, a stream of hundreds of MB. In 4 KiB
// pages that is a TLB miss every 4 KiB, and the hardware's stream prefetchers stop at every 4 KiB
// page boundary. Linux backs anonymous memory with 2 MiB pages where the range is aligned to them
// and the kernel's policy allows it: "always", or "madvise" for ranges marked MADV_HUGEPAGE (the
// default on most distributions, and the one where nothing happens unless the program asks). On the
// 2-vCPU Zen 4 VM, one-token products run 0-11 % (most often about 5 %) faster over weights in
// 2 MiB pages than over the same weights in 4 KiB ones, alternating in one process
// (results/cpu/huge-pages-2026-12-07-zen4.md). llama.cpp maps its model files (page-cache pages, 4
// KiB) and does not ask.
//
// So host buffers of at least one huge page are aligned to it and marked (the CPU device's
// huge_pages setting, on by default). The kernel may still give small pages (memory fragmented,
// or its policy "never"); nothing depends on it but speed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/aligned_bytes.hpp"

namespace xb {

// The kernel's policy for anonymous memory (/sys/kernel/mm/transparent_hugepage/enabled).
enum class HugePageMode { Always, Madvise, Never };

struct HugePageSupport {
    HugePageMode mode = HugePageMode::Never;  // Never also where the kernel has no transparent huge pages
    size_t page_bytes = 0;                    // the huge page's size (hpage_pmd_size); 0 with Never
};

// The bracketed choice of the sysfs file's text ("always [madvise] never"); Never if none is.
HugePageMode parse_huge_page_mode(std::string_view enabled_text);
// This machine's support, read once from sysfs.
const HugePageSupport& huge_page_support();

// How a host allocation of `size` bytes is made: its alignment, and the length from its start to
// advise MADV_HUGEPAGE (huge) or, with huge pages turned off where the kernel's policy is
// "always", MADV_NOHUGEPAGE (so that off is off); 0: no advice.
struct HostAllocationPlan {
    size_t alignment = 0;
    size_t advised_bytes = 0;
    bool huge = false;
};
// Huge pages when `use_huge_pages`, the kernel can give them, and `size` spans at least one: the
// whole huge pages from the start (the tail past the last stays in small pages).
HostAllocationPlan plan_host_allocation(size_t size, size_t alignment, bool use_huge_pages, const HugePageSupport& support,
                                        size_t small_page_bytes);

// `size` bytes of host memory as planned for this machine (data() is nullptr when out of memory).
AlignedBytes allocate_host_bytes(size_t size, size_t alignment, bool use_huge_pages);

// "2 MiB pages for buffers of 2 MiB or more (transparent huge pages: madvise)", "4 KiB pages
// (transparent huge pages: never)", "4 KiB pages (huge_pages=off; transparent huge pages:
// madvise)": for the CPU's description.
std::string huge_pages_description(bool use_huge_pages);

}  // namespace xb
