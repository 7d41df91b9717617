#include "session.hpp"

#include <filesystem>

#include "builtin/builtin_backends.hpp"
#include "builtin/environment.hpp"
#include "config/config_parse.hpp"
#include "config/placement.hpp"
#include "config/token_file.hpp"

namespace xb::tools {

std::vector<std::string> Session::backend_names() const {
    std::vector<std::string> names;
    for (const auto& b : backends) names.emplace_back(b->name());
    return names;
}

int scheduler_debug_level() {
    // run_tool has refused a bad value (check_environment); 0 for one here all the same.
    const Result<std::optional<int>> level = environment_integer("XB_SCHED_DEBUG", 0, 2, "0");
    return level.is_ok() ? level.value().value_or(0) : 0;
}

Result<config::BuildOptions> build_options(const CommonOptions& o) {
    config::BuildOptions build;
    build.backends = o.backends;
    build.seed = o.seed;
    build.outputs = o.outputs;
    build.default_outputs = o.default_outputs;
    build.kv_cells = o.kv_cells;
    if (!o.tokens.empty()) {
        // A list of ids unless a file of that name exists ("7" is a token before it is a file name).
        const bool is_list = o.tokens.find_first_not_of("0123456789,") == std::string::npos &&
                             !std::filesystem::exists(o.tokens);
        auto ids = is_list ? config::parse_token_list(o.tokens) : config::read_token_file(o.tokens);
        if (!ids.is_ok()) return Status(ids.status().code(), "--tokens " + ids.status().message());
        build.tokens = std::move(ids).value();
    }
    if (!o.host_weights.empty()) {
        build.host_weights = o.host_weights == "pageable" ? config::HostWeights::Pageable : config::HostWeights::Pinned;
    }
    for (const std::string& m : o.device_map) {
        const size_t eq = m.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == m.size()) {
            return Status(StatusCode::InvalidArgument, "--map " + m + ": expected FROM=TO, e.g. CUDA0=SIM0");
        }
        build.device_map.emplace_back(m.substr(0, eq), m.substr(eq + 1));
    }
    return build;
}

Result<std::unique_ptr<Session>> open_session(const CommonOptions& o, const SessionOptions& session) {
    XB_RETURN_IF_ERROR(apply_threads(o));
    XB_ASSIGN_OR_RETURN(config::ConfigSpec spec, config::load_config(o.config));
    if (session.edit) session.edit(spec);
    XB_ASSIGN_OR_RETURN(config::BuildOptions build, build_options(o));
    auto s = std::make_unique<Session>();
    XB_ASSIGN_OR_RETURN(s->model, config::build_model(spec, global_registry(), build));
    name_nodes(s->model.graph);
    // Before the backends are made: each copies its device's settings when it is.
    XB_ASSIGN_OR_RETURN(s->faults, o.params.apply_faults(global_registry(), s->model.graph));
    XB_ASSIGN_OR_RETURN(s->backends, config::init_backends(s->model.placement, global_registry()));
    std::vector<Backend*> raw;
    for (const auto& b : s->backends) raw.push_back(b.get());
    XB_RETURN_IF_ERROR(config::place_and_init(s->model, raw));
    SchedulerOptions sopts = s->model.placement.scheduler;
    sopts.profile = session.profile;
    sopts.debug = scheduler_debug_level();
    XB_ASSIGN_OR_RETURN(std::vector<BufferType*> bufts, config::scheduler_buffer_types(s->model, raw));
    XB_ASSIGN_OR_RETURN(s->sched, Scheduler::create(raw, std::move(bufts), sopts));
    XB_RETURN_IF_ERROR(config::assign_nodes(s->model, *s->sched));
    if (session.allocate) {
        XB_RETURN_IF_ERROR(s->sched->alloc_graph(s->model.graph));
        XB_RETURN_IF_ERROR(s->model.set_inputs());
    }
    return s;
}

}  // namespace xb::tools
