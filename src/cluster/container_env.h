#pragma once
// What a container takes from the environment Loom runs in, on every backend: the names a YARN
// NodeManager passes on from its own environment (yarn.nodemanager.env-whitelist: PATH, LANG,
// TZ), the rest of the locale (LC_*), and Loom's fault-injection hooks (LOOM_TEST_*,
// core/test_hooks.h). Nothing else of the submitter's environment reaches a task, so that a job
// that runs on one backend runs on the others: what a job needs it forwards (--shell_env,
// --container_env, MLFLOW_*: core/forwarded_env.h).

#include <string_view>

namespace loom::cluster {

inline bool PassesIntoContainers(std::string_view name) {
  return name == "PATH" || name == "LANG" || name == "TZ" || name.rfind("LC_", 0) == 0 ||
         name.rfind("LOOM_TEST_", 0) == 0;
}

}  // namespace loom::cluster
