#pragma once
// What a YARN job ships through HDFS, and how a container receives it. The client uploads the
// job's files under /user/<user>/.loom/<app-id>/ with a manifest (loom-staging.json, itself a
// LocalResource of the AM: where HDFS and the RM are, the nodes, the Docker images), and names
// each file with the exact length and modification time HDFS reported in the AM's environment
// (kStagedFilesEnv), so the AM can hand the same files to every executor container.
//
// The `loom` binary is the exception: it is shared by every job of the same build, in
// /user/<user>/.loom/cache/loom-<SHA-256 prefix>, uploaded once and localized PUBLIC or PRIVATE
// so that each NodeManager downloads it once, not once per application (README §13 fact 6).
//
// Archives are tar.gz: the NodeManager unpacks a zip ignoring its symlinks (a venv's
// bin/python becomes a 16-byte text file, README §13 fact 1) but a tar.gz with the system tar.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/job_spec.h"
#include "core/status.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/hdfs/webhdfs.h"
#include "hadoop/proto/yarn.pb.h"
#include "hadoop/wire/credentials.h"

namespace loom::cluster::yarn {

// Names of the resources in a container's working directory.
inline constexpr char kLoomBinaryResource[] = "loom";
inline constexpr char kSrcResource[] = "loom-src";  // an archive: the --src_dir, unpacked
// The --python_venv: a directory (an unpacked archive), or the .pex file itself.
inline constexpr char kVenvResource[] = "venv";
inline constexpr char kConfigResource[] = "config.xml";
inline constexpr char kJobJsonResource[] = "job.json";
inline constexpr char kManifestResource[] = "loom-staging.json";
// In the AM's launch environment: the staged files (EncodeStagedFiles). The manifest
// is uploaded beside them (job_stager.h), so it cannot name their lengths and times itself.
inline constexpr char kStagedFilesEnv[] = "LOOM_STAGED_FILES";
// The job secret never goes to HDFS: it rides in each container's credentials
// (HADOOP_TOKEN_FILE_LOCATION) as the secret key of this alias.
inline constexpr char kSecretCredentialAlias[] = "loom.job.secret";

// In a task container, user code's $HADOOP_TOKEN_FILE_LOCATION: this file in the executor's
// working dir, not the container's own credentials file (which holds Loom's secret keys): the
// executor reads that one, writes this one, and removes that one before any user process
// starts (`loom executor`, cli/role_commands.cc); the job secret stays in its memory only.
inline constexpr char kUserTokenFile[] = ".loom.hdfs-tokens";
// Writes `path` (mode 0600, HDTS format 0): the tokens of `container` (the HDFS delegation
// tokens the AM passed on) and none of its secret keys (the job secret, the forwarded
// credentials), also when there are no tokens, so that user code never needs the container's
// file (which the caller then removes); then points (*env)["HADOOP_TOKEN_FILE_LOCATION"] at
// it for the user's processes (Hadoop clients such as `hdfs dfs` or pyarrow read it; K3:
// containers have tokens only).
Status HandTokensToUserCode(const hadoop::Credentials& container, const std::string& path,
                            std::map<std::string, std::string>* env);

// Names of the job's files in its staging dir. CleanStaging deletes exactly these.
inline constexpr char kSrcArchiveFile[] = "src.tar.gz";
inline constexpr const char* kVenvFiles[] = {"venv.tar.gz", "venv.tgz", "venv.pex"};

struct StagedFile {
  std::string path;  // absolute HDFS path
  int64_t size = 0;
  int64_t mtime = 0;  // HDFS modificationTime, ms: the NodeManager insists on it
  bool archive = false;
  // APPLICATION: localized for this application only. PRIVATE / PUBLIC: kept in the
  // NodeManager's user / public cache and reused by later applications.
  ::hadoop::yarn::LocalResourceVisibilityProto visibility = ::hadoop::yarn::APPLICATION;
};

// A NodeManager as getClusterNodes reported it at submit time.
struct ManifestNode {
  std::string host;  // NodeId host: the resource_name of a node-local ask
  int port = 0;
  std::string rack;  // e.g. "/default-rack"
  int64_t memory_mb = 0, used_memory_mb = 0;
  int vcores = 0, used_vcores = 0;
  int64_t gpus = 0, used_gpus = 0;
};
// The RUNNING nodes of getClusterNodes' answer.
std::vector<ManifestNode> ManifestNodes(const std::vector<::hadoop::yarn::NodeReportProto>& reports);

// Where a user's jobs are staged in HDFS: /user/<user>/.loom (jobs in <app-id>/, the shared
// binary in cache/).
std::string StagingRoot(const std::string& user);

struct StagingManifest {
  std::string fs_scheme, fs_host;
  int fs_port = -1;
  std::string webhdfs;    // http://nn:9870
  std::string user;
  std::string dir;        // /user/<user>/.loom/<app-id>
  std::string scheduler;  // host:port of the RM scheduler (not in a container's environment)
  // RM HA: `scheduler` lists every ResourceManager's ("h1:8030,h2:8030", rm-ids order), and the
  // AM fails over between them with HADOOP_CONF_DIR's yarn.client.failover-* of the submit.
  int rm_failover_max_attempts = 30;
  int64_t rm_failover_sleep_base_ms = 30000;
  int64_t rm_failover_sleep_max_ms = 30000;
  std::string application_id;
  // "http" or "https" (yarn.http.policy=HTTPS_ONLY): how a container reaches its NodeManager's
  // web services (gpu_pinning.h).
  std::string nm_web_scheme = "http";
  // By resource name. Not in the manifest's JSON: the AM reads them from kStagedFilesEnv.
  std::map<std::string, StagedFile> files;
  // The cluster's nodes when the job was submitted: where the AM spreads its tasks (node-local
  // asks). The AM cannot ask for them itself on a secure cluster (it holds only its AMRMToken);
  // allocate's updated_nodes keeps its picture current. Empty: the AM asks for "*" only.
  std::vector<ManifestNode> nodes;
  // YARN's Docker runtime (loom.docker.*): the image of each task type whose containers run in
  // one, and the user's mount list for all of them. Empty: plain containers.
  std::map<std::string, std::string> docker_images;  // by task type
  std::string docker_mounts;
  // The launch environment that runs a container of `type` in its image (docker_runtime.h);
  // empty when that type has none.
  std::map<std::string, std::string> DockerEnvFor(const std::string& type) const;

  nlohmann::json ToJson() const;
  static Result<StagingManifest> FromJson(const std::string& text);
  // The LocalResource for one staged file.
  ::hadoop::yarn::LocalResourceProto ToLocalResource(const StagedFile& f) const;
  // Every file but the AM-only ones (manifest, job.json, config.xml): what an executor gets.
  std::map<std::string, ::hadoop::yarn::LocalResourceProto> ExecutorResources() const;
  // What the AM's container needs: the binary and the AM-only files, not the src dir or the
  // venv (a large venv would be downloaded and unpacked before the AM could start).
  std::map<std::string, ::hadoop::yarn::LocalResourceProto> AmResources() const;
};

// The value of kStagedFilesEnv: the files as JSON, in Base64 because the NodeManager writes an
// environment value into launch_container.sh between double quotes without escaping it.
std::string EncodeStagedFiles(const std::map<std::string, StagedFile>& files);
// Errors: InvalidArgument naming what is malformed.
Result<std::map<std::string, StagedFile>> DecodeStagedFiles(std::string_view value);

// Ships `local_binary` to `cache_dir` as loom-<first 16 hex digits of its SHA-256>, unless a
// file of that name and length is already there (a second submit of the same build uploads
// nothing). It is uploaded under a temporary name containing `unique` and renamed into place,
// so a concurrent submit never localizes a partial file; HDFS's rename never replaces a file,
// so of two concurrent uploads one wins and the other is deleted. The result is PUBLIC when
// HDFS lets every user read it (the file o+r, every ancestor directory o+x: the NodeManager's
// rule for its public cache), else PRIVATE. Never deleted by CleanStaging.
// Errors: those of WebHDFS, with the path; Internal when the cached file has the wrong length.
Result<StagedFile> StageCachedBinary(hadoop::WebHdfs& fs, const std::string& local_binary, const std::string& cache_dir,
                                     const std::string& unique);

// A task's resources as YARN asks for them: memory and vcores, GPUs as yarn.io/gpu (which the
// RM drops silently unless yarn.resource-types lists it).
::hadoop::yarn::ResourceProto ToYarnResource(const Resources& r);
int64_t GpusOf(const ::hadoop::yarn::ResourceProto& r);

}  // namespace loom::cluster::yarn
