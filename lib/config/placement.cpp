// Placement: which backends take part, where each weight lives, and per-node overrides.
//
// A weight's device is the first of: the first `weights` rule whose pattern matches its name;
// for model builders with a split, llama.cpp's: in layer mode the last N layers (N = offload_layers,
// or all and the output) shared by the split's devices in proportion to their ratios, the output
// layer counted as one more; in row mode those layers on the split's first device with the rows of
// their product matrices shared by all its devices; the rest, and the token embedding, on the last
// backend; for model builders with offload_layers N, the llama.cpp rule (the last N layers on the
// first GPU-type backend, the others, and the token embedding, on the last backend; the output norm
// and projection on the GPU only when N > n_layers); otherwise the first (highest-priority) backend.
//
// Weights on a CPU-type device go to the pinned host buffer type of the first backend whose device
// has one (llama.cpp's rule, with the CPU compute buffer there too: scheduler_buffer_types), unless
// host_weights is "pageable": uploads from page-locked memory run at the link's speed.
#include "config/placement.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_set>

#include "alloc/context_alloc.hpp"
#include "backend/host_memory.hpp"
#include "backend/row_split_buffer.hpp"
#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "config/config_error.hpp"
#include "config/init.hpp"
#include "config/layer_split.hpp"
#include "config/model_internal.hpp"
#include "core/size_math.hpp"
#include "core/message_text.hpp"

namespace xb::config {

namespace {

bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

// Resolves device names of the config to the backends taking part.
class DeviceResolver {
public:
    DeviceResolver(const ConfigSpec& spec, const Registry& registry, const BuildOptions& options,
                   std::vector<std::string>& notes)
        : spec_(spec), registry_(registry), options_(options), notes_(notes) {}

    const Registry& registry() const { return registry_; }

    Status resolve_backends(std::vector<std::string>& out) {
        const bool overridden = !options_.backends.empty();
        const std::vector<std::string>& names = overridden ? options_.backends : spec_.placement.backends;
        for (size_t i = 0; i < names.size(); ++i) {
            const std::string path = overridden ? "--backends" : child_path(spec_.placement.backends_path, i);
            Device* dev = registry_.dev_by_name(mapped(names[i]));
            if (dev == nullptr) return config_error(StatusCode::NotFound, spec_.source, path, missing(names[i]));
            for (const std::string& b : out) {
                if (b == dev->name()) return config_error(spec_.source, path, "device " + quoted_name(b) + " is listed twice");
            }
            out.emplace_back(dev->name());
        }
        backends_ = out;
        return Status::ok();
    }

    // The backend a rule's device means; nullopt when the rule is dropped (a device that
    // --backends left out).
    Result<std::optional<std::string>> rule_device(const DeviceRule& rule) {
        const std::string path = child_path(rule.path, "device");
        Device* dev = registry_.dev_by_name(mapped(rule.device));
        if (dev != nullptr) {
            for (const std::string& b : backends_) {
                if (b == dev->name()) return std::optional<std::string>(b);
            }
        }
        if (!options_.backends.empty()) {
            notes_.push_back(rule.path + ": device " + quoted_name(rule.device) + " is not among --backends; the rule is ignored");
            return std::optional<std::string>();
        }
        if (dev == nullptr) return config_error(StatusCode::NotFound, spec_.source, path, missing(rule.device));
        return config_error(spec_.source, path, "device " + quoted_name(rule.device) + " is not one of placement.backends (" +
                                                    join_names(backends_) + ")");
    }

private:
    std::string mapped(const std::string& name) const {
        for (const auto& [from, to] : options_.device_map) {
            if (same_name(from, name)) return to;
        }
        return name;
    }

    std::string missing(const std::string& name) const {
        const std::string target = mapped(name);
        if (same_name(target, name)) return missing_device_message(name, registry_);
        return missing_device_message(target, registry_) + " (the config's " + quoted_name(name) + " is mapped onto it)";
    }

    const ConfigSpec& spec_;
    const Registry& registry_;
    const BuildOptions& options_;
    std::vector<std::string>& notes_;
    std::vector<std::string> backends_;
};

// The first of the backends whose device has a pinned host buffer type ("" when none does): its
// host memory holds the weights that stay on the host, as llama.cpp takes the first GPU's.
std::string pinned_host_device(const Registry& registry, const std::vector<std::string>& backends) {
    for (const std::string& name : backends) {
        Device* dev = registry.dev_by_name(name);
        if (dev != nullptr && dev->caps().host_buffer && dev->host_buffer_type() != nullptr) return name;
    }
    return {};
}

int first_gpu(const Registry& registry, const std::vector<std::string>& backends) {
    for (size_t i = 0; i < backends.size(); ++i) {
        const Device* dev = registry.dev_by_name(backends[i]);
        if (dev != nullptr && dev->type() == DeviceType::GPU) return static_cast<int>(i);
    }
    return -1;
}

// The split's devices that take part (those --backends left out are dropped, with a note) and
// their ratios; no devices when none is left.
struct SplitDevices {
    std::vector<std::string> devices;
    std::vector<double> ratios;
};

Result<SplitDevices> resolve_split(const SplitSpec& split, DeviceResolver& devices, std::vector<std::string>& notes) {
    SplitDevices out;
    for (size_t i = 0; i < split.devices.size(); ++i) {
        const DeviceRule as_rule{"", split.devices[i], child_path(child_path(split.path, "devices"), i)};
        XB_ASSIGN_OR_RETURN(const std::optional<std::string> dev, devices.rule_device(as_rule));
        if (dev && split.ratios[i] > 0) {
            out.devices.push_back(*dev);
            out.ratios.push_back(split.ratios[i]);
        }
    }
    if (out.devices.empty()) notes.push_back(split.path + ": no device of the split takes part; every layer stays on the host");
    return out;
}

// The device of each builder layer under a layer split, the output layer last (index n_layers):
// llama.cpp's rule with n_gpu_layers = `offloaded` (the last `offloaded` layers are shared, and the
// output layer too when `offloaded` exceeds n_layers).
std::vector<std::string> split_layers(const SplitDevices& split, int n_layers, int offloaded, const std::string& host) {
    std::vector<std::string> out(static_cast<size_t>(n_layers) + 1, host);
    if (split.devices.empty()) return out;
    const int shared = std::min(offloaded, n_layers + 1);
    const int first = std::max(n_layers - offloaded, 0);
    const std::vector<int> device_of = split_layer_devices(shared, split.ratios);
    for (int i = 0; i < shared; ++i) out[static_cast<size_t>(first + i)] = split.devices[static_cast<size_t>(device_of[static_cast<size_t>(i)])];
    return out;
}

// The offload_layers device of one builder weight.
const std::string& offload_device(const detail::Leaf& leaf, int n, int n_layers, const std::string& gpu, const std::string& cpu) {
    switch (leaf.group) {
        case detail::WeightGroup::Layer: return leaf.layer >= n_layers - n ? gpu : cpu;
        case detail::WeightGroup::OutputLayer: return n > n_layers ? gpu : cpu;
        case detail::WeightGroup::InputLayer:
        case detail::WeightGroup::Other: return cpu;
    }
    return cpu;
}

// The layer split's device of one builder weight; the token embedding stays on the host.
const std::string& split_device(const detail::Leaf& leaf, const std::vector<std::string>& layer_device, const std::string& host) {
    switch (leaf.group) {
        case detail::WeightGroup::Layer: return layer_device.at(static_cast<size_t>(leaf.layer));
        case detail::WeightGroup::OutputLayer: return layer_device.back();
        case detail::WeightGroup::InputLayer:
        case detail::WeightGroup::Other: return host;
    }
    return host;
}

// The weights a row split shares: matrices that mul_mat nodes take directly as their first source.
std::unordered_set<const Tensor*> product_weights(const Graph& graph) {
    std::unordered_set<const Tensor*> out;
    for (const Tensor* n : graph.nodes()) {
        const Tensor* w = n->src[0];
        if (n->op == Op::MulMat && w != nullptr && !w->is_view() && w->ne[2] == 1 && w->ne[3] == 1) out.insert(w);
    }
    return out;
}

// The row split's part after the weights are placed (the offloaded layers on the split's first
// device): the matrices there are marked to have their rows shared by all its devices. An error when
// the first device cannot compute with such weights.
Status mark_row_split(const ConfigSpec& spec, const SplitDevices& split, const Graph& graph, const Registry& registry,
                      ModelPlacement& p) {
    if (split.devices.size() < 2) return Status::ok();  // one device: nothing to share
    std::vector<Device*> devices;
    for (const std::string& name : split.devices) devices.push_back(registry.dev_by_name(name));
    const RowSplitBufferType probe(devices, split.ratios);
    if (!devices.front()->supports_buft(probe)) {
        return config_error(spec.source, spec.placement.split->path + "/mode",
                            "rows split over " + join_names(split.devices) + ": " + split.devices.front() +
                                " cannot compute with weights split by rows (simulated and CUDA devices can, each over "
                                "devices of their own kind); use \"layer\"");
    }
    const std::unordered_set<const Tensor*> products = product_weights(graph);
    for (WeightPlacement& w : p.weights) w.row_split = w.device == split.devices.front() && products.count(w.tensor) > 0;
    p.row_split = ModelPlacement::RowSplit{split.devices, split.ratios};
    return Status::ok();
}

Status place_weights(const ConfigSpec& spec, DeviceResolver& devices, const detail::BuiltGraph& built, const Graph& graph,
                     const std::vector<Tensor*>& weights, std::vector<std::string>& notes, ModelPlacement& p) {
    const auto used = [&](const Tensor* t) { return std::find(weights.begin(), weights.end(), t) != weights.end(); };
    std::vector<std::pair<const DeviceRule*, std::string>> rules;
    for (const DeviceRule& r : spec.placement.weights) {
        XB_ASSIGN_OR_RETURN(const std::optional<std::string> dev, devices.rule_device(r));
        if (dev) rules.emplace_back(&r, *dev);
    }
    std::vector<std::string> weight_names;
    for (const detail::Leaf& leaf : built.leaves) {
        if (leaf.role == Role::Weight) weight_names.push_back(leaf.tensor->name);
    }
    for (const DeviceRule& r : spec.placement.weights) {
        const bool any = std::any_of(weight_names.begin(), weight_names.end(), [&](const std::string& n) { return r.matches(n); });
        if (!any) {
            return config_error(spec.source, r.pattern_path(), "pattern " + quoted_name(r.pattern) + " matches no weight" +
                                                                                did_you_mean(r.pattern, weight_names) +
                                                                                " (weights: " + join_names(weight_names) + ")");
        }
    }
    const std::optional<int> offload = spec.placement.offload_layers;
    std::string gpu = p.backends.back();
    if (offload && !spec.placement.split) {
        const int g = first_gpu(devices.registry(), p.backends);
        if (g >= 0) {
            gpu = p.backends[static_cast<size_t>(g)];
        } else if (*offload > 0) {
            notes.push_back("offload_layers: no GPU-type device among the backends (" + join_names(p.backends) +
                            "); every layer stays on " + p.backends.back());
        }
    }
    // With a split: the device of each layer, the output layer last. A row split puts every
    // offloaded layer on its first device (and shares their matrices' rows below).
    std::vector<std::string> layer_device;
    SplitDevices split;
    const bool rows = spec.placement.split && spec.placement.split->mode == SplitSpec::Mode::Row;
    if (spec.placement.split) {
        XB_ASSIGN_OR_RETURN(split, resolve_split(*spec.placement.split, devices, notes));
        SplitDevices first_only;
        if (!split.devices.empty()) first_only = {{split.devices.front()}, {1.0}};
        layer_device = split_layers(rows ? first_only : split, built.n_layers, offload.value_or(built.n_layers + 1),
                                    p.backends.back());
    }
    for (const detail::Leaf& leaf : built.leaves) {
        if (leaf.role != Role::Weight || !used(leaf.tensor)) continue;
        std::string device = p.backends.front();
        if (!layer_device.empty()) {
            device = split_device(leaf, layer_device, p.backends.back());
        } else if (offload) {
            device = offload_device(leaf, *offload, built.n_layers, gpu, p.backends.back());
        }
        for (const auto& [rule, dev] : rules) {
            if (rule->matches(leaf.tensor->name)) {
                device = dev;
                break;
            }
        }
        p.weights.push_back({leaf.tensor, device, false});
    }
    if (rows) XB_RETURN_IF_ERROR(mark_row_split(spec, split, graph, devices.registry(), p));
    return Status::ok();
}

Status place_nodes(const ConfigSpec& spec, DeviceResolver& devices, const Graph& graph, ModelPlacement& p) {
    for (const DeviceRule& r : spec.placement.nodes) {
        XB_ASSIGN_OR_RETURN(const std::optional<std::string> dev, devices.rule_device(r));
        std::vector<std::string> names;
        bool any = false;
        for (Tensor* n : graph.nodes()) {
            if (n->name.empty()) continue;
            names.push_back(n->name);
            if (!r.matches(n->name)) continue;
            any = true;
            if (dev) p.nodes.push_back({n, *dev});
        }
        if (!any) {
            return config_error(spec.source, r.pattern_path(), "pattern " + quoted_name(r.pattern) + " matches no node of the graph" +
                                                                                did_you_mean(r.pattern, names) +
                                                                                " (named nodes: " + join_names(names) + ")");
        }
    }
    return Status::ok();
}

}  // namespace

std::string missing_device_message(const std::string& device, const Registry& reg) {
    std::string example = "CPU";
    for (size_t i = 0; i < reg.dev_count(); ++i) {
        if (reg.dev(i).type() == DeviceType::GPU) {
            example = reg.dev(i).name();
            break;
        }
    }
    std::string msg = "device " + quoted_name(device) + " is not present (present: " + reg.device_names() + "); choose others with --backends " +
                      (example == "CPU" ? std::string("CPU") : example + ",CPU");
    if (example != "CPU") msg += ", or map it onto one with --map " + name_text(device) + "=" + example;
    return msg;
}

namespace detail {

Result<ModelPlacement> resolve_placement(const ConfigSpec& spec, const Registry& registry, const BuildOptions& options,
                                         const BuiltGraph& built, const Graph& graph,
                                         const std::vector<Tensor*>& weights, std::vector<std::string>& notes) {
    ModelPlacement p;
    DeviceResolver devices(spec, registry, options, notes);
    XB_RETURN_IF_ERROR(devices.resolve_backends(p.backends));
    XB_RETURN_IF_ERROR(place_weights(spec, devices, built, graph, weights, notes, p));
    XB_RETURN_IF_ERROR(place_nodes(spec, devices, graph, p));
    p.scheduler.n_copies = spec.placement.n_copies;
    p.scheduler.op_offload = spec.placement.op_offload;
    if (options.host_weights.value_or(spec.placement.host_weights) == HostWeights::Pinned) {
        p.host_buffer_device = pinned_host_device(registry, p.backends);
    }
    return p;
}

}  // namespace detail

Result<std::vector<std::unique_ptr<Backend>>> init_backends(const ModelPlacement& placement, const Registry& registry) {
    std::vector<std::unique_ptr<Backend>> out;
    for (const std::string& name : placement.backends) {
        XB_ASSIGN_OR_RETURN(std::unique_ptr<Backend> b, registry.init_by_name(name));
        out.push_back(std::move(b));
    }
    return out;
}

namespace {

Result<Backend*> backend_of_device(const Model& model, std::span<Backend* const> backends, const std::string& device) {
    for (Backend* b : backends) {
        if (b != nullptr && b->device().name() == device) return b;
    }
    return Status(StatusCode::InvalidArgument, model.source + ": weights go to device '" + device +
                                                   "' but no backend of it was given");
}

// The buffer type of the row split's weights, made once per model from its devices' backends.
Result<BufferType*> row_split_type(Model& model, std::span<Backend* const> backends) {
    if (!model.row_split_type) {
        std::vector<Device*> devices;
        for (const std::string& name : model.placement.row_split->devices) {
            XB_ASSIGN_OR_RETURN(Backend * b, backend_of_device(model, backends, name));
            devices.push_back(&b->device());
        }
        model.row_split_type = std::make_unique<RowSplitBufferType>(std::move(devices), model.placement.row_split->ratios);
    }
    return model.row_split_type.get();
}

// The pinned host buffer type of placement.host_buffer_device, for weights on a CPU-type device
// (nullptr: the backend's own buffer type).
Result<BufferType*> host_weights_type(const Model& model, std::span<Backend* const> backends, const Backend& holder) {
    const std::string& host = model.placement.host_buffer_device;
    if (host.empty() || holder.device().type() != DeviceType::CPU) return nullptr;
    for (Backend* b : backends) {
        if (b != nullptr && b->device().name() == host) return b->device().host_buffer_type();
    }
    return Status(StatusCode::InvalidArgument, model.source + ": host weights go to the pinned memory of device '" + host +
                                                   "' but no backend of it was given (placement.host_weights \"pageable\" "
                                                   "keeps them in the CPU's memory)");
}

// Input values are made in host memory before the graph is allocated, and the graph's tensors then
// hold them again on the backend that holds the inputs: the last one, the scheduler's fallback
// (usually the CPU, where both copies are host memory). Checked before any value is made, whatever
// the device: an input of 2^32 floats would otherwise take a minute to fill, then fail, or throw.
Status check_inputs_fit(const Model& model, std::span<Backend* const> backends) {
    uint64_t input_bytes = 0;
    for (const Tensor* t : model.inputs) input_bytes = checked_add(input_bytes, t->nbytes()).value_or(UINT64_MAX);
    if (input_bytes == 0) return Status::ok();
    const Backend* holder = nullptr;
    for (const Backend* b : backends) holder = b != nullptr ? b : holder;
    Status fits;
    if (holder != nullptr && holder->device().type() == DeviceType::CPU) {
        fits = check_device_memory(holder->device(), checked_mul(input_bytes, 2).value_or(UINT64_MAX),
                                   "the inputs (their values, then their tensors)");
    } else {
        if (input_bytes > available_memory_bytes()) {
            fits = Status(StatusCode::OutOfMemory, "the inputs' values need " + bytes_text(static_cast<double>(input_bytes)) +
                                                       " of host memory, " + bytes_text(static_cast<double>(available_memory_bytes())) +
                                                       " is free");
        } else if (holder != nullptr) {
            fits = check_device_memory(holder->device(), input_bytes, "the inputs");
        }
    }
    return fits.is_ok() ? fits : Status(fits.code(), model.source + ": " + fits.message());
}

// The weights whose every use is as a mul_mat's weights (its src[0]), itself and not a view: the
// ones a device's repacked weight type may hold, since only that product reads the layout.
std::set<const Tensor*> matmul_only_weights(const Model& model) {
    std::set<const Tensor*> used_elsewhere;
    std::set<const Tensor*> matmul;
    for (const Tensor* node : model.graph.nodes()) {
        for (int i = 0; i < kMaxSrc; ++i) {
            const Tensor* src = node->src[i];
            if (src == nullptr) continue;
            const Tensor* storage = src->view_src != nullptr ? src->view_src : src;
            if (node->op == Op::MulMat && i == 0 && src->view_src == nullptr) {
                matmul.insert(src);
            } else {
                used_elsewhere.insert(storage);
            }
        }
    }
    std::set<const Tensor*> only;
    for (const Tensor* t : matmul) {
        if (!used_elsewhere.contains(t)) only.insert(t);
    }
    return only;
}

}  // namespace

Status place_and_init(Model& model, std::span<Backend* const> backends) {
    // Weights by device, and apart from them those whose rows the row split shares and those the
    // device keeps repacked (its repacked weight type, the CPU's q4_K in 8-row groups: weights read
    // only by mul_mat).
    struct Key {
        std::string device;
        bool row_split = false;
        bool repacked = false;
        auto operator<=>(const Key&) const = default;
    };
    const std::set<const Tensor*> matmul_only = matmul_only_weights(model);
    std::map<Key, std::vector<Tensor*>> groups;
    std::vector<Key> order;
    for (const WeightPlacement& w : model.placement.weights) {
        Key key{w.device, w.row_split, false};
        if (!w.row_split && matmul_only.contains(w.tensor) && model.placement.host_buffer_device.empty()) {
            Result<Backend*> backend = backend_of_device(model, backends, w.device);
            BufferType* repack = backend.is_ok() ? (*backend)->device().repacked_weight_type() : nullptr;
            key.repacked = repack != nullptr && repack->repacks(*w.tensor);
        }
        if (groups.find(key) == groups.end()) order.push_back(key);
        groups[key].push_back(w.tensor);
    }
    for (const Key& key : order) {
        const std::string& device = key.device;
        const bool rows = key.row_split;
        XB_ASSIGN_OR_RETURN(Backend * backend, backend_of_device(model, backends, device));
        BufferType* type = &backend->default_buffer_type();
        if (rows) {
            XB_ASSIGN_OR_RETURN(type, row_split_type(model, backends));
        } else if (key.repacked) {
            type = backend->device().repacked_weight_type();
        } else {
            XB_ASSIGN_OR_RETURN(BufferType * pinned, host_weights_type(model, backends, *backend));
            if (pinned != nullptr) type = pinned;
        }
        Result<std::unique_ptr<MultiBuffer>> buffer = alloc_tensors(groups[key], *type);
        if (!buffer.is_ok()) {
            return Status(buffer.status().code(), model.source + ": weights on " + (rows ? std::string(type->name()) : device) +
                                                      ": " + buffer.status().message());
        }
        if (!(*buffer)->empty()) {
            (*buffer)->set_usage(BufferUsage::Weights);
            model.weight_buffers.push_back(std::move(buffer).value());
        }
    }
    XB_RETURN_IF_ERROR(check_inputs_fit(model, backends));
    InitFiles files;
    model.input_values.clear();
    for (const TensorInit& ti : model.inits) {
        Tensor& t = *ti.tensor;
        const uint64_t seed = tensor_seed(model.seed, t.name);
        const Buffer* buffer = storage_buffer(t);
        if (!t.is_input() && buffer != nullptr && buffer->is_host() && t.is_contiguous()) {
            // Host memory: written in place, without a copy of a possibly large tensor.
            XB_RETURN_IF_ERROR(init_into(t, ti.init, seed, files, model.source, {static_cast<std::byte*>(t.data), t.nbytes()}));
            continue;
        }
        if (!t.is_input() && ti.init.kind == InitKind::Gguf) {
            // Straight from the file onto the device, a piece at a time: a model's weights never
            // sit in host memory twice.
            constexpr size_t kChunk = size_t{16} << 20;
            XB_RETURN_IF_ERROR(init_in_chunks(t, ti.init, files, model.source, kChunk, [&](uint64_t offset, std::span<const std::byte> bytes) {
                const Status s = tensor_set(t, bytes.data(), static_cast<size_t>(offset), bytes.size());
                return s.is_ok() ? s : Status(s.code(), model.source + ": weight " + quoted_name(t.name) + ": " + s.message());
            }));
            continue;
        }
        XB_ASSIGN_OR_RETURN(std::vector<std::byte> values, init_values(t, ti.init, seed, files, model.source));
        if (t.is_input()) {
            model.input_values.emplace_back(&t, std::move(values));
            continue;
        }
        const Status s = tensor_set(t, values.data(), 0, values.size());
        if (!s.is_ok()) return Status(s.code(), model.source + ": weight " + quoted_name(t.name) + ": " + s.message());
    }
    return Status::ok();
}

Result<std::vector<BufferType*>> scheduler_buffer_types(const Model& model, std::span<Backend* const> backends) {
    std::vector<BufferType*> out;
    for (Backend* b : backends) {
        if (b == nullptr) return Status(StatusCode::InvalidArgument, model.source + ": a backend is null");
        XB_ASSIGN_OR_RETURN(BufferType * pinned, host_weights_type(model, backends, *b));
        out.push_back(pinned);
    }
    return out;
}

Status assign_nodes(const Model& model, Scheduler& sched) {
    for (const NodePlacement& n : model.placement.nodes) {
        Backend* backend = nullptr;
        for (int i = 0; i < sched.n_backends(); ++i) {
            if (sched.backend(i).device().name() == n.device) backend = &sched.backend(i);
        }
        if (backend == nullptr) {
            return Status(StatusCode::InvalidArgument, model.source + ": node " + quoted_name(n.node->name) + " goes to device '" + n.device +
                                                           "', which is not one of the scheduler's backends");
        }
        XB_RETURN_IF_ERROR(sched.set_tensor_backend(*n.node, *backend));
    }
    return Status::ok();
}

}  // namespace xb::config
