// Putting a built model on devices: the backends its placement names, its weights allocated on
// their devices and initialised, its input values prepared, and the per-node overrides given to
// a scheduler.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/registry.hpp"
#include "config/model.hpp"
#include "core/status.hpp"
#include "sched/scheduler.hpp"

namespace xb::config {

// One backend per device of placement.backends, in the same (priority) order, from `registry` (the
// one the model was built against).
Result<std::vector<std::unique_ptr<Backend>>> init_backends(const ModelPlacement& placement, const Registry& registry);

// Allocates each weight in a weights buffer of the backend of its device (backends are matched to
// devices by name; every device that holds weights needs one; weights of a CPU-type device go to
// the pinned host buffer type of placement.host_buffer_device, whose backend must be given too), writes every weight's initial
// values and computes the inputs' values (model.input_values; set them with Model::set_inputs
// once the graph is allocated).
Status place_and_init(Model& model, std::span<Backend* const> backends);

// The buffer type of each backend's compute buffer for Scheduler::create, in the same order: the
// pinned host buffer type of placement.host_buffer_device for CPU-type backends (as llama.cpp
// gives the CPU the first GPU's host memory, so activations cross at the link's speed too),
// nullptr (the backend's default) for the rest.
Result<std::vector<BufferType*>> scheduler_buffer_types(const Model& model, std::span<Backend* const> backends);

// Pins the nodes of placement.nodes to their devices' backends in `sched` (again after every
// Scheduler::reset, which forgets them).
Status assign_nodes(const Model& model, Scheduler& sched);

// The message for a device that is not present: the devices that are, and how to run the config
// on them (--backends) or map the device onto one (--map).
std::string missing_device_message(const std::string& device, const Registry& registry);

}  // namespace xb::config
