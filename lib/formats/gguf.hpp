// GGUF (version 3; 2 is read too): the file format of ggml's models. A header (magic "GGUF",
// version, tensor count, metadata count), metadata key-values of every GGUF value type, tensor
// infos (name, dims innermost first as ggml, type id, offset), padding to the alignment
// (general.alignment, default 32) and the data section.
//
// The reader parses the metadata and tensor infos eagerly and reads tensor data on request;
// every problem in a truncated or corrupt file is an error naming the file and the byte offset.
// Tensor types are ggml's type ids: f32, f16, bf16, i32 and i64 are read into tensors; the
// quantized types are known by name and size (so files holding them are read and listed), ready
// for when xbackend gains those types.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/dtype.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb {

inline constexpr uint32_t kGgufVersion = 3;
inline constexpr size_t kGgufDefaultAlignment = 32;
inline constexpr uint64_t kMaxKeptArrayItems = 65536;
// The memory that a file's metadata and tensor infos may take once read: key-values (a kept array
// item costs a GgufValue, a string its length), tensor infos and their indexes. A file past it is
// refused: its size bounds nothing, since a byte of metadata can cost 50 in memory. Real models
// keep well under 10 MiB (their vocabularies are longer than kMaxKeptArrayItems, read past).
inline constexpr uint64_t kMaxGgufHeaderMemory = uint64_t{64} << 20;

// --- ggml tensor types ----------------------------------------------------------------------------

struct GgmlTypeInfo {
    uint32_t id;
    const char* name;
    int64_t blck_size;  // elements per block
    size_t type_size;   // bytes per block
    std::optional<DType> dtype;  // the xbackend type, when there is one
};
// nullptr for an id this build does not know.
const GgmlTypeInfo* ggml_type_info(uint32_t id);
std::optional<uint32_t> ggml_type_id(DType type);

// --- metadata values ------------------------------------------------------------------------------

enum class GgufValueType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8, Array = 9,
    U64 = 10, I64 = 11, F64 = 12,
};
const char* gguf_value_type_name(GgufValueType type);

struct GgufValue {
    GgufValueType type = GgufValueType::U32;
    GgufValueType elem_type = GgufValueType::U8;  // arrays: the type of the elements
    // Unsigned integers in uint64_t, signed in int64_t, floats in double.
    std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<GgufValue>> data;
    // Arrays: the length in the file. Arrays longer than kMaxKeptArrayItems are read past and
    // keep no items (xbackend needs none of them; a tokenizer's vocabulary is one).
    uint64_t array_length = 0;

    static GgufValue u32(uint32_t v) { return {GgufValueType::U32, GgufValueType::U8, uint64_t{v}}; }
    static GgufValue u64(uint64_t v) { return {GgufValueType::U64, GgufValueType::U8, v}; }
    static GgufValue i32(int32_t v) { return {GgufValueType::I32, GgufValueType::U8, int64_t{v}}; }
    static GgufValue i64(int64_t v) { return {GgufValueType::I64, GgufValueType::U8, v}; }
    static GgufValue f32(float v) { return {GgufValueType::F32, GgufValueType::U8, double{v}}; }
    static GgufValue f64(double v) { return {GgufValueType::F64, GgufValueType::U8, v}; }
    static GgufValue boolean(bool v) { return {GgufValueType::Bool, GgufValueType::U8, v}; }
    static GgufValue string(std::string v) { return {GgufValueType::String, GgufValueType::U8, std::move(v)}; }
    static GgufValue array(GgufValueType elem, std::vector<GgufValue> items) {
        const uint64_t n = items.size();
        return {GgufValueType::Array, elem, std::move(items), n};
    }

    std::optional<int64_t> as_int() const;   // any integer type
    std::optional<double> as_float() const;  // any number
    const std::string* as_string() const;
    // The value for a message, as the file stores it: integers in full, f32 and f64 in the
    // shortest form that reads back the same ("1e-05", "nan"), strings quoted (name_text), arrays as
    // "an array of N u8".
    std::string text() const;
    const std::vector<GgufValue>* as_array() const;
};

struct GgufKV {
    std::string key;
    GgufValue value;
    uint64_t offset = 0;  // where its value type starts in the file (reader only), for messages
};

struct GgufTensorInfo {
    std::string name;
    int n_dims = 1;
    std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};  // innermost first, padded with 1
    uint32_t type = 0;                             // ggml type id
    uint64_t offset = 0;                           // from the start of the data section
    uint64_t nbytes = 0;                           // 0 when the type is unknown
    uint64_t info_offset = 0;                      // where its info starts in the file, for messages
};

class GgufReader {
public:
    // Parses the header, metadata and tensor infos and checks them against the file's size.
    static Result<GgufReader> open(const std::string& path);
    // The same from a file image in memory, named `source` in messages (for fuzzing and tests);
    // its tensor data cannot be read (read_* open path()).
    static Result<GgufReader> parse(std::span<const std::byte> bytes, std::string source);

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    size_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }
    uint64_t file_size() const { return file_size_; }
    const std::vector<GgufKV>& kvs() const { return kvs_; }
    const GgufValue* find_kv(std::string_view key) const;
    const GgufKV* find_kv_entry(std::string_view key) const;
    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* find_tensor(std::string_view name) const;

    // Receives consecutive pieces of a tensor's bytes and their offset in the tensor.
    using ChunkSink = std::function<Status(uint64_t offset, std::span<const std::byte> bytes)>;

    // The tensor's bytes as stored.
    Result<std::vector<std::byte>> read_data(const GgufTensorInfo& info) const;
    // The tensor's bytes straight into `out` (exactly its size).
    Status read_into(const GgufTensorInfo& info, std::span<std::byte> out) const;
    // The tensor's bytes in pieces of at most `chunk` bytes, so that a tensor bound for a device
    // never sits whole in host memory.
    Status read_chunks(const GgufTensorInfo& info, size_t chunk, const ChunkSink& sink) const;
    // Tensor `name` after checking that it has this type and shape (NotFound when the file has no
    // such tensor, with the names it has; InvalidArgument on a mismatch).
    Result<const GgufTensorInfo*> checked_tensor(std::string_view name, DType type,
                                                 const std::array<int64_t, kMaxDims>& ne) const;
    // checked_tensor's bytes.
    Result<std::vector<std::byte>> read_tensor(std::string_view name, DType type,
                                               const std::array<int64_t, kMaxDims>& ne) const;

private:
    // The file positioned at the tensor's data, once its type is known to have a size.
    Result<std::ifstream> open_data(const GgufTensorInfo& info) const;
    // A short read `done` bytes into the tensor's data.
    Status read_error(const GgufTensorInfo& info, uint64_t done) const;

    std::string path_;
    uint32_t version_ = 0;
    size_t alignment_ = kGgufDefaultAlignment;
    uint64_t data_offset_ = 0;
    uint64_t file_size_ = 0;
    std::vector<GgufKV> kvs_;
    std::unordered_map<std::string, size_t> kv_index_;
    std::vector<GgufTensorInfo> tensors_;
    std::unordered_map<std::string, size_t> tensor_index_;

    friend class GgufParser;
};

class GgufWriter {
public:
    // Fills the tensor's bytes (exactly its size) when the file is written.
    using DataSource = std::function<Status(std::span<std::byte> out)>;

    // A power of two; stored as general.alignment when it is not the default.
    Status set_alignment(size_t alignment);
    // Adds or replaces a metadata key.
    void set_kv(std::string key, GgufValue value);
    Status add_tensor(std::string name, DType type, const std::array<int64_t, kMaxDims>& ne, DataSource source);
    Status add_tensor(std::string name, DType type, const std::array<int64_t, kMaxDims>& ne, std::vector<std::byte> data);
    Status write(const std::string& path) const;

private:
    struct PendingTensor {
        std::string name;
        uint32_t type;
        int n_dims;
        std::array<int64_t, kMaxDims> ne;
        uint64_t nbytes;
        DataSource source;
    };
    size_t alignment_ = kGgufDefaultAlignment;
    std::vector<GgufKV> kvs_;
    std::vector<PendingTensor> tensors_;
};

}  // namespace xb
