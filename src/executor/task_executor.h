#pragma once
// TaskExecutor: the small native agent in each container (TonY runs a JVM here). It holds the
// task's port, registers with the AM, waits for the cluster spec, starts the user process with
// its framework environment, heartbeats, enforces the execution timeout and (where no cgroup
// does) the memory limit, notices the user process's exit at once (SIGCHLD via signalfd), and
// reports it with the last stderr lines and the peak RSS. If the AM is unreachable for
// max-missed-heartbeats, or SIGTERM arrives, it stops the user's whole process group and exits:
// it never leaves an orphan behind.
//
// Everything it needs comes from its environment, set by the AM and the backend: the contract
// is control::ExecutorEnv (control/executor_env.h).

#include <map>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/status.h"

namespace loom::executor {

// Exit codes of the executor itself when no user process ran.
inline constexpr int kExitConfigError = 2;
inline constexpr int kExitAmUnreachable = 70;

// Runs the executor; returns the process exit code (the user process's, in shell convention).
// `secret`: the job secret when the caller already holds it (YARN: read from the container's
// credentials, so that it never lies in a file user code could read); without it, the executor
// reads the file LOOM_SECRET_FILE names (the local backend's, shared by the job: never removed).
// `clock`: what its deadlines and beats (registration, supervision, heartbeats) run on.
int RunTaskExecutor(const std::map<std::string, std::string>& env, std::optional<std::string> secret = std::nullopt,
                    Clock& clock = Clock::Real());

}  // namespace loom::executor
