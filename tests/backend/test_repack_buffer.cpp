// The CPU's repacked weight buffer type (CPU_REPACK): a q4_K matrix of 8-row multiples written in
// chunks, as a loader writes it, is stored interleaved once its last byte is there; reads always give
// the tensor's own bytes back; writes after that keep both right; other tensors are stored as they
// are.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "core/context.hpp"
#include "core/q4k_x8.hpp"
#include "core/quant_random.hpp"
#include "cpu/cpu_repack_buffer_type.hpp"
#include "cpu_kernels/quant_dot.hpp"
#include "local_registry.hpp"

namespace xb {
namespace {

std::vector<std::byte> random_q4_K(const Tensor& t, uint64_t seed) {
    std::vector<std::byte> bytes(t.nbytes());
    fill_random_blocks(DType::Q4_K, bytes.data(), static_cast<int64_t>(t.nbytes() / sizeof(BlockQ4_K)), seed);
    return bytes;
}

// Whether this CPU's quant table has the grouped rows' kernel (AVX-512 VNNI): the device offers the
// repack only then.
bool groups_have_a_kernel() { return cpu_kernels::quant_dot().dot_q4_K_x8 != &dot_q4_K_x8_reference; }

std::vector<std::byte> read(const Tensor& t) {
    std::vector<std::byte> out(t.nbytes());
    const Status s = storage_buffer(t)->get_tensor(t, out.data(), 0, out.size());
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return out;
}

TEST(RepackBuffer, ChunkedWritesThenInterleavedAndReadBackPlain) {
    xbt::LocalRegistry local;
    Device* cpu = local.device("CPU");
    ASSERT_NE(cpu, nullptr);
    // The device offers it only where its kernels read the groups fast; the buffer type itself works
    // anywhere.
    const bool fast = groups_have_a_kernel();
    EXPECT_EQ(cpu->repacked_weight_type() != nullptr, fast);
    cpu::CpuRepackBufferType repack_type(*cpu);
    BufferType* repack = &repack_type;
    EXPECT_STREQ(repack->name(), "CPU_REPACK");
    EXPECT_FALSE(repack->is_host()) << "its bytes are not the tensors' own layout";

    Context ctx;
    Tensor* w = ctx.new_tensor(DType::Q4_K, {512, 24});  // 3 groups of 8 rows, 2 super-blocks a row
    Tensor* odd = ctx.new_tensor(DType::Q4_K, {256, 12});  // not a multiple of 8 rows: as it is
    Tensor* f = ctx.new_tensor(DType::F32, {7, 3});
    auto buffer = alloc_ctx_tensors(ctx, *repack);
    ASSERT_TRUE(buffer.is_ok()) << buffer.status().to_string();
    Buffer& b = *storage_buffer(*w);

    const std::vector<std::byte> plain = random_q4_K(*w, 3);
    const size_t third = plain.size() / 3;
    ASSERT_TRUE(b.set_tensor(*w, plain.data(), 0, third).is_ok());
    ASSERT_TRUE(b.set_tensor(*w, plain.data() + 2 * third, 2 * third, plain.size() - 2 * third).is_ok());
    EXPECT_EQ(b.stored_layout(*w), StoredLayout::Plain) << "a third is still missing";
    EXPECT_EQ(std::memcmp(read(*w).data(), plain.data(), third), 0) << "while plain, the bytes as written";
    ASSERT_TRUE(b.set_tensor(*w, plain.data() + third, third, third).is_ok());
    EXPECT_EQ(b.stored_layout(*w), StoredLayout::Q4KRows8);

    // The memory holds the groups; reads give the rows back, whole or in part.
    EXPECT_TRUE(repack->repacks(*w));
    EXPECT_FALSE(repack->repacks(*odd));
    EXPECT_FALSE(repack->repacks(*f));
    std::vector<std::byte> groups(plain.size());  // the groups take the rows' bytes
    interleave_q4_K_rows(reinterpret_cast<const BlockQ4_K*>(plain.data()), 24, 512, reinterpret_cast<BlockQ4_Kx8*>(groups.data()));
    EXPECT_EQ(std::memcmp(w->data, groups.data(), groups.size()), 0);
    EXPECT_NE(std::memcmp(w->data, plain.data(), plain.size()), 0);
    EXPECT_EQ(read(*w), plain);
    std::vector<std::byte> part(100);
    ASSERT_TRUE(b.get_tensor(*w, part.data(), 1000, part.size()).is_ok());
    EXPECT_EQ(std::memcmp(part.data(), plain.data() + 1000, part.size()), 0);

    // A write after loading (one row's block) and a memset: reads see them, the memory stays grouped.
    std::vector<std::byte> expected = plain;
    const std::vector<std::byte> patch = random_q4_K(*w, 9);
    const size_t at = 5 * sizeof(BlockQ4_K);
    ASSERT_TRUE(b.set_tensor(*w, patch.data(), at, sizeof(BlockQ4_K)).is_ok());
    std::memcpy(expected.data() + at, patch.data(), sizeof(BlockQ4_K));
    EXPECT_EQ(read(*w), expected);
    interleave_q4_K_rows(reinterpret_cast<const BlockQ4_K*>(expected.data()), 24, 512, reinterpret_cast<BlockQ4_Kx8*>(groups.data()));
    EXPECT_EQ(std::memcmp(w->data, groups.data(), groups.size()), 0);
    EXPECT_EQ(b.stored_layout(*w), StoredLayout::Q4KRows8);

    // Other tensors: stored as they are.
    const std::vector<std::byte> odd_plain = random_q4_K(*odd, 4);
    ASSERT_TRUE(b.set_tensor(*odd, odd_plain.data(), 0, odd_plain.size()).is_ok());
    EXPECT_EQ(b.stored_layout(*odd), StoredLayout::Plain);
    EXPECT_EQ(std::memcmp(odd->data, odd_plain.data(), odd_plain.size()), 0);
    const float values[21] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21};
    ASSERT_TRUE(b.set_tensor(*f, values, 0, sizeof values).is_ok());
    EXPECT_EQ(b.stored_layout(*f), StoredLayout::Plain);
    EXPECT_EQ(std::memcmp(f->data, values, sizeof values), 0);
}

// repack=off turns it off, and the description (every benchmark's machine line) says which ran.
TEST(RepackBuffer, SettingAndDescriptionSayWhetherWeightsAreRepacked) {
    xbt::LocalRegistry local;
    Device* cpu = local.device("CPU");
    ASSERT_NE(cpu, nullptr);
    const bool fast = groups_have_a_kernel();
    const auto says = [&](const char* text) { return cpu->description().find(text) != std::string::npos; };
    EXPECT_EQ(says("q4_K weights repacked 8 rows at a time"), fast) << cpu->description();
    ASSERT_TRUE(cpu->configure("repack=off").is_ok());
    EXPECT_EQ(cpu->repacked_weight_type(), nullptr);
    EXPECT_NE(cpu->settings().find("repack=off"), std::string::npos) << cpu->settings();
    EXPECT_TRUE(says(fast ? "q4_K weights as rows (repack=off)" : "q4_K weights as rows (no grouped-rows kernel"))
        << cpu->description();
    ASSERT_TRUE(cpu->configure("repack=on").is_ok());
    EXPECT_EQ(cpu->repacked_weight_type() != nullptr, fast);
    EXPECT_FALSE(cpu->configure("repack=maybe").is_ok());
}

}  // namespace
}  // namespace xb
