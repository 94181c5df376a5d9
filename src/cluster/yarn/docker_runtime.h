#pragma once
// YARN's Docker runtime, as a client asks for it: a container runs in a Docker image when its
// launch context's environment says so (Hadoop 3.3's DockerLinuxContainerRuntime reads these
// variables; TonY's HadoopCompatibleAdapter.getContainerEnvForDocker sets the same three). The
// NodeManager does the rest, and only if the cluster is set up for it: LinuxContainerExecutor
// with `docker` in yarn.nodemanager.runtime.linux.allowed-runtimes. A NodeManager with the
// DefaultContainerExecutor ignores the variables and runs the container as a plain process.
//
// Loom asks for it on every task container, never on the AM's: the AM runs only Loom's own
// binary (no user code: TonY's AM needed the image for its single-node mode, which Loom does not
// have), so it needs nothing from the image and starts without pulling it.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/job_spec.h"
#include "core/status.h"

namespace loom::cluster::yarn {

// ContainerRuntimeConstants.ENV_CONTAINER_TYPE: "docker" selects the Docker runtime.
inline constexpr char kRuntimeTypeEnv[] = "YARN_CONTAINER_RUNTIME_TYPE";
// DockerLinuxContainerRuntime.ENV_DOCKER_CONTAINER_IMAGE.
inline constexpr char kDockerImageEnv[] = "YARN_CONTAINER_RUNTIME_DOCKER_IMAGE";
// DockerLinuxContainerRuntime.ENV_DOCKER_CONTAINER_MOUNTS: "src:dst[:mode],...".
inline constexpr char kDockerMountsEnv[] = "YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS";
// DockerLinuxContainerRuntime.ENV_DOCKER_CONTAINER_NETWORK.
inline constexpr char kDockerNetworkEnv[] = "YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK";

// The launch environment that runs a container in `image`, with the user's `mounts` ("" for
// none), exactly as given, on the host's network: tasks reach each other at their node's
// address and the ports the executor reserved there (the cluster spec), which a bridge network
// would hide. `host` is Hadoop's default network and in its default allowed list; asking for it
// explicitly keeps a cluster whose default is `bridge` from breaking the job silently.
std::map<std::string, std::string> DockerLaunchEnv(const std::string& image, const std::string& mounts);

// Whether the NodeManager would take `image` (DockerLinuxContainerRuntime.DOCKER_IMAGE_PATTERN:
// [registry[:port]/]name[:tag], the name in lower case). It checks at container launch; Loom
// checks at submit so that a typo is the user's error (exit 2), not a failed job.
bool IsValidDockerImage(const std::string& image);

// Parses a mount list as the NodeManager does (USER_MOUNT_PATTERN, every comma-separated entry
// `source:destination[:mode]`, mode ro, rw, or a bind propagation such as rw+rshared).
// InvalidArgument naming `key` and the first malformed entry.
Status CheckDockerMounts(const std::string& mounts, const std::string& key = "loom.docker.containers.mount");

// How the user wrote a key (a tony.* alias, say), from its canonical loom.* name.
using KeyAsWritten = std::function<std::string(const std::string& canonical_key)>;

// The whole Docker part of a job on YARN: nothing when Docker is off; else every task type has
// a valid image and the mounts parse. InvalidArgument naming the key to fix as the user wrote
// it (`as_written`; unset: the loom.* name).
Status CheckDockerSpec(const JobSpec& spec, const KeyAsWritten& as_written = {});

}  // namespace loom::cluster::yarn
