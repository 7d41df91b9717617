// LeakSanitizer's default suppressions, compiled into every program that links xbackend in an
// AddressSanitizer build (lib/CMakeLists.txt). LLVM's OpenMP runtime (libomp, which clang builds
// use) keeps per-thread state that it never frees at exit; that is not a leak of ours.
extern "C" const char* __lsan_default_suppressions();
extern "C" const char* __lsan_default_suppressions() { return "leak:libomp.so\n"; }
