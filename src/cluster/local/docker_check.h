#pragma once
// loom.docker.* on the local backend. The local backend runs every task as a plain process on
// this machine: it has no `docker run` for tasks (their src dir, venv, reserved ports, GPUs,
// cgroup and process-group control would all have to cross into the container). So a job that
// asks for Docker images is refused at submit (exit 2, nothing started), whether or not a
// Docker daemon answers here; the message says which, so that the user knows what to change.
// YARN's Docker runtime is the way to run tasks in images (cluster/yarn/docker_runtime.h).

#include <optional>
#include <string>

#include "core/config/config.h"
#include "core/status.h"

namespace loom::cluster::local {

// Where a Docker daemon would answer: $DOCKER_HOST when it is unix://PATH, else
// /var/run/docker.sock. nullopt when DOCKER_HOST names something else (tcp://, ssh://).
std::optional<std::string> DockerSocketPath();

// Whether a Docker daemon answers GET /_ping with "OK" on the unix socket `path` within
// `timeout_ms`.
bool DockerDaemonAnswers(const std::string& path, int timeout_ms = 1000);

// InvalidArgument naming loom.docker.enabled as the user wrote it (tony.docker.enabled, say)
// when `conf` turns Docker on; Ok otherwise.
Status RefuseDockerOnLocal(const config::Config& conf);

}  // namespace loom::cluster::local
