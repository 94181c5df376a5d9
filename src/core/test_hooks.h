#pragma once
// Fault-injection hooks, like TonY's TEST_* variables: compiled into the product, inert unless
// the variable is set. Each value is "N" (every task) or "TYPE:INDEX=N,..." (those tasks only).
//
//   LOOM_TEST_DELAY_REGISTRATION_MS  executor waits N ms before registering
//   LOOM_TEST_UNREACHABLE_AM         executor registers where no AM listens (value: N, ignored)
//   LOOM_TEST_DROP_HEARTBEATS        executor sends no heartbeats (value: N, ignored)
//   LOOM_TEST_CRASH_EXECUTOR_MS      executor dies (exit 99) N ms after starting the user process
//   LOOM_TEST_AM_CRASH_MS            the AM aborts N ms after it started (task part ignored)

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "core/strings.h"

namespace loom {

// The hook's value for `task` ("worker:1"), or nullopt when the hook is not set for it.
inline std::optional<int64_t> TestHook(const std::map<std::string, std::string>& env, const char* name,
                                       const std::string& task) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  for (const std::string& part : Split(it->second, ',')) {
    size_t eq = part.find('=');
    if (eq == std::string::npos) {
      if (auto v = ParseInt(part); v.ok()) return *v;
      continue;
    }
    if (Trim(part.substr(0, eq)) != task) continue;
    if (auto v = ParseInt(part.substr(eq + 1)); v.ok()) return *v;
  }
  return std::nullopt;
}

}  // namespace loom
