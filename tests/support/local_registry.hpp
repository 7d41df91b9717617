// A registry of the built-in backends of the test's own. A test that changes device settings works
// on one, so the change cannot leak into any other test (the process's global registry is only
// read by the tests).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string_view>

#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"

namespace xbt {

class LocalRegistry {
public:
    LocalRegistry() { xb::register_builtin_backends(registry_); }
    LocalRegistry(const LocalRegistry&) = delete;
    LocalRegistry& operator=(const LocalRegistry&) = delete;

    xb::Registry& registry() { return registry_; }
    // The device called `name`, or nullptr when this build or machine has none.
    xb::Device* device(std::string_view name) const { return registry_.dev_by_name(name); }
    // Applies device settings ("key=value,..."); a failure fails the test.
    void configure(std::string_view name, std::string_view settings) {
        xb::Device* d = device(name);
        ASSERT_NE(d, nullptr) << name;
        const xb::Status s = d->configure(settings);
        EXPECT_TRUE(s.is_ok()) << s.to_string();
    }
    // A backend of device `name`, or nullptr (with a test failure) when it cannot be made.
    std::unique_ptr<xb::Backend> init(std::string_view name, std::string_view params = {}) const {
        auto b = registry_.init_by_name(name, params);
        EXPECT_TRUE(b.is_ok()) << b.status().to_string();
        return b.is_ok() ? std::move(b).value() : nullptr;
    }

private:
    xb::Registry registry_;
};

}  // namespace xbt
