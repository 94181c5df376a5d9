#pragma once
// What a YARN job ships through HDFS, and how a container receives it. The client uploads the
// files under /user/<user>/.loom/<app-id>/ and writes a manifest (loom-staging.json, itself
// a LocalResource of the AM) naming each file with the exact length and modification time
// HDFS reported, so the AM can hand the same files to every executor container.

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cluster/yarn/hdfs/hadoop_conf.h"
#include "cluster/yarn/proto/yarn.pb.h"
#include "core/job_spec.h"
#include "core/status.h"

namespace loom::cluster::yarn {

// Names of the resources in a container's working directory.
inline constexpr char kLoomBinaryResource[] = "loom";
inline constexpr char kSecretResource[] = "loom.secret";
inline constexpr char kSrcResource[] = "loom-src";  // an archive: the --src_dir, unpacked
inline constexpr char kVenvResource[] = "venv";     // an archive: the --python_venv, unpacked
inline constexpr char kConfigResource[] = "config.xml";
inline constexpr char kJobJsonResource[] = "job.json";
inline constexpr char kManifestResource[] = "loom-staging.json";

struct StagedFile {
  std::string path;  // absolute HDFS path
  int64_t size = 0;
  int64_t mtime = 0;  // HDFS modificationTime, ms: the NodeManager insists on it
  bool archive = false;
};

struct StagingManifest {
  std::string fs_scheme, fs_host;
  int fs_port = -1;
  std::string webhdfs;    // http://nn:9870
  std::string user;
  std::string dir;        // /user/<user>/.loom/<app-id>
  std::string scheduler;  // host:port of the RM scheduler (not in a container's environment)
  std::string application_id;
  std::map<std::string, StagedFile> files;  // by resource name

  nlohmann::json ToJson() const;
  static Result<StagingManifest> FromJson(const std::string& text);
  // The LocalResource for one staged file (visibility APPLICATION).
  hadoop::yarn::LocalResourceProto ToLocalResource(const StagedFile& f) const;
  // Every file but the AM-only ones (manifest, job.json, config.xml): what an executor gets.
  std::map<std::string, hadoop::yarn::LocalResourceProto> ExecutorResources() const;
};

// A task's resources as YARN asks for them: memory and vcores, GPUs as yarn.io/gpu (which the
// RM drops silently unless yarn.resource-types lists it).
hadoop::yarn::ResourceProto ToYarnResource(const Resources& r);
int64_t GpusOf(const hadoop::yarn::ResourceProto& r);

}  // namespace loom::cluster::yarn
