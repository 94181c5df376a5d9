#include "core/forwarded_env.h"

namespace loom {

bool IsForwardedToTasks(std::string_view name) { return name.rfind("MLFLOW_", 0) == 0; }

bool HoldsCredential(std::string_view name) {
  for (std::string_view word : {"TOKEN", "PASSWORD", "SECRET"}) {
    if (name.find(word) != std::string_view::npos) return true;
  }
  return name.size() > 4 && name.substr(name.size() - 4) == "_KEY";
}

std::map<std::string, std::string> ForwardedCredentials(const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : env) {
    if (IsForwardedToTasks(k) && HoldsCredential(k)) out[k] = v;
  }
  return out;
}

}  // namespace loom
