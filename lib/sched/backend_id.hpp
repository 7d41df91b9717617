// BackendId: a backend's place in a scheduler's priority list (0 first, the CPU last), or none.
// A type of its own, so that backend indices are not mixed up with node, split or copy indices.
#pragma once

#include <compare>
#include <cstddef>

namespace xb {

class BackendId {
public:
    constexpr BackendId() = default;  // none
    constexpr explicit BackendId(int index) : index_(index < 0 ? -1 : index) {}
    static constexpr BackendId none() { return BackendId(); }

    constexpr bool valid() const { return index_ >= 0; }
    // -1 for none; for buffer ids and messages.
    constexpr int value() const { return index_; }
    // For indexing per-backend vectors (valid ids only).
    constexpr size_t index() const { return static_cast<size_t>(index_); }

    constexpr auto operator<=>(const BackendId&) const = default;

private:
    int index_ = -1;
};

}  // namespace xb
