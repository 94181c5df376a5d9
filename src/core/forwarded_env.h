#pragma once
// The variables of the submitting environment that reach every task's user process on every
// backend (a YARN container does not inherit the client's environment): MLflow's MLFLOW_*, which
// name its tracking server, experiment and credentials.
//
// Those that hold a credential (MLFLOW_TRACKING_TOKEN, MLFLOW_TRACKING_PASSWORD, ...) must not
// outlive the job: they are never written to the job's config.xml (kept in the job's history
// and, on YARN, in its staging dir after the end). On YARN they ride in the containers'
// credentials, as the job secret does, under kSecretEnvAliasPrefix + name; locally the AM
// hands them to its executors (cluster/local/local_am_side.h: LocalContainerEnv).

#include <map>
#include <string>
#include <string_view>

namespace loom {

inline constexpr char kSecretEnvAliasPrefix[] = "loom.env.";

// MLFLOW_*.
bool IsForwardedToTasks(std::string_view name);
// A name that says it holds a credential: *TOKEN*, *PASSWORD*, *SECRET*, *_KEY.
bool HoldsCredential(std::string_view name);
// The forwarded variables of `env` that hold a credential.
std::map<std::string, std::string> ForwardedCredentials(const std::map<std::string, std::string>& env);

}  // namespace loom
