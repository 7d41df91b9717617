#include "formats/gguf.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/names.hpp"
#include "core/file_io.hpp"
#include "core/message_text.hpp"
#include "core/size_math.hpp"

namespace xb {

// --- ggml types -----------------------------------------------------------------------------------

namespace {

// ggml's type ids with their block geometry. Types without an xbackend type (q8_1, i8, q1_0, ...)
// are listed so that files holding them can be read and their tensors sized and named.
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {0, "f32", 1, 4, DType::F32},            {1, "f16", 1, 2, DType::F16},
    {2, "q4_0", 32, 18, DType::Q4_0},       {3, "q4_1", 32, 20, DType::Q4_1},
    {6, "q5_0", 32, 22, DType::Q5_0},       {7, "q5_1", 32, 24, DType::Q5_1},
    {8, "q8_0", 32, 34, DType::Q8_0},       {9, "q8_1", 32, 36, std::nullopt},
    {10, "q2_K", 256, 84, DType::Q2_K},     {11, "q3_K", 256, 110, DType::Q3_K},
    {12, "q4_K", 256, 144, DType::Q4_K},    {13, "q5_K", 256, 176, DType::Q5_K},
    {14, "q6_K", 256, 210, DType::Q6_K},    {15, "q8_K", 256, 292, DType::Q8_K},
    {16, "iq2_xxs", 256, 66, DType::IQ2_XXS}, {17, "iq2_xs", 256, 74, DType::IQ2_XS},
    {18, "iq3_xxs", 256, 98, DType::IQ3_XXS}, {19, "iq1_s", 256, 50, DType::IQ1_S},
    {20, "iq4_nl", 32, 18, DType::IQ4_NL},  {21, "iq3_s", 256, 110, DType::IQ3_S},
    {22, "iq2_s", 256, 82, DType::IQ2_S},   {23, "iq4_xs", 256, 136, DType::IQ4_XS},
    {24, "i8", 1, 1, std::nullopt},          {25, "i16", 1, 2, std::nullopt},
    {26, "i32", 1, 4, DType::I32},           {27, "i64", 1, 8, DType::I64},
    {28, "f64", 1, 8, std::nullopt},         {29, "iq1_m", 256, 56, DType::IQ1_M},
    {30, "bf16", 1, 2, DType::BF16},         {34, "tq1_0", 256, 54, DType::TQ1_0},
    {35, "tq2_0", 256, 66, DType::TQ2_0},   {39, "mxfp4", 32, 17, DType::MXFP4},
    {40, "nvfp4", 64, 36, DType::NVFP4},    {41, "q1_0", 128, 18, std::nullopt},
};

}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t id) {
    for (const GgmlTypeInfo& t : kGgmlTypes) {
        if (t.id == id) return &t;
    }
    return nullptr;
}

std::optional<uint32_t> ggml_type_id(DType type) {
    for (const GgmlTypeInfo& t : kGgmlTypes) {
        if (t.dtype == type) return t.id;
    }
    return std::nullopt;
}

const char* gguf_value_type_name(GgufValueType type) {
    switch (type) {
        case GgufValueType::U8: return "u8";
        case GgufValueType::I8: return "i8";
        case GgufValueType::U16: return "u16";
        case GgufValueType::I16: return "i16";
        case GgufValueType::U32: return "u32";
        case GgufValueType::I32: return "i32";
        case GgufValueType::F32: return "f32";
        case GgufValueType::Bool: return "bool";
        case GgufValueType::String: return "string";
        case GgufValueType::Array: return "array";
        case GgufValueType::U64: return "u64";
        case GgufValueType::I64: return "i64";
        case GgufValueType::F64: return "f64";
    }
    return "?";
}

std::optional<int64_t> GgufValue::as_int() const {
    if (const auto* u = std::get_if<uint64_t>(&data)) {
        if (*u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
        return static_cast<int64_t>(*u);
    }
    if (const auto* i = std::get_if<int64_t>(&data)) return *i;
    return std::nullopt;
}

std::optional<double> GgufValue::as_float() const {
    if (const auto* d = std::get_if<double>(&data)) return *d;
    if (const auto* u = std::get_if<uint64_t>(&data)) return static_cast<double>(*u);
    if (const auto* i = std::get_if<int64_t>(&data)) return static_cast<double>(*i);
    return std::nullopt;
}

std::string GgufValue::text() const {
    if (const auto* u = std::get_if<uint64_t>(&data)) return std::to_string(*u);
    if (const auto* i = std::get_if<int64_t>(&data)) return std::to_string(*i);
    if (const auto* b = std::get_if<bool>(&data)) return *b ? "true" : "false";
    if (const auto* s = std::get_if<std::string>(&data)) return quoted_name(*s);
    if (const auto* d = std::get_if<double>(&data)) {
        char buffer[64];
        // An f32 is kept as a double: printed as the float it was, not as 0.10000000149011612.
        const auto [end, ec] = type == GgufValueType::F32 ? std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(*d))
                                                          : std::to_chars(buffer, buffer + sizeof buffer, *d);
        return ec == std::errc() ? std::string(buffer, end) : std::string("?");
    }
    return "an array of " + std::to_string(array_length) + " " + gguf_value_type_name(elem_type);
}

const std::string* GgufValue::as_string() const { return std::get_if<std::string>(&data); }
const std::vector<GgufValue>* GgufValue::as_array() const { return std::get_if<std::vector<GgufValue>>(&data); }

namespace {

std::string ne_text(const std::array<int64_t, kMaxDims>& ne, int n_dims) {
    std::string s = "[";
    for (int i = 0; i < n_dims; ++i) s += (i ? ", " : "") + std::to_string(ne[static_cast<size_t>(i)]);
    return s + "]";
}

int n_dims_of(const std::array<int64_t, kMaxDims>& ne) {
    int n = 1;
    for (int i = 1; i < kMaxDims; ++i) {
        if (ne[static_cast<size_t>(i)] != 1) n = i + 1;
    }
    return n;
}

uint64_t align_to(uint64_t v, uint64_t alignment) { return (v + alignment - 1) / alignment * alignment; }

size_t scalar_size(GgufValueType t) {
    switch (t) {
        case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::Bool: return 1;
        case GgufValueType::U16: case GgufValueType::I16: return 2;
        case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
        case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
        case GgufValueType::String: return 8;  // at least its length
        case GgufValueType::Array: return 12;  // at least its type and count
    }
    return 1;
}

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::F64); }

}  // namespace

// --- reading --------------------------------------------------------------------------------------

// Reads a GGUF file front to back, checking every length against what is left of the file.
class GgufParser {
public:
    GgufParser(std::istream& in, GgufReader& out) : in_(in), out_(out) {}

    Status parse() {
        char magic[4];
        XB_RETURN_IF_ERROR(read(magic, 4, "the magic"));
        if (std::memcmp(magic, "GGUF", 4) != 0) return corrupt(0, "not a GGUF file (bad magic)");
        XB_ASSIGN_OR_RETURN(out_.version_, read_u32("the version"));
        if (out_.version_ != 2 && out_.version_ != 3) {
            return corrupt(4, "GGUF version " + std::to_string(out_.version_) + " is not supported (versions 2 and 3 are)");
        }
        XB_ASSIGN_OR_RETURN(const uint64_t n_tensors, read_u64("the tensor count"));
        XB_ASSIGN_OR_RETURN(const uint64_t n_kv, read_u64("the metadata count"));
        // Each key-value and tensor info takes at least 12 and 24 bytes: bounds the counts.
        if (n_kv > left() / 12) {
            return corrupt(16, "truncated or corrupt: " + std::to_string(n_kv) + " metadata key-values cannot fit in the " +
                                   std::to_string(left()) + " bytes left");
        }
        if (n_tensors > left() / 24) {
            return corrupt(8, "truncated or corrupt: " + std::to_string(n_tensors) + " tensor infos cannot fit in the " +
                                  std::to_string(left()) + " bytes left");
        }
        for (uint64_t i = 0; i < n_kv; ++i) XB_RETURN_IF_ERROR(read_kv());
        XB_RETURN_IF_ERROR(read_alignment());
        for (uint64_t i = 0; i < n_tensors; ++i) XB_RETURN_IF_ERROR(read_tensor_info());
        out_.data_offset_ = align_to(pos_, out_.alignment_);
        return check_data();
    }

private:
    uint64_t left() const { return out_.file_size_ - pos_; }

    Status corrupt(uint64_t at, const std::string& why) const {
        return Status(StatusCode::InvalidArgument, out_.path_ + ": offset " + std::to_string(at) + ": " + why);
    }

    Status read(void* dst, uint64_t n, const char* what) {
        if (n > left()) {
            return corrupt(pos_, "truncated: need " + std::to_string(n) + " bytes for " + what + ", " + std::to_string(left()) +
                                     " left");
        }
        in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
        if (!in_) return corrupt(pos_, std::string("read error in ") + what);
        pos_ += n;
        return Status::ok();
    }

    Status skip(uint64_t n, const char* what) {
        if (n > left()) return corrupt(pos_, std::string("truncated: ") + what + " runs past the end of the file");
        in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
        if (!in_) return corrupt(pos_, std::string("read error in ") + what);
        pos_ += n;
        return Status::ok();
    }

    template <typename T>
    Result<T> read_le(const char* what) {
        uint8_t b[sizeof(T)];
        XB_RETURN_IF_ERROR(read(b, sizeof(T), what));
        uint64_t v = 0;
        for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
        return static_cast<T>(v);
    }
    Result<uint32_t> read_u32(const char* what) { return read_le<uint32_t>(what); }
    Result<uint64_t> read_u64(const char* what) { return read_le<uint64_t>(what); }

    // A string's length, checked against what is left of the file.
    Result<uint64_t> read_length(const char* what) {
        const uint64_t at = pos_;
        XB_ASSIGN_OR_RETURN(const uint64_t len, read_u64(what));
        if (len > left()) {
            return corrupt(at, std::string("length ") + std::to_string(len) + " of " + what + " runs past the end of the file");
        }
        return len;
    }

    // A string kept in memory (charged to the budget).
    Result<std::string> read_string(const char* what) {
        XB_ASSIGN_OR_RETURN(const uint64_t len, read_length(what));
        XB_RETURN_IF_ERROR(charge(len));
        std::string s(static_cast<size_t>(len), '\0');
        XB_RETURN_IF_ERROR(read(s.data(), len, what));
        return s;
    }

    // Counts `bytes` of memory that the parsed file keeps (metadata and tensor infos), refusing the
    // file past kMaxGgufHeaderMemory: the file's size bounds nothing here, since a byte of the file
    // can cost 50 in memory (a u8 array item kept as a GgufValue).
    Status charge(uint64_t bytes) {
        kept_bytes_ += bytes;
        if (kept_bytes_ <= kMaxGgufHeaderMemory) return Status::ok();
        return corrupt(pos_, "the metadata and tensor infos read so far take more than " +
                                 std::to_string(kMaxGgufHeaderMemory >> 20) + " MiB of memory (" +
                                 std::to_string(out_.kvs_.size()) + " key-values, " + std::to_string(out_.tensors_.size()) +
                                 " tensor infos): the file is corrupt or made to exhaust memory");
    }

    // An integer stored as T, kept as Wide (uint64_t or int64_t).
    template <typename T, typename Wide>
    Result<GgufValue> scalar(GgufValue& v, const char* what) {
        XB_ASSIGN_OR_RETURN(const T x, read_le<T>(what));
        v.data = static_cast<Wide>(x);
        return v;
    }

    // A value; with `keep` false it is only read past (an item of a long array), costing no memory.
    Result<GgufValue> read_value(GgufValueType type, int depth, bool keep) {
        GgufValue v;
        v.type = type;
        switch (type) {
            case GgufValueType::U8: return scalar<uint8_t, uint64_t>(v, "a u8 value");
            case GgufValueType::U16: return scalar<uint16_t, uint64_t>(v, "a u16 value");
            case GgufValueType::U32: return scalar<uint32_t, uint64_t>(v, "a u32 value");
            case GgufValueType::U64: return scalar<uint64_t, uint64_t>(v, "a u64 value");
            case GgufValueType::I8: return scalar<int8_t, int64_t>(v, "an i8 value");
            case GgufValueType::I16: return scalar<int16_t, int64_t>(v, "an i16 value");
            case GgufValueType::I32: return scalar<int32_t, int64_t>(v, "an i32 value");
            case GgufValueType::I64: return scalar<int64_t, int64_t>(v, "an i64 value");
            case GgufValueType::F32: {
                XB_ASSIGN_OR_RETURN(const uint32_t bits, read_u32("an f32 value"));
                v.data = static_cast<double>(std::bit_cast<float>(bits));
                break;
            }
            case GgufValueType::F64: {
                XB_ASSIGN_OR_RETURN(const uint64_t bits, read_u64("an f64 value"));
                v.data = std::bit_cast<double>(bits);
                break;
            }
            case GgufValueType::Bool: {
                const uint64_t at = pos_;
                XB_ASSIGN_OR_RETURN(const uint8_t b, read_le<uint8_t>("a bool value"));
                if (b > 1) return corrupt(at, "bool value " + std::to_string(b) + " is neither 0 nor 1");
                v.data = b == 1;
                break;
            }
            case GgufValueType::String: {
                if (keep) {
                    XB_ASSIGN_OR_RETURN(v.data, read_string("a string value"));
                } else {
                    XB_ASSIGN_OR_RETURN(const uint64_t len, read_length("a string value"));
                    XB_RETURN_IF_ERROR(skip(len, "a string value"));
                }
                break;
            }
            case GgufValueType::Array: {
                const uint64_t at = pos_;
                if (depth > 8) return corrupt(at, "arrays nested more than 8 deep");
                XB_ASSIGN_OR_RETURN(const uint32_t elem, read_u32("an array's element type"));
                if (!valid_value_type(elem)) return corrupt(at, "unknown array element type " + std::to_string(elem));
                v.elem_type = static_cast<GgufValueType>(elem);
                XB_ASSIGN_OR_RETURN(const uint64_t count, read_u64("an array's length"));
                if (count > left() / scalar_size(v.elem_type)) {
                    return corrupt(at, "array of " + std::to_string(count) + " " + gguf_value_type_name(v.elem_type) +
                                           " runs past the end of the file");
                }
                v.array_length = count;
                std::vector<GgufValue> items;
                // Long arrays (a tokenizer's vocabulary, or a hostile 40M-element array) are read
                // past rather than kept: each kept item costs a GgufValue, charged to the budget
                // before it is made.
                const bool keep_items = keep && count <= kMaxKeptArrayItems;
                if (keep_items) {
                    XB_RETURN_IF_ERROR(charge(count * sizeof(GgufValue)));
                    items.reserve(static_cast<size_t>(count));
                }
                for (uint64_t i = 0; i < count; ++i) {
                    if (!keep_items && v.elem_type != GgufValueType::String && v.elem_type != GgufValueType::Array) {
                        XB_RETURN_IF_ERROR(skip((count - i) * scalar_size(v.elem_type), "an array"));
                        break;
                    }
                    XB_ASSIGN_OR_RETURN(GgufValue item, read_value(v.elem_type, depth + 1, keep_items));
                    if (keep_items) items.push_back(std::move(item));
                }
                v.data = std::move(items);
                break;
            }
        }
        return v;
    }

    Status read_kv() {
        GgufKV kv;
        XB_ASSIGN_OR_RETURN(kv.key, read_string("a metadata key"));
        const uint64_t at = pos_;
        XB_ASSIGN_OR_RETURN(const uint32_t type, read_u32("a metadata type"));
        if (!valid_value_type(type)) return corrupt(at, "metadata " + quoted_name(kv.key) + " has unknown type " + std::to_string(type));
        XB_RETURN_IF_ERROR(charge(kIndexedEntryBytes + sizeof(GgufKV) + kv.key.size()));  // the key twice: entry and index
        XB_ASSIGN_OR_RETURN(kv.value, read_value(static_cast<GgufValueType>(type), 0, true));
        // Indexed: a hostile file may hold millions of keys, and a linear search per key would
        // take hours.
        if (!out_.kv_index_.emplace(kv.key, out_.kvs_.size()).second) {
            return corrupt(at, "metadata key " + quoted_name(kv.key) + " appears twice");
        }
        kv.offset = at;
        out_.kvs_.push_back(std::move(kv));
        return Status::ok();
    }

    Status read_alignment() {
        for (size_t i = 0; i < out_.kvs_.size(); ++i) {
            if (out_.kvs_[i].key != "general.alignment") continue;
            const GgufValue& v = out_.kvs_[i].value;
            const std::optional<int64_t> a = v.as_int();
            if (v.type != GgufValueType::U32 || !a || *a == 0 || !std::has_single_bit(static_cast<uint64_t>(*a))) {
                return corrupt(out_.kvs_[i].offset, "general.alignment must be a u32 power of two");
            }
            out_.alignment_ = static_cast<size_t>(*a);
        }
        return Status::ok();
    }

    Status read_tensor_info() {
        GgufTensorInfo t;
        t.info_offset = pos_;
        XB_ASSIGN_OR_RETURN(t.name, read_string("a tensor name"));
        const uint64_t dims_at = pos_;
        XB_ASSIGN_OR_RETURN(const uint32_t n_dims, read_u32("a tensor's dim count"));
        if (n_dims < 1 || n_dims > kMaxDims) {
            return corrupt(dims_at, "tensor " + quoted_name(t.name) + " has " + std::to_string(n_dims) + " dims (1 to 4 are possible)");
        }
        t.n_dims = static_cast<int>(n_dims);
        int64_t n = 1;
        for (uint32_t i = 0; i < n_dims; ++i) {
            XB_ASSIGN_OR_RETURN(const uint64_t d, read_u64("a tensor dim"));
            if (d > static_cast<uint64_t>(INT64_MAX) || (d != 0 && static_cast<uint64_t>(n) > static_cast<uint64_t>(INT64_MAX) / d)) {
                return corrupt(dims_at, "tensor " + quoted_name(t.name) + " has an impossible size");
            }
            t.ne[i] = static_cast<int64_t>(d);
            n *= t.ne[i];
        }
        const uint64_t type_at = pos_;
        XB_ASSIGN_OR_RETURN(t.type, read_u32("a tensor type"));
        XB_ASSIGN_OR_RETURN(t.offset, read_u64("a tensor offset"));
        if (const GgmlTypeInfo* info = ggml_type_info(t.type)) {
            if (t.ne[0] % info->blck_size != 0) {
                return corrupt(type_at, "tensor " + quoted_name(t.name) + " of type " + info->name + " has " + std::to_string(t.ne[0]) +
                                            " columns, not a multiple of the block size " + std::to_string(info->blck_size));
            }
            // Checked: a shape whose element count fits may still have more bytes than 64 bits hold.
            const std::optional<uint64_t> nbytes = checked_mul(static_cast<uint64_t>(n / info->blck_size), info->type_size);
            if (!nbytes) return corrupt(dims_at, "tensor " + quoted_name(t.name) + " has an impossible size");
            t.nbytes = *nbytes;
        }
        if (t.offset % out_.alignment_ != 0) {
            return corrupt(type_at + 4, "tensor " + quoted_name(t.name) + " offset " + std::to_string(t.offset) +
                                            " is not a multiple of the alignment " + std::to_string(out_.alignment_));
        }
        if (out_.tensor_index_.count(t.name)) return corrupt(t.info_offset, "tensor " + quoted_name(t.name) + " appears twice");
        XB_RETURN_IF_ERROR(charge(kIndexedEntryBytes + sizeof(GgufTensorInfo) + t.name.size()));
        out_.tensor_index_.emplace(t.name, out_.tensors_.size());
        out_.tensors_.push_back(std::move(t));
        return Status::ok();
    }

    // Every tensor of a known type lies inside the data section, and no two share bytes. ggml's own
    // reader wants them packed in order; any order is taken here, overlap is not: a file whose
    // tensors all start at offset 0 would be read, and held in memory, once per tensor (a 1.2 MB
    // file asked for 2 GB that way). Sums are checked: an offset near 2^64 must not wrap into a
    // range that looks satisfiable.
    Status check_data() const {
        const uint64_t data_size = out_.file_size_ > out_.data_offset_ ? out_.file_size_ - out_.data_offset_ : 0;
        const std::string section = " of the data section (" + std::to_string(data_size) + " bytes from file offset " +
                                    std::to_string(out_.data_offset_) + ")";
        std::vector<const GgufTensorInfo*> by_offset;
        for (const GgufTensorInfo& t : out_.tensors_) {
            if (t.offset > data_size) {
                return corrupt(t.info_offset, "tensor " + quoted_name(t.name) + " starts at data offset " + std::to_string(t.offset) +
                                                  ", past the end" + section);
            }
            if (t.nbytes > data_size - t.offset) {
                return corrupt(t.info_offset, "truncated: tensor " + quoted_name(t.name) + " needs " + std::to_string(t.nbytes) +
                                                  " bytes from data offset " + std::to_string(t.offset) + ", past the end" +
                                                  section + "; the file has " + std::to_string(out_.file_size_) + " bytes");
            }
            if (t.nbytes > 0) by_offset.push_back(&t);
        }
        std::stable_sort(by_offset.begin(), by_offset.end(),
                         [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
        for (size_t i = 1; i < by_offset.size(); ++i) {
            const GgufTensorInfo& a = *by_offset[i - 1];
            const GgufTensorInfo& b = *by_offset[i];
            if (a.offset + a.nbytes > b.offset) {  // no wrap: both lie inside the data section
                return corrupt(b.info_offset, "tensor " + quoted_name(b.name) + " (data bytes " + byte_range(b) +
                                                  ") overlaps tensor " + quoted_name(a.name) + " (" + byte_range(a) +
                                                  "): tensors must not share data");
            }
        }
        return Status::ok();
    }

    static std::string byte_range(const GgufTensorInfo& t) {
        return "[" + std::to_string(t.offset) + ", " + std::to_string(t.offset + t.nbytes) + ")";
    }

    // An entry of an index (unordered_map node and bucket, its own copy of the name's
    // characters counted apart).
    static constexpr uint64_t kIndexedEntryBytes = 64;

    std::istream& in_;
    GgufReader& out_;
    uint64_t pos_ = 0;
    uint64_t kept_bytes_ = 0;  // memory the parsed header keeps (charge)
};

Result<GgufReader> GgufReader::open(const std::string& path) {
    GgufReader r;
    r.path_ = path;
    XB_ASSIGN_OR_RETURN(std::ifstream in, open_for_reading(path, "GGUF file"));
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec) return file_error(path, "cannot open the GGUF file", ec.value());
    r.file_size_ = size;
    GgufParser parser(in, r);
    XB_RETURN_IF_ERROR(parser.parse());
    return r;
}

Result<GgufReader> GgufReader::parse(std::span<const std::byte> bytes, std::string source) {
    GgufReader r;
    r.path_ = std::move(source);
    r.file_size_ = bytes.size();
    std::istringstream in(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    GgufParser parser(in, r);
    XB_RETURN_IF_ERROR(parser.parse());
    return r;
}

const GgufKV* GgufReader::find_kv_entry(std::string_view key) const {
    auto it = kv_index_.find(std::string(key));
    return it == kv_index_.end() ? nullptr : &kvs_[it->second];
}

const GgufValue* GgufReader::find_kv(std::string_view key) const {
    const GgufKV* kv = find_kv_entry(key);
    return kv ? &kv->value : nullptr;
}

const GgufTensorInfo* GgufReader::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(std::string(name));
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<std::ifstream> GgufReader::open_data(const GgufTensorInfo& info) const {
    if (ggml_type_info(info.type) == nullptr) {
        return Status(StatusCode::NotSupported, path_ + ": tensor " + quoted_name(info.name) + " has the unknown ggml type id " +
                                                    std::to_string(info.type));
    }
    XB_ASSIGN_OR_RETURN(std::ifstream in, open_for_reading(path_, "GGUF file"));
    in.seekg(static_cast<std::streamoff>(data_offset_ + info.offset));
    return in;
}

Status GgufReader::read_error(const GgufTensorInfo& info, uint64_t done) const {
    return Status(StatusCode::InvalidArgument, path_ + ": offset " + std::to_string(data_offset_ + info.offset + done) +
                                                   ": cannot read the data of tensor " + quoted_name(info.name) + " (file changed?)");
}

Status GgufReader::read_chunks(const GgufTensorInfo& info, size_t chunk, const ChunkSink& sink) const {
    XB_ASSIGN_OR_RETURN(std::ifstream in, open_data(info));
    std::vector<std::byte> piece(static_cast<size_t>(std::min<uint64_t>(std::max<size_t>(chunk, 1), info.nbytes)));
    for (uint64_t done = 0; done < info.nbytes;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(piece.size(), info.nbytes - done));
        in.read(reinterpret_cast<char*>(piece.data()), static_cast<std::streamsize>(n));
        if (!in) return read_error(info, done);
        XB_RETURN_IF_ERROR(sink(done, std::span<const std::byte>(piece.data(), n)));
        done += n;
    }
    return Status::ok();
}

Status GgufReader::read_into(const GgufTensorInfo& info, std::span<std::byte> out) const {
    if (out.size() != info.nbytes) {
        return Status(StatusCode::Internal, path_ + ": tensor " + quoted_name(info.name) + " has " + std::to_string(info.nbytes) +
                                                " bytes, the destination " + std::to_string(out.size()));
    }
    XB_ASSIGN_OR_RETURN(std::ifstream in, open_data(info));
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
    return in ? Status::ok() : read_error(info, 0);
}

Result<std::vector<std::byte>> GgufReader::read_data(const GgufTensorInfo& info) const {
    std::vector<std::byte> data(static_cast<size_t>(info.nbytes));
    XB_RETURN_IF_ERROR(read_into(info, data));
    return data;
}

Result<const GgufTensorInfo*> GgufReader::checked_tensor(std::string_view name, DType type,
                                                         const std::array<int64_t, kMaxDims>& ne) const {
    const GgufTensorInfo* info = find_tensor(name);
    if (info == nullptr) {
        std::vector<std::string> names;
        for (const GgufTensorInfo& t : tensors_) names.push_back(t.name);
        return Status(StatusCode::NotFound, path_ + ": no tensor " + quoted_name(name) + " in the file" +
                                                did_you_mean(name, names) + " (it has: " + join_names(names) + ")");
    }
    const std::string where = path_ + ": offset " + std::to_string(info->info_offset) + ": tensor " + quoted_name(info->name);
    const GgmlTypeInfo* ti = ggml_type_info(info->type);
    if (ti == nullptr || ti->dtype != type) {
        const std::string have = ti ? ti->name : "unknown type id " + std::to_string(info->type);
        const std::string hint = ti && !ti->dtype ? " (xbackend cannot use " + have + " tensors)"
                                 : ti        ? " (give the tensor \"type\": \"" + have + "\")"
                                             : "";
        return Status(StatusCode::InvalidArgument, where + " is " + have + ", the config wants " + dtype_name(type) + hint);
    }
    if (info->ne != ne) {
        return Status(StatusCode::InvalidArgument, where + " has shape " + ne_text(info->ne, info->n_dims) +
                                                       ", the config wants " + ne_text(ne, n_dims_of(ne)));
    }
    return info;
}

Result<std::vector<std::byte>> GgufReader::read_tensor(std::string_view name, DType type,
                                                       const std::array<int64_t, kMaxDims>& ne) const {
    XB_ASSIGN_OR_RETURN(const GgufTensorInfo* info, checked_tensor(name, type, ne));
    return read_data(*info);
}

// --- writing --------------------------------------------------------------------------------------

namespace {

// Little-endian serialisation into an output file.
class Out {
public:
    explicit Out(std::ofstream& f) : f_(f) {}
    void bytes(const void* p, size_t n) {
        f_.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
        pos_ += n;
    }
    template <typename T>
    void le(T v) {
        uint8_t b[sizeof(T)];
        uint64_t u = 0;
        std::memcpy(&u, &v, sizeof(T));
        for (size_t i = 0; i < sizeof(T); ++i) b[i] = static_cast<uint8_t>(u >> (8 * i));
        bytes(b, sizeof(T));
    }
    void str(const std::string& s) {
        le<uint64_t>(s.size());
        bytes(s.data(), s.size());
    }
    void pad_to(uint64_t alignment) {
        static constexpr char zeros[64] = {};
        while (pos_ % alignment != 0) bytes(zeros, std::min<uint64_t>(sizeof zeros, alignment - pos_ % alignment));
    }
    uint64_t pos() const { return pos_; }

private:
    std::ofstream& f_;
    uint64_t pos_ = 0;
};

void write_value(Out& o, const GgufValue& v) {
    switch (v.type) {
        case GgufValueType::U8: o.le(static_cast<uint8_t>(std::get<uint64_t>(v.data))); break;
        case GgufValueType::U16: o.le(static_cast<uint16_t>(std::get<uint64_t>(v.data))); break;
        case GgufValueType::U32: o.le(static_cast<uint32_t>(std::get<uint64_t>(v.data))); break;
        case GgufValueType::U64: o.le(std::get<uint64_t>(v.data)); break;
        case GgufValueType::I8: o.le(static_cast<int8_t>(std::get<int64_t>(v.data))); break;
        case GgufValueType::I16: o.le(static_cast<int16_t>(std::get<int64_t>(v.data))); break;
        case GgufValueType::I32: o.le(static_cast<int32_t>(std::get<int64_t>(v.data))); break;
        case GgufValueType::I64: o.le(std::get<int64_t>(v.data)); break;
        case GgufValueType::F32: o.le(static_cast<float>(std::get<double>(v.data))); break;
        case GgufValueType::F64: o.le(std::get<double>(v.data)); break;
        case GgufValueType::Bool: o.le(static_cast<uint8_t>(std::get<bool>(v.data) ? 1 : 0)); break;
        case GgufValueType::String: o.str(std::get<std::string>(v.data)); break;
        case GgufValueType::Array: {
            const auto& items = std::get<std::vector<GgufValue>>(v.data);
            o.le(static_cast<uint32_t>(v.elem_type));
            o.le(static_cast<uint64_t>(items.size()));
            for (const GgufValue& item : items) write_value(o, item);
            break;
        }
    }
}

// The value's alternative matches its declared type (what write_value relies on).
bool consistent(const GgufValue& v) {
    switch (v.type) {
        case GgufValueType::U8: case GgufValueType::U16: case GgufValueType::U32: case GgufValueType::U64:
            return std::holds_alternative<uint64_t>(v.data);
        case GgufValueType::I8: case GgufValueType::I16: case GgufValueType::I32: case GgufValueType::I64:
            return std::holds_alternative<int64_t>(v.data);
        case GgufValueType::F32: case GgufValueType::F64: return std::holds_alternative<double>(v.data);
        case GgufValueType::Bool: return std::holds_alternative<bool>(v.data);
        case GgufValueType::String: return std::holds_alternative<std::string>(v.data);
        case GgufValueType::Array: {
            const auto* items = v.as_array();
            if (items == nullptr) return false;
            for (const GgufValue& item : *items) {
                if (item.type != v.elem_type || !consistent(item)) return false;
            }
            return true;
        }
    }
    return false;
}

}  // namespace

Status GgufWriter::set_alignment(size_t alignment) {
    if (alignment == 0 || !std::has_single_bit(alignment) || alignment > (1u << 20)) {
        return Status(StatusCode::InvalidArgument, "gguf: alignment must be a power of two");
    }
    alignment_ = alignment;
    if (alignment != kGgufDefaultAlignment) set_kv("general.alignment", GgufValue::u32(static_cast<uint32_t>(alignment)));
    return Status::ok();
}

void GgufWriter::set_kv(std::string key, GgufValue value) {
    for (GgufKV& kv : kvs_) {
        if (kv.key == key) {
            kv.value = std::move(value);
            return;
        }
    }
    kvs_.push_back({std::move(key), std::move(value), 0});
}

Status GgufWriter::add_tensor(std::string name, DType type, const std::array<int64_t, kMaxDims>& ne, DataSource source) {
    const std::optional<uint32_t> id = ggml_type_id(type);
    if (!id) return Status(StatusCode::NotSupported, std::string("gguf: cannot store ") + dtype_name(type) + " tensors");
    for (const PendingTensor& t : tensors_) {
        if (t.name == name) return Status(StatusCode::InvalidArgument, "gguf: tensor " + quoted_name(name) + " is added twice");
    }
    for (int64_t d : ne) {
        if (d < 0) return Status(StatusCode::InvalidArgument, "gguf: tensor " + quoted_name(name) + " has a negative size");
    }
    if (ne[0] % blck_size(type) != 0) {
        return Status(StatusCode::InvalidArgument, "gguf: tensor " + quoted_name(name) + " of type " + dtype_name(type) + " has " +
                                                       std::to_string(ne[0]) + " columns, not a multiple of the block size " +
                                                       std::to_string(blck_size(type)));
    }
    const std::optional<uint64_t> nbytes = checked_nbytes(type, ne);
    if (!nbytes) return Status(StatusCode::InvalidArgument, "gguf: tensor " + quoted_name(name) + " is too large");
    tensors_.push_back({std::move(name), *id, n_dims_of(ne), ne, *nbytes, std::move(source)});
    return Status::ok();
}

Status GgufWriter::add_tensor(std::string name, DType type, const std::array<int64_t, kMaxDims>& ne,
                              std::vector<std::byte> data) {
    auto shared = std::make_shared<std::vector<std::byte>>(std::move(data));
    const std::string label = name;
    return add_tensor(std::move(name), type, ne, [shared, label](std::span<std::byte> out) {
        if (out.size() != shared->size()) {
            return Status(StatusCode::InvalidArgument, "gguf: tensor " + quoted_name(label) + " needs " + std::to_string(out.size()) +
                                                           " bytes, got " + std::to_string(shared->size()));
        }
        if (!out.empty()) std::memcpy(out.data(), shared->data(), out.size());  // an empty tensor's pointers may be null
        return Status::ok();
    });
}

Status GgufWriter::write(const std::string& path) const {
    for (const GgufKV& kv : kvs_) {
        if (!consistent(kv.value)) return Status(StatusCode::InvalidArgument, "gguf: metadata " + quoted_name(kv.key) + " is malformed");
    }
    XB_ASSIGN_OR_RETURN(std::ofstream f, open_for_writing(path, "GGUF file"));
    Out o(f);
    o.bytes("GGUF", 4);
    o.le<uint32_t>(kGgufVersion);
    o.le<uint64_t>(tensors_.size());
    o.le<uint64_t>(kvs_.size());
    for (const GgufKV& kv : kvs_) {
        o.str(kv.key);
        o.le(static_cast<uint32_t>(kv.value.type));
        write_value(o, kv.value);
    }
    uint64_t offset = 0;
    for (const PendingTensor& t : tensors_) {
        o.str(t.name);
        o.le<uint32_t>(static_cast<uint32_t>(t.n_dims));
        for (int i = 0; i < t.n_dims; ++i) o.le<uint64_t>(static_cast<uint64_t>(t.ne[static_cast<size_t>(i)]));
        o.le<uint32_t>(t.type);
        o.le<uint64_t>(offset);
        offset = align_to(offset + t.nbytes, alignment_);
    }
    o.pad_to(alignment_);
    std::vector<std::byte> buffer;
    for (const PendingTensor& t : tensors_) {
        buffer.resize(static_cast<size_t>(t.nbytes));
        const Status s = t.source(buffer);
        if (!s.is_ok()) return Status(s.code(), path + ": tensor " + quoted_name(t.name) + ": " + s.message());
        o.bytes(buffer.data(), buffer.size());
        o.pad_to(alignment_);
    }
    f.close();
    if (!f) return write_error(path, "GGUF file");
    return Status::ok();
}

}  // namespace xb
