// A copy of a model fixture with a few bytes changed in place, as a hand-edited or badly converted
// file is: a metadata integer's value, a tensor's type id or one of its dims, a tensor's name (of
// the same length: a tensor gone missing and one of no role at once). The file is otherwise the
// fixture's, so each test breaks exactly one thing; written into a folder removed with the object.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>
#include <unistd.h>

#include "formats/gguf.hpp"

namespace xb::config::testing {

class PatchedGguf {
public:
    explicit PatchedGguf(const std::string& path) : path_(path) {
        std::ifstream in(path, std::ios::binary);
        bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        auto reader = GgufReader::open(path);
        EXPECT_TRUE(reader.is_ok()) << path;
        if (reader.is_ok()) reader_ = std::make_unique<GgufReader>(std::move(reader).value());
        dir_ = std::filesystem::temp_directory_path() / ("xb-patched-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
        std::filesystem::create_directories(dir_);
    }
    ~PatchedGguf() { std::filesystem::remove_all(dir_); }
    PatchedGguf(const PatchedGguf&) = delete;
    PatchedGguf& operator=(const PatchedGguf&) = delete;

    // The value of an integer key, in the key's own width.
    PatchedGguf& set_integer(const std::string& key, int64_t value) {
        const GgufKV* kv = reader_ ? reader_->find_kv_entry(key) : nullptr;
        EXPECT_NE(kv, nullptr) << "no key " << key;
        if (kv == nullptr) return *this;
        const size_t width = integer_width(kv->value.type);
        EXPECT_GT(width, 0u) << key << " is not an integer";
        write(kv->offset + 4, &value, width);  // after the value's type id (little-endian: the low bytes)
        return *this;
    }
    PatchedGguf& set_type(const std::string& tensor, uint32_t type_id) {
        if (const GgufTensorInfo* t = info(tensor)) write(dims_at(*t) + 8 * static_cast<uint64_t>(t->n_dims), &type_id, 4);
        return *this;
    }
    PatchedGguf& set_dim(const std::string& tensor, int dim, int64_t value) {
        if (const GgufTensorInfo* t = info(tensor)) write(dims_at(*t) + 8 * static_cast<uint64_t>(dim), &value, 8);
        return *this;
    }
    PatchedGguf& rename(const std::string& tensor, const std::string& name) {
        EXPECT_EQ(name.size(), tensor.size()) << "a rename in place keeps the length";
        if (const GgufTensorInfo* t = info(tensor); t != nullptr && name.size() == tensor.size()) {
            write(t->info_offset + 8, name.data(), name.size());
        }
        return *this;
    }
    // Writes the file; its path.
    std::string write_file() const {
        const std::filesystem::path out = dir_ / std::filesystem::path(path_).filename();
        std::ofstream(out, std::ios::binary).write(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
        return out.string();
    }

private:
    static int& counter() {
        static int n = 0;
        return n;
    }
    static size_t integer_width(GgufValueType type) {
        switch (type) {
            case GgufValueType::U8: case GgufValueType::I8: return 1;
            case GgufValueType::U16: case GgufValueType::I16: return 2;
            case GgufValueType::U32: case GgufValueType::I32: return 4;
            case GgufValueType::U64: case GgufValueType::I64: return 8;
            default: return 0;
        }
    }
    const GgufTensorInfo* info(const std::string& tensor) const {
        const GgufTensorInfo* t = reader_ ? reader_->find_tensor(tensor) : nullptr;
        EXPECT_NE(t, nullptr) << "no tensor " << tensor;
        return t;
    }
    // The dims of a tensor info: after its name (a u64 length and the bytes) and its u32 n_dims.
    static uint64_t dims_at(const GgufTensorInfo& t) { return t.info_offset + 8 + t.name.size() + 4; }
    void write(uint64_t at, const void* value, size_t n) {
        ASSERT_LE(at + n, bytes_.size());
        std::memcpy(bytes_.data() + at, value, n);
    }

    std::string path_;
    std::vector<char> bytes_;
    std::unique_ptr<GgufReader> reader_;
    std::filesystem::path dir_;
};

}  // namespace xb::config::testing
