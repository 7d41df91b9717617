// One libFuzzer harness per target: built once per name in tests/fuzz/CMakeLists.txt with
// XB_FUZZ_TARGET set to the target's function.
#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return xb::fuzz::XB_FUZZ_TARGET(data, size); }
