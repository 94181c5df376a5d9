#include "core/ports.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>

namespace loom {

std::pair<int, int> EphemeralPortRange() {
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  int lo = 0, hi = 0;
  if (f >> lo >> hi && lo > 0 && hi >= lo) return {lo, hi};
  return {32768, 60999};
}

std::vector<int> PortCandidates(int low, int high) {
  auto [eph_lo, eph_hi] = EphemeralPortRange();
  std::vector<int> candidates;
  for (int p = low; p <= high; ++p) {
    if (p < eph_lo || p > eph_hi) candidates.push_back(p);
  }
  if (candidates.empty()) {
    for (int p = low; p <= high; ++p) candidates.push_back(p);
  }
  uint64_t seed = 0;
  (void)!::getrandom(&seed, sizeof(seed), 0);
  std::mt19937_64 rng(seed ^ static_cast<uint64_t>(::getpid()));
  std::shuffle(candidates.begin(), candidates.end(), rng);
  return candidates;
}

}  // namespace loom
