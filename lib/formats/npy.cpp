#include "formats/npy.hpp"

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

#include "core/file_io.hpp"
#include "core/message_text.hpp"

namespace xb {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kAlign = 64;  // numpy pads the header so that the data starts 64-aligned

Status npy_error(const std::string& source, size_t offset, const std::string& why) {
    return Status(StatusCode::InvalidArgument, source + ": offset " + std::to_string(offset) + ": " + why);
}

struct Descr {
    DType type;
    size_t item_size;
    bool is_f64;  // converted to f32 on reading
};

std::optional<Descr> parse_descr(const std::string& d) {
    if (d.size() < 3) return std::nullopt;
    const char order = d[0];
    const std::string kind = d.substr(1);
    if (order != '<' && order != '=' && order != '|') return std::nullopt;  // '>' (big-endian) is not read
    if (kind == "f4") return Descr{DType::F32, 4, false};
    if (kind == "f2") return Descr{DType::F16, 2, false};
    if (kind == "i4") return Descr{DType::I32, 4, false};
    if (kind == "i8") return Descr{DType::I64, 8, false};
    if (kind == "f8") return Descr{DType::F32, 8, true};
    return std::nullopt;
}

const char* descr_of(DType t) {
    switch (t) {
        case DType::F32: return "<f4";
        case DType::F16: return "<f2";
        case DType::I32: return "<i4";
        case DType::I64: return "<i8";
        default: return nullptr;  // bf16 and the quantized types have no numpy dtype
    }
}

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
public:
    HeaderParser(std::string_view text, size_t base, const std::string& source) : text_(text), base_(base), source_(source) {}

    Status parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape) {
        bool have_descr = false, have_fortran = false, have_shape = false;
        XB_RETURN_IF_ERROR(expect('{'));
        while (!peek('}')) {
            std::string key;
            XB_RETURN_IF_ERROR(quoted(key));
            XB_RETURN_IF_ERROR(expect(':'));
            if (key == "descr") {
                XB_RETURN_IF_ERROR(quoted(descr));
                have_descr = true;
            } else if (key == "fortran_order") {
                XB_RETURN_IF_ERROR(boolean(fortran));
                have_fortran = true;
            } else if (key == "shape") {
                XB_RETURN_IF_ERROR(tuple(shape));
                have_shape = true;
            } else {
                return fail("unknown header key " + quoted_name(key));
            }
            if (!peek('}')) XB_RETURN_IF_ERROR(expect(','));
        }
        ++pos_;
        if (!have_descr || !have_fortran || !have_shape) return fail("the header lacks descr, fortran_order or shape");
        return Status::ok();
    }

private:
    void skip_space() {
        while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    bool peek(char c) {
        skip_space();
        return pos_ < text_.size() && text_[pos_] == c;
    }
    Status expect(char c) {
        if (!peek(c)) return fail(std::string("expected '") + c + "'");
        ++pos_;
        return Status::ok();
    }
    Status quoted(std::string& out) {
        skip_space();
        if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) return fail("expected a quoted string");
        const char q = text_[pos_++];
        const size_t end = text_.find(q, pos_);
        if (end == std::string_view::npos) return fail("unterminated string");
        out = std::string(text_.substr(pos_, end - pos_));
        pos_ = end + 1;
        return Status::ok();
    }
    Status boolean(bool& out) {
        skip_space();
        if (text_.substr(pos_, 4) == "True") {
            out = true;
            pos_ += 4;
        } else if (text_.substr(pos_, 5) == "False") {
            out = false;
            pos_ += 5;
        } else {
            return fail("expected True or False");
        }
        return Status::ok();
    }
    Status tuple(std::vector<int64_t>& out) {
        XB_RETURN_IF_ERROR(expect('('));
        while (!peek(')')) {
            skip_space();
            int64_t v = 0;
            size_t digits = 0;
            while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
                if (v > (INT64_MAX - 9) / 10) return fail("dimension too large");
                v = v * 10 + (text_[pos_++] - '0');
                ++digits;
            }
            if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 longs
            if (digits == 0) return fail("expected a dimension");
            out.push_back(v);
            if (!peek(')')) XB_RETURN_IF_ERROR(expect(','));
        }
        ++pos_;
        return Status::ok();
    }
    Status fail(const std::string& why) const { return npy_error(source_, base_ + pos_, "bad .npy header: " + why); }

    std::string_view text_;
    size_t base_;
    const std::string& source_;
    size_t pos_ = 0;
};

uint32_t read_le(const std::byte* p, size_t n) {
    uint32_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(std::to_integer<uint8_t>(p[i])) << (8 * i);
    return v;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

int64_t NpyArray::nelements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

Result<std::array<int64_t, kMaxDims>> NpyArray::ne() const {
    if (shape.size() > kMaxDims) {
        return Status(StatusCode::InvalidArgument, "an array of " + std::to_string(shape.size()) +
                                                       " dims does not fit a tensor (at most 4)");
    }
    std::array<int64_t, kMaxDims> out{1, 1, 1, 1};
    for (size_t i = 0; i < shape.size(); ++i) out[i] = shape[shape.size() - 1 - i];
    return out;
}

Result<NpyArray> decode_npy(std::span<const std::byte> bytes, const std::string& source) {
    if (bytes.size() < kMagicSize + 4) {
        return npy_error(source, 0, "truncated: " + std::to_string(bytes.size()) + " bytes, shorter than a .npy header");
    }
    if (std::memcmp(bytes.data(), kMagic, kMagicSize) != 0) return npy_error(source, 0, "not a .npy file (bad magic)");
    const auto major = std::to_integer<uint8_t>(bytes[6]);
    const auto minor = std::to_integer<uint8_t>(bytes[7]);
    if (major < 1 || major > 3) {
        return npy_error(source, 6, "unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor));
    }
    const size_t len_size = major == 1 ? 2 : 4;
    if (bytes.size() < 8 + len_size) return npy_error(source, 8, "truncated in the header length");
    const size_t header_len = read_le(bytes.data() + 8, len_size);
    const size_t header_at = 8 + len_size;
    if (header_len > bytes.size() - header_at) {
        return npy_error(source, header_at, "truncated: the header needs " + std::to_string(header_len) + " bytes, the file has " +
                                                std::to_string(bytes.size() - header_at) + " left");
    }
    const std::string_view header(reinterpret_cast<const char*>(bytes.data() + header_at), header_len);
    std::string descr;
    bool fortran = false;
    NpyArray a;
    XB_RETURN_IF_ERROR(HeaderParser(header, header_at, source).parse(descr, fortran, a.shape));
    const std::optional<Descr> d = parse_descr(descr);
    if (!d) {
        return npy_error(source, header_at, "unsupported dtype '" + descr +
                                                "' (supported: '<f4', '<f2', '<i4', '<i8', '<f8' read as f32)");
    }
    if (fortran) {
        return npy_error(source, header_at, "Fortran-order arrays are not supported (save with np.ascontiguousarray)");
    }
    a.type = d->type;
    const size_t data_at = header_at + header_len;
    int64_t n = 1;
    for (int64_t dim : a.shape) {
        if (dim != 0 && n > INT64_MAX / dim) return npy_error(source, header_at, "shape " + shape_text(a.shape) + " is too large");
        n *= dim;
    }
    const size_t have = bytes.size() - data_at;
    if (n < 0 || static_cast<uint64_t>(n) > have / d->item_size || static_cast<size_t>(n) * d->item_size != have) {
        const std::string need = n >= 0 && static_cast<uint64_t>(n) <= SIZE_MAX / d->item_size
                                     ? std::to_string(static_cast<size_t>(n) * d->item_size)
                                     : std::string("too many");
        return npy_error(source, data_at, (static_cast<uint64_t>(n) > have / d->item_size ? "truncated data: " : "corrupt data: ") +
                                              std::string("shape ") + shape_text(a.shape) + " of " + quoted_name(descr) + " needs " + need +
                                              " bytes, the file has " + std::to_string(have));
    }
    const std::byte* src = bytes.data() + data_at;
    if (d->is_f64) {
        a.data.resize(static_cast<size_t>(n) * sizeof(float));
        for (int64_t i = 0; i < n; ++i) {
            double v;
            std::memcpy(&v, src + i * 8, 8);
            const auto f = static_cast<float>(v);
            std::memcpy(a.data.data() + i * 4, &f, 4);
        }
    } else {
        a.data.assign(src, src + have);
    }
    return a;
}

Result<NpyArray> read_npy(const std::string& path) {
    XB_ASSIGN_OR_RETURN(std::ifstream in, open_for_reading(path, ".npy file"));
    std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) return read_error(path, ".npy file");
    return decode_npy(std::as_bytes(std::span<const char>(raw)), path);
}

Result<std::vector<std::byte>> encode_npy(const NpyArray& a) {
    const char* descr = descr_of(a.type);
    if (descr == nullptr) {
        return Status(StatusCode::NotSupported, std::string("npy: numpy has no ") + dtype_name(a.type) + " type; convert to f32");
    }
    const size_t expect = static_cast<size_t>(a.nelements()) * type_size(a.type);
    if (a.data.size() != expect) {
        return Status(StatusCode::InvalidArgument, "npy: shape " + shape_text(a.shape) + " needs " + std::to_string(expect) +
                                                       " bytes of data, got " + std::to_string(a.data.size()));
    }
    std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape_text(a.shape) + ", }";
    const bool v2 = header.size() + 1 + 10 > 65535;
    const size_t prefix = v2 ? 12 : 10;
    const size_t total = (prefix + header.size() + 1 + kAlign - 1) / kAlign * kAlign;
    header.append(total - prefix - header.size() - 1, ' ');
    header += '\n';
    std::vector<std::byte> out;
    out.reserve(total + a.data.size());
    for (size_t i = 0; i < kMagicSize; ++i) out.push_back(static_cast<std::byte>(kMagic[i]));
    out.push_back(std::byte{static_cast<uint8_t>(v2 ? 2 : 1)});
    out.push_back(std::byte{0});
    const size_t len = header.size();
    for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out.push_back(static_cast<std::byte>((len >> (8 * i)) & 0xff));
    for (char c : header) out.push_back(static_cast<std::byte>(c));
    out.insert(out.end(), a.data.begin(), a.data.end());
    return out;
}

Status write_npy(const std::string& path, const NpyArray& a) {
    XB_ASSIGN_OR_RETURN(const std::vector<std::byte> bytes, encode_npy(a));
    XB_ASSIGN_OR_RETURN(std::ofstream out, open_for_writing(path, ".npy file"));
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) return write_error(path, ".npy file");
    return Status::ok();
}

bool npy_has_type(DType type) { return descr_of(type) != nullptr; }

}  // namespace xb
