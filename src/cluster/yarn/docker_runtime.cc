#include "cluster/yarn/docker_runtime.h"

#include <regex>

#include "core/strings.h"

namespace loom::cluster::yarn {

std::map<std::string, std::string> DockerLaunchEnv(const std::string& image, const std::string& mounts) {
  std::map<std::string, std::string> env = {
      {kRuntimeTypeEnv, "docker"}, {kDockerImageEnv, image}, {kDockerNetworkEnv, "host"}};
  if (!mounts.empty()) env[kDockerMountsEnv] = mounts;
  return env;
}

bool IsValidDockerImage(const std::string& image) {
  // Hadoop 3.3.6's DOCKER_IMAGE_PATTERN, verbatim.
  static const std::regex kImage(R"(^(([a-zA-Z0-9.-]+)(:\d+)?/)?([a-z0-9_./-]+)(:[\w.-]+)?$)");
  return std::regex_match(image, kImage);
}

Status CheckDockerMounts(const std::string& mounts, const std::string& key) {
  // One entry of Hadoop 3.3.6's USER_MOUNT_PATTERN. The NodeManager also counts its matches
  // against the commas, so an empty entry (",," or a trailing comma) fails there too.
  static const std::regex kMount(R"(^([^:\x00]+):([^:\x00]+)(:(r[ow]|(r[ow][+])?(r?shared|r?slave|r?private)))?$)");
  for (const std::string& entry : Split(mounts, ',', /*skip_empty=*/false)) {
    if (!std::regex_match(entry, kMount)) {
      return Status::InvalidArgument(key + ": '" + entry + "' in '" + mounts +
                                     "' is not source:destination[:mode] (mode ro, rw, or a bind propagation such "
                                     "as rw+rshared), as YARN's Docker runtime takes it");
    }
  }
  return Status::Ok();
}

Status CheckDockerSpec(const JobSpec& spec, const KeyAsWritten& as_written) {
  if (!spec.docker_enabled) return Status::Ok();
  auto key = [&](const std::string& k) { return as_written ? as_written(k) : k; };
  for (const TaskTypeSpec& t : spec.types) {
    std::string type_key = key("loom.docker." + t.name + ".image");
    if (t.docker_image.empty()) {
      return Status::InvalidArgument(key("loom.docker.enabled") + "=true, but task type '" + t.name +
                                     "' has no image: set " + key("loom.docker.containers.image") + " or " + type_key);
    }
    if (!IsValidDockerImage(t.docker_image)) {
      return Status::InvalidArgument("Docker image '" + t.docker_image + "' of task type '" + t.name +
                                     "' (" + type_key + " or " + key("loom.docker.containers.image") +
                                     ") is not a name YARN's Docker runtime accepts ([registry[:port]/]name[:tag], "
                                     "the name in lower case)");
    }
  }
  if (!spec.docker_mounts.empty()) return CheckDockerMounts(spec.docker_mounts, key("loom.docker.containers.mount"));
  return Status::Ok();
}

}  // namespace loom::cluster::yarn
