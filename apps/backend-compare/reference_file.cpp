#include "reference_file.hpp"

#include <cstring>

#include "backend/tensor_io.hpp"

namespace xb::tools {

ReferenceWriter::ReferenceWriter(const std::string& backend, const std::string& model, uint64_t seed) {
    writer_.set_kv("general.architecture", GgufValue::string("xbackend-node-results"));
    writer_.set_kv("xbackend.backend", GgufValue::string(backend));
    writer_.set_kv("xbackend.config", GgufValue::string(model));
    writer_.set_kv("xbackend.seed", GgufValue::u64(seed));
}

Status ReferenceWriter::add(const Tensor& node) {
    XB_ASSIGN_OR_RETURN(std::vector<float> values, tensor_get_f32(node));
    std::vector<std::byte> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return writer_.add_tensor(node.name, DType::F32, node.ne, std::move(bytes));
}

Result<std::vector<float>> load_reference(const GgufReader& file, const Tensor& node) {
    XB_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, file.read_tensor(node.name, DType::F32, node.ne));
    std::vector<float> values(bytes.size() / sizeof(float));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
    return values;
}

}  // namespace xb::tools
