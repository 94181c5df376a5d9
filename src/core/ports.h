#pragma once
// The order in which Loom tries the ports of loom.task.port-range, for every port it holds (an
// executor's task port, the AM's Horovod rendezvous store).

#include <utility>
#include <vector>

namespace loom {

// The kernel's ephemeral port range (net.ipv4.ip_local_port_range); {32768, 60999} if unreadable.
std::pair<int, int> EphemeralPortRange();

// The ports of [low, high] outside the ephemeral range, so that no outgoing connection can have
// taken one, in random order, so that concurrent binders on one host rarely collide; every port
// of the range when it lies inside the ephemeral one (still the range the user opened).
std::vector<int> PortCandidates(int low, int high);

}  // namespace loom
