// PointerMap: a flat open-addressing map from tensor addresses to dense indices.
//
// Graph algorithms key on tensor identity many times per node; a std::unordered_map costs an
// allocation per entry and a pointer chase per lookup. This map is one array, linear probing,
// and grows by doubling, so the scheduler's passes stay cheap per node.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace xb {

class PointerMap {
public:
    static constexpr int32_t kMissing = -1;

    // Allocates nothing until the first insert when `expected` is 0.
    explicit PointerMap(size_t expected = 0) {
        if (expected > 0) rehash(capacity_for(expected));
    }

    // The index stored for p, or kMissing.
    int32_t find(const void* p) const {
        if (size_ == 0) return kMissing;
        for (size_t i = slot_of(p);; i = (i + 1) & mask_) {
            if (keys_[i] == p) return values_[i];
            if (keys_[i] == nullptr) return kMissing;
        }
    }

    // The index of p, inserting `value` first when p is absent. Returns {index, inserted}.
    std::pair<int32_t, bool> insert(const void* p, int32_t value) {
        const size_t i = probe(p);
        if (keys_[i] == p) return {values_[i], false};
        keys_[i] = p;
        values_[i] = value;
        ++size_;
        return {value, true};
    }

    // Stores value for p, replacing any earlier value.
    void set(const void* p, int32_t value) {
        const size_t i = probe(p);
        if (keys_[i] != p) {
            keys_[i] = p;
            ++size_;
        }
        values_[i] = value;
    }

    size_t size() const { return size_; }
    void clear() {
        std::fill(keys_.begin(), keys_.end(), nullptr);
        size_ = 0;
    }

private:
    // The entry of p, or the empty entry where it would go (the table grown first if needed).
    size_t probe(const void* p) {
        if ((size_ + 1) * 2 > keys_.size()) rehash(std::max<size_t>(16, keys_.size() * 2));
        size_t i = slot_of(p);
        while (keys_[i] != p && keys_[i] != nullptr) i = (i + 1) & mask_;
        return i;
    }
    static size_t capacity_for(size_t n) {
        size_t c = 16;
        while (c < n * 2) c *= 2;
        return c;
    }
    size_t slot_of(const void* p) const {
        // Fibonacci hashing of the address; the low bits are alignment and carry no information.
        return static_cast<size_t>((reinterpret_cast<uintptr_t>(p) >> 4) * 0x9E3779B97F4A7C15ull >> 20) & mask_;
    }
    void rehash(size_t capacity) {
        std::vector<const void*> old_keys(capacity, nullptr);
        std::vector<int32_t> old_values(capacity, kMissing);
        old_keys.swap(keys_);
        old_values.swap(values_);
        mask_ = capacity - 1;
        size_ = 0;
        for (size_t i = 0; i < old_keys.size(); ++i) {
            if (old_keys[i] != nullptr) insert(old_keys[i], old_values[i]);
        }
    }

    std::vector<const void*> keys_;
    std::vector<int32_t> values_;
    size_t mask_ = 0;
    size_t size_ = 0;
};

}  // namespace xb
