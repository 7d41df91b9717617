#include "sim/sim_backend.hpp"
namespace xb::sim {
void register_sim_backend(Registry& registry) { (void)registry; }
}  // namespace xb::sim
