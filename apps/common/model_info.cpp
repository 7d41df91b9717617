#include "model_info.hpp"

#include <map>

#include "builtin/builtin_backends.hpp"
#include "config/config_parse.hpp"
#include "models/gguf_model.hpp"
#include "models/model_text.hpp"
#include "config/model.hpp"
#include "core/size_math.hpp"

namespace xb::tools {

namespace {

std::string byte_size_text(uint64_t bytes) { return bytes_text(static_cast<double>(bytes)); }


using Json = nlohmann::ordered_json;

// Tensor count and bytes per type name, in the order types first appear.
class TypeTally {
public:
    void add(const std::string& type, uint64_t bytes) {
        auto it = index_.find(type);
        if (it == index_.end()) {
            it = index_.emplace(type, rows_.size()).first;
            rows_.push_back({type, 0, 0});
        }
        rows_[it->second].count += 1;
        rows_[it->second].bytes += bytes;
        total_ += bytes;
    }
    uint64_t total() const { return total_; }

    void add_to(report::Table& table, Json& doc) const {
        Json types = Json::array();
        for (const Row& r : rows_) {
            table.add_row({"tensors " + r.type, std::to_string(r.count) + (r.count == 1 ? " tensor, " : " tensors, ") + byte_size_text(r.bytes)});
            types.push_back({{"type", r.type}, {"tensors", r.count}, {"bytes", r.bytes}});
        }
        table.add_row({"total bytes", byte_size_text(total_)});
        doc["tensor_types"] = std::move(types);
        doc["bytes"] = total_;
    }

private:
    struct Row {
        std::string type;
        int64_t count;
        uint64_t bytes;
    };
    std::vector<Row> rows_;
    std::map<std::string, size_t> index_;
    uint64_t total_ = 0;
};

// Adds a row to the table and the same value to the JSON document.
template <typename V>
void put(report::Table& table, Json& doc, const char* key, const V& value) {
    doc[key] = value;
    if constexpr (std::is_same_v<V, std::string>) {
        table.add_row({key, value});
    } else if constexpr (std::is_same_v<V, bool>) {
        table.add_row({key, std::string(value ? "yes" : "no")});
    } else if constexpr (std::is_floating_point_v<V>) {
        table.add_row({key, static_cast<double>(value)});
    } else {
        table.add_row({key, static_cast<int64_t>(value)});
    }
}

Status gguf_info(const std::string& path, report::Table& table, Json& doc) {
    XB_ASSIGN_OR_RETURN(const GgufReader file, GgufReader::open(path));
    put(table, doc, "file", path);
    put(table, doc, "gguf_version", static_cast<int64_t>(file.version()));
    const GgufValue* arch = file.find_kv("general.architecture");
    put(table, doc, "architecture", arch && arch->as_string() ? *arch->as_string() : std::string("(none)"));
    Result<GgufModelInfo> info = read_gguf_model_info(file);
    if (info.is_ok()) {
        const DecoderParams& p = info->params;
        if (!info->name.empty()) put(table, doc, "name", info->name);
        put(table, doc, "layers", p.n_layers);
        put(table, doc, "embedding_length", p.n_embd);
        put(table, doc, "feed_forward_length", p.n_ff);
        put(table, doc, "head_count", p.n_head);
        put(table, doc, "head_count_kv", p.n_head_kv);
        put(table, doc, "head_size", p.head_dim());
        put(table, doc, "vocabulary", p.n_vocab);
        put(table, doc, "context_length", info->context_length);
        put(table, doc, "rms_epsilon", static_cast<double>(p.rms_eps));
        put(table, doc, "rope",
            !p.rope ? std::string("none (rope.scaling.finetuned false)")
                    : std::string(p.rope_mode == RopeMode::Neox ? "neox" : "normal") + ", " + std::to_string(p.rope_n_dims) + " dims, base " +
                          report::cell_text(static_cast<double>(p.rope_freq_base), 6) + ", scaling " + info->rope_scaling);
        if (!p.rope_factors.empty()) put(table, doc, "rope_factors", p.rope_factors);
        if (file.find_tensor("rope_factors_long.weight") != nullptr) {
            put(table, doc, "rope_factors", "rope_factors_short.weight, rope_factors_long.weight past " +
                                                std::to_string(p.rope_n_ctx_orig) + " positions of cache");
        }
        const GgufLayersSummary layers = summarize_layers(file, *info);
        put(table, doc, "qkv_bias", layers.qkv_bias);
        put(table, doc, "tied_output", p.tied_output);
        if (!p.recurrent.empty()) put(table, doc, "layer_pattern", layers_text(p));
        put(table, doc, "variant", layers.variant);
        if (p.swa.window > 0) put(table, doc, "sliding_window", window_text(p));
        if (p.has_experts()) put(table, doc, "experts", experts_text(p));
    } else {
        // Still list the tensors: --info is how one finds out what a file holds.
        put(table, doc, "runnable", "no: " + info.status().message());
    }
    put(table, doc, "tensors", static_cast<int64_t>(file.tensors().size()));
    TypeTally tally;
    for (const GgufTensorInfo& t : file.tensors()) {
        const GgmlTypeInfo* ti = ggml_type_info(t.type);
        tally.add(ti ? ti->name : "type " + std::to_string(t.type), t.nbytes);
    }
    tally.add_to(table, doc);
    put(table, doc, "file_bytes", byte_size_text(file.file_size()));
    return Status::ok();
}

Status graph_info(const config::ConfigSpec& spec, const CommonOptions& options, report::Table& table, Json& doc) {
    config::BuildOptions build;
    build.backends = options.backends;
    XB_ASSIGN_OR_RETURN(const config::Model model, config::build_model(spec, global_registry(), build));
    put(table, doc, "config", spec.source);
    put(table, doc, "model", spec.model ? std::string(config::model_kind_name(spec.model->kind)) : std::string("explicit graph"));
    put(table, doc, "nodes", static_cast<int64_t>(model.graph.n_nodes()));
    put(table, doc, "inputs", static_cast<int64_t>(model.inputs.size()));
    put(table, doc, "outputs", static_cast<int64_t>(model.outputs.size()));
    put(table, doc, "tokens", model.n_tokens);
    put(table, doc, "matmul_gflop", model.matmul_flops * 1e-9);
    put(table, doc, "weights", static_cast<int64_t>(model.weights.size()));
    TypeTally tally;
    for (const Tensor* w : model.weights) tally.add(dtype_name(w->type), w->nbytes());
    tally.add_to(table, doc);
    return Status::ok();
}

}  // namespace

Status write_model_info(const CommonOptions& options) {
    if (options.config.empty()) {
        return Status(StatusCode::InvalidArgument, "--info describes a config's model: give one with -c FILE (a JSON config or a .gguf file)");
    }
    XB_ASSIGN_OR_RETURN(const config::ConfigSpec spec, config::load_config(options.config));
    report::Table table({"property", "value"});
    Json doc;
    if (spec.model && spec.model->kind == config::ModelKind::Gguf) {
        XB_RETURN_IF_ERROR(gguf_info(spec.model->gguf.file, table, doc));
    } else {
        XB_RETURN_IF_ERROR(graph_info(spec, options, table, doc));
    }
    return write_report(table, doc, options);
}

}  // namespace xb::tools
