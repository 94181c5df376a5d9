#include "cluster/yarn/docker_runtime.h"

#include <gmock/gmock.h>

#include "core/testing.h"

namespace loom::cluster::yarn {
namespace {

using ::testing::HasSubstr;

TEST(DockerRuntime, LaunchEnvNamesTheRuntimeTheImageAndTheMounts) {
  EXPECT_EQ(DockerLaunchEnv("repo/img:1", ""),
            (std::map<std::string, std::string>{{"YARN_CONTAINER_RUNTIME_TYPE", "docker"},
                                                {"YARN_CONTAINER_RUNTIME_DOCKER_IMAGE", "repo/img:1"},
                                                {"YARN_CONTAINER_RUNTIME_DOCKER_CONTAINER_NETWORK", "host"}}));
  EXPECT_EQ(DockerLaunchEnv("img", "/data:/data:ro").at("YARN_CONTAINER_RUNTIME_DOCKER_MOUNTS"), "/data:/data:ro");
}

// Names Hadoop 3.3.6's DOCKER_IMAGE_PATTERN takes and refuses.
TEST(DockerRuntime, ImageNamesAsTheNodeManagerJudgesThem) {
  for (const char* ok : {"python", "python:3.11-slim", "library/ubuntu:22.04", "registry.example.com:5000/ml/torch:2.1",
                         "nvcr.io/nvidia/pytorch:23.10-py3", "a_b/c-d.e"}) {
    EXPECT_TRUE(IsValidDockerImage(ok)) << ok;
  }
  for (const char* bad : {"", "Python", "repo/Image:1", "img@sha256:0123", "img:", "img:tag:more", "has space"}) {
    EXPECT_FALSE(IsValidDockerImage(bad)) << bad;
  }
}

// Lists Hadoop 3.3.6's USER_MOUNT_PATTERN (and its count of matches against commas) takes.
TEST(DockerRuntime, MountListsAsTheNodeManagerParsesThem) {
  for (const char* ok : {"/data:/data", "/data:/data:ro", "/a:/b:rw,/c:/d:ro", "/a:/b:rw+rshared", "/a:/b:rprivate",
                         "venv:/venv:ro"}) {
    SCOPED_TRACE(ok);
    EXPECT_OK(CheckDockerMounts(ok));
  }
  for (const char* bad : {"/data", "/a:/b:rx", "/a:/b,", "/a:/b,,/c:/d", ":/b", "/a:/b:ro:extra", "/a:/b:ro+"}) {
    SCOPED_TRACE(bad);
    EXPECT_STATUS(CheckDockerMounts(bad), kInvalidArgument, HasSubstr("loom.docker.containers.mount"));
  }
}

JobSpec DockerSpec() {
  JobSpec spec;
  spec.docker_enabled = true;
  spec.types.push_back({.name = "worker", .instances = 2, .docker_image = "repo/train:1"});
  spec.types.push_back({.name = "ps", .instances = 1, .docker_image = "repo/ps:1"});
  return spec;
}

TEST(DockerRuntime, SpecNeedsAValidImageForEveryType) {
  EXPECT_OK(CheckDockerSpec(DockerSpec()));
  JobSpec off = DockerSpec();
  off.docker_enabled = false;
  off.types[0].docker_image = "NOT VALID";
  EXPECT_OK(CheckDockerSpec(off));  // Docker off: the images are not used

  JobSpec missing = DockerSpec();
  missing.types[1].docker_image.clear();
  EXPECT_STATUS(CheckDockerSpec(missing), kInvalidArgument,
                HasSubstr("task type 'ps' has no image: set loom.docker.containers.image or loom.docker.ps.image"));
  JobSpec bad = DockerSpec();
  bad.types[0].docker_image = "Repo/Train";
  EXPECT_STATUS(CheckDockerSpec(bad), kInvalidArgument, HasSubstr("'Repo/Train' of task type 'worker'"));
  JobSpec mounts = DockerSpec();
  mounts.docker_mounts = "/data";
  EXPECT_STATUS(CheckDockerSpec(mounts), kInvalidArgument, HasSubstr("loom.docker.containers.mount: '/data'"));
  // The keys as the user wrote them.
  auto tony = [](const std::string& k) { return "tony." + k.substr(5); };
  EXPECT_STATUS(CheckDockerSpec(mounts, tony), kInvalidArgument, HasSubstr("tony.docker.containers.mount: '/data'"));
  EXPECT_STATUS(CheckDockerSpec(missing, tony), kInvalidArgument, HasSubstr("tony.docker.enabled=true"));
}

}  // namespace
}  // namespace loom::cluster::yarn
