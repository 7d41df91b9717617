// Helpers of the config tests: where the example configs and test data are, and running a
// config's model on the CPU backend or through the scheduler.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "alloc/graph_allocator.hpp"
#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "config/config_parse.hpp"
#include "config/model.hpp"
#include "config/placement.hpp"
#include "sched/scheduler.hpp"

namespace xb::config::testing {

// The repository the tests read their data from: $XB_SOURCE_DIR when set (a build carried to another
// machine, where the tree lies elsewhere: scripts/gpu-check sets it), else the folder built from.
inline std::filesystem::path repo_root() {
    if (const char* moved = std::getenv("XB_SOURCE_DIR"); moved != nullptr && *moved != '\0') return moved;
    return std::filesystem::path(XB_SOURCE_DIR);
}
inline std::string config_path(const std::string& name) { return (repo_root() / "configs" / name).string(); }
inline std::string data_path(const std::string& name) { return (repo_root() / "tests" / "data" / name).string(); }

// A model with its backends and the allocator of its graph, ready to compute.
struct Placed {
    Model model;
    std::vector<std::unique_ptr<Backend>> backends;
    std::unique_ptr<GraphAllocator> galloc;
    std::unique_ptr<Scheduler> sched;
};

inline Result<Model> load_and_build(const std::string& path, const BuildOptions& options = {}) {
    XB_ASSIGN_OR_RETURN(ConfigSpec spec, load_config(path));
    return build_model(spec, global_registry(), options);
}

inline std::vector<Backend*> pointers(const std::vector<std::unique_ptr<Backend>>& backends) {
    std::vector<Backend*> out;
    for (const auto& b : backends) out.push_back(b.get());
    return out;
}

// Places the model on its placement's first backend alone (the CPU unless the test chose another)
// and computes it once, without the scheduler.
inline Result<std::unique_ptr<Placed>> compute_alone(Model model, const Registry& registry = global_registry()) {
    auto p = std::make_unique<Placed>();
    p->model = std::move(model);
    XB_ASSIGN_OR_RETURN(p->backends, init_backends(p->model.placement, registry));
    const std::vector<Backend*> ptrs = pointers(p->backends);
    XB_RETURN_IF_ERROR(place_and_init(p->model, ptrs));
    p->galloc = std::make_unique<GraphAllocator>(ptrs.front()->default_buffer_type());
    XB_RETURN_IF_ERROR(p->galloc->alloc_graph(p->model.graph));
    XB_RETURN_IF_ERROR(p->model.set_inputs());
    XB_RETURN_IF_ERROR(ptrs.front()->graph_compute(p->model.graph));
    return p;
}

// Places the model on its placement's backends and computes it through the scheduler (the
// compute buffers of scheduler_buffer_types, as the tools make them; `profile`: profiling mode).
inline Result<std::unique_ptr<Placed>> compute_scheduled(Model model, const Registry& registry = global_registry(),
                                                         bool profile = false) {
    auto p = std::make_unique<Placed>();
    p->model = std::move(model);
    XB_ASSIGN_OR_RETURN(p->backends, init_backends(p->model.placement, registry));
    const std::vector<Backend*> ptrs = pointers(p->backends);
    XB_RETURN_IF_ERROR(place_and_init(p->model, ptrs));
    XB_ASSIGN_OR_RETURN(std::vector<BufferType*> bufts, scheduler_buffer_types(p->model, ptrs));
    SchedulerOptions options = p->model.placement.scheduler;
    options.profile = profile;
    XB_ASSIGN_OR_RETURN(p->sched, Scheduler::create(ptrs, std::move(bufts), options));
    XB_RETURN_IF_ERROR(assign_nodes(p->model, *p->sched));
    XB_RETURN_IF_ERROR(p->sched->alloc_graph(p->model.graph));
    XB_RETURN_IF_ERROR(p->model.set_inputs());
    XB_RETURN_IF_ERROR(p->sched->graph_compute(p->model.graph));
    return p;
}

// Every output's values are finite.
inline void expect_finite_outputs(const Model& m) {
    ASSERT_FALSE(m.outputs.empty());
    for (const Tensor* o : m.outputs) {
        auto values = tensor_get_f32(*o);
        ASSERT_TRUE(values.is_ok()) << o->name << ": " << values.status().to_string();
        size_t bad = 0;
        for (float v : *values) bad += std::isfinite(v) ? 0 : 1;
        EXPECT_EQ(bad, 0u) << "output '" << o->name << "' has " << bad << " non-finite values";
    }
}

}  // namespace xb::config::testing
