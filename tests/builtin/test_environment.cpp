// The environment variables xbackend reads (builtin/environment.hpp): a bad value is an error naming
// the variable, for the tools to stop on; XB_SIM_DEVICES=16|-1|abc used to keep the default two
// simulated devices without a word.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "builtin/builtin_backends.hpp"
#include "builtin/environment.hpp"

namespace xb {
namespace {

// Sets a variable for one test and restores it.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        ::setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (old_) {
            ::setenv(name_, old_->c_str(), 1);
        } else {
            ::unsetenv(name_);
        }
    }

private:
    const char* name_;
    std::optional<std::string> old_;
};

TEST(Environment, BadValuesAreErrorsNamingTheVariable) {
    EXPECT_TRUE(check_environment().is_ok());
    const std::pair<const char*, const char*> bad[] = {
        {"XB_SIM_DEVICES", "16"}, {"XB_SIM_DEVICES", "-1"}, {"XB_SIM_DEVICES", "abc"},  {"XB_SIM_DEVICES", ""},
        {"XB_SIM_DEVICES", "2x"}, {"XB_SCHED_DEBUG", "3"},  {"XB_SCHED_DEBUG", "yes"}, {"XB_CPU_ISA", "avx3"},
    };
    for (const auto& [name, value] : bad) {
        const ScopedEnv env(name, value);
        const Status s = check_environment();
        ASSERT_FALSE(s.is_ok()) << name << "=" << value;
        EXPECT_EQ(s.message().rfind(std::string(name) + "=" + value + ": ", 0), 0u) << s.message();
    }
    const ScopedEnv four("XB_SIM_DEVICES", "4");
    EXPECT_TRUE(check_environment().is_ok());
    EXPECT_EQ(sim_device_count(), 4);
    const ScopedEnv scalar("XB_CPU_ISA", "scalar");
    EXPECT_TRUE(check_environment().is_ok());
}

TEST(Environment, AnUnusableDeviceCountKeepsTheDefaultInTheLibrary) {
    const ScopedEnv env("XB_SIM_DEVICES", "16");
    EXPECT_EQ(sim_device_count(), kDefaultSimDevices);
}

}  // namespace
}  // namespace xb
