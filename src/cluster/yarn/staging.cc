#include "cluster/yarn/staging.h"

#include <sys/stat.h>

#include <openssl/sha.h>

#include "cluster/yarn/docker_runtime.h"
#include "core/files.h"
#include "hadoop/wire/credentials.h"
#include "hadoop/wire/crypto_library.h"

namespace loom::cluster::yarn {

std::string StagingRoot(const std::string& user) { return "/user/" + user + "/.loom"; }

using nlohmann::json;

namespace {

json StagedFilesToJson(const std::map<std::string, StagedFile>& files) {
  json out = json::object();
  for (const auto& [name, f] : files) {
    out[name] = {{"path", f.path},   {"size", f.size},
                 {"mtime", f.mtime}, {"archive", f.archive},
                 {"visibility", ::hadoop::yarn::LocalResourceVisibilityProto_Name(f.visibility)}};
  }
  return out;
}

Result<std::map<std::string, StagedFile>> StagedFilesFromJson(const json& j) {
  std::map<std::string, StagedFile> files;
  try {
    if (!j.is_object()) return Status::InvalidArgument("staged files: not a JSON object");
    for (const auto& [name, f] : j.items()) {
      StagedFile& staged = files[name];
      staged = {f.at("path").get<std::string>(), f.at("size").get<int64_t>(), f.at("mtime").get<int64_t>(),
                f.at("archive").get<bool>()};
      if (!::hadoop::yarn::LocalResourceVisibilityProto_Parse(f.value("visibility", "APPLICATION"), &staged.visibility)) {
        return Status::InvalidArgument("staged file " + name + " has visibility " + f.value("visibility", ""));
      }
    }
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("staged files: ") + e.what());
  }
  return files;
}

}  // namespace

std::string EncodeStagedFiles(const std::map<std::string, StagedFile>& files) {
  return hadoop::Base64Encode(StagedFilesToJson(files).dump());
}

Result<std::map<std::string, StagedFile>> DecodeStagedFiles(std::string_view value) {
  LOOM_ASSIGN_OR_RETURN(std::string text, hadoop::Base64Decode(value));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument("staged files: not JSON");
  return StagedFilesFromJson(j);
}

json StagingManifest::ToJson() const {
  json out = {{"fs_scheme", fs_scheme}, {"fs_host", fs_host},   {"fs_port", fs_port},
              {"webhdfs", webhdfs},     {"user", user},         {"dir", dir},
              {"scheduler", scheduler}, {"application_id", application_id}};
  if (!nodes.empty()) {
    json nodes_json = json::array();
    for (const ManifestNode& n : nodes) {
      nodes_json.push_back({{"host", n.host}, {"port", n.port}, {"rack", n.rack}, {"memory_mb", n.memory_mb},
                            {"vcores", n.vcores}, {"gpus", n.gpus}, {"used_memory_mb", n.used_memory_mb},
                            {"used_vcores", n.used_vcores}, {"used_gpus", n.used_gpus}});
    }
    out["nodes"] = nodes_json;
  }
  if (scheduler.find(',') != std::string::npos) {
    out["rm_failover"] = {{"max_attempts", rm_failover_max_attempts}, {"sleep_base_ms", rm_failover_sleep_base_ms},
                          {"sleep_max_ms", rm_failover_sleep_max_ms}};
  }
  if (nm_web_scheme != "http") out["nm_web_scheme"] = nm_web_scheme;
  if (!docker_images.empty()) {
    out["docker_images"] = docker_images;
    out["docker_mounts"] = docker_mounts;
  }
  return out;
}

Result<StagingManifest> StagingManifest::FromJson(const std::string& text) {
  try {
    json j = json::parse(text);
    StagingManifest m;
    m.fs_scheme = j.at("fs_scheme").get<std::string>();
    m.fs_host = j.at("fs_host").get<std::string>();
    m.fs_port = j.at("fs_port").get<int>();
    m.webhdfs = j.at("webhdfs").get<std::string>();
    m.user = j.at("user").get<std::string>();
    m.dir = j.at("dir").get<std::string>();
    m.scheduler = j.at("scheduler").get<std::string>();
    if (j.contains("rm_failover")) {
      const json& f = j.at("rm_failover");
      m.rm_failover_max_attempts = f.value("max_attempts", m.rm_failover_max_attempts);
      m.rm_failover_sleep_base_ms = f.value("sleep_base_ms", m.rm_failover_sleep_base_ms);
      m.rm_failover_sleep_max_ms = f.value("sleep_max_ms", m.rm_failover_sleep_max_ms);
    }
    m.application_id = j.value("application_id", "");
    m.nm_web_scheme = j.value("nm_web_scheme", m.nm_web_scheme);
    if (m.nm_web_scheme != "http" && m.nm_web_scheme != "https") {
      return Status::InvalidArgument("malformed staging manifest: nm_web_scheme " + m.nm_web_scheme);
    }
    for (const auto& n : j.value("nodes", json::array())) {
      m.nodes.push_back({n.at("host").get<std::string>(), n.at("port").get<int>(), n.value("rack", "/default-rack"),
                         n.at("memory_mb").get<int64_t>(), n.value("used_memory_mb", int64_t{0}),
                         n.at("vcores").get<int>(), n.value("used_vcores", 0), n.value("gpus", int64_t{0}),
                         n.value("used_gpus", int64_t{0})});
    }
    m.docker_images = j.value("docker_images", std::map<std::string, std::string>{});
    m.docker_mounts = j.value("docker_mounts", "");
    return m;
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("malformed staging manifest: ") + e.what());
  }
}

std::map<std::string, std::string> StagingManifest::DockerEnvFor(const std::string& type) const {
  auto it = docker_images.find(type);
  if (it == docker_images.end() || it->second.empty()) return {};
  return DockerLaunchEnv(it->second, docker_mounts);
}

::hadoop::yarn::LocalResourceProto StagingManifest::ToLocalResource(const StagedFile& f) const {
  ::hadoop::yarn::LocalResourceProto r;
  auto* url = r.mutable_resource();
  url->set_scheme(fs_scheme);
  url->set_host(fs_host);
  url->set_port(fs_port);  // -1 when the URI has none: an unset port would read as 0
  url->set_file(f.path);
  r.set_size(f.size);
  r.set_timestamp(f.mtime);
  r.set_type(f.archive ? ::hadoop::yarn::ARCHIVE : ::hadoop::yarn::FILE);
  r.set_visibility(f.visibility);
  return r;
}

namespace {
// The files only the AM reads; the binary is the one file both the AM and executors need.
bool AmOnly(const std::string& name) {
  return name == kManifestResource || name == kJobJsonResource || name == kConfigResource;
}
}  // namespace

std::map<std::string, ::hadoop::yarn::LocalResourceProto> StagingManifest::AmResources() const {
  std::map<std::string, ::hadoop::yarn::LocalResourceProto> out;
  for (const auto& [name, f] : files) {
    if (AmOnly(name) || name == kLoomBinaryResource) out[name] = ToLocalResource(f);
  }
  return out;
}

std::map<std::string, ::hadoop::yarn::LocalResourceProto> StagingManifest::ExecutorResources() const {
  std::map<std::string, ::hadoop::yarn::LocalResourceProto> out;
  for (const auto& [name, f] : files) {
    if (!AmOnly(name)) out[name] = ToLocalResource(f);
  }
  return out;
}

namespace {

Result<std::string> Sha256Hex(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  unsigned char md[SHA256_DIGEST_LENGTH];
  unsigned int n = 0;
  if (hadoop::Crypto().digest(bytes.data(), bytes.size(), md, &n, hadoop::Crypto().sha256(), nullptr) != 1) {
    return Status::Internal("SHA-256 of " + path + " failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) {
    hex += kHex[md[i] >> 4];
    hex += kHex[md[i] & 15];
  }
  return hex;
}

// The last octal digit of a WebHDFS permission ("755", "1777"): what "other" may do.
int OtherBits(const std::string& permission) { return permission.empty() ? 0 : (permission.back() - '0') & 7; }

// The NodeManager's test for its public cache (FSDownload.isPublic): the file readable by
// everyone and every directory above it searchable by everyone.
Result<bool> ReadableByEveryone(hadoop::WebHdfs& fs, const std::string& path, const hadoop::HdfsFileStatus& file) {
  if (!(OtherBits(file.permission) & 4)) return false;
  for (std::string dir = path.substr(0, path.rfind('/')); ; dir = dir.substr(0, dir.rfind('/'))) {
    LOOM_ASSIGN_OR_RETURN(hadoop::HdfsFileStatus st, fs.GetFileStatus(dir.empty() ? "/" : dir));
    if (!(OtherBits(st.permission) & 1)) return false;
    if (dir.empty()) return true;
  }
}

}  // namespace

Result<StagedFile> StageCachedBinary(hadoop::WebHdfs& fs, const std::string& local_binary, const std::string& cache_dir,
                                     const std::string& unique) {
  LOOM_ASSIGN_OR_RETURN(std::string hash, Sha256Hex(local_binary));
  struct stat local;
  if (::stat(local_binary.c_str(), &local) != 0) return Status::FromErrno("stat " + local_binary, errno);
  std::string name = "loom-" + hash.substr(0, 16);
  std::string path = cache_dir + "/" + name;
  Result<hadoop::HdfsFileStatus> cached = fs.GetFileStatus(path);
  if (!cached.ok() && cached.status().code() != StatusCode::kNotFound) return cached.status();
  if (!cached.ok() || cached->type != "FILE" || cached->length != local.st_size) {
    // 755: the binary is no secret, and world-readable it can go to the public cache.
    LOOM_RETURN_IF_ERROR(fs.Mkdirs(cache_dir, "755"));
    std::string tmp = cache_dir + "/." + name + "." + unique + ".tmp";
    LOOM_RETURN_IF_ERROR(fs.Upload(local_binary, tmp, "755").status());
    // A file of the wrong length is what a failure before this design could leave; replace it.
    if (cached.ok()) (void)fs.Delete(path, false);
    Result<bool> renamed = fs.Rename(tmp, path);
    // Not renamed: a concurrent submit published the same bytes first.
    if (!renamed.ok() || !*renamed) (void)fs.Delete(tmp, false);
    LOOM_RETURN_IF_ERROR(renamed.status());
    cached = fs.GetFileStatus(path);
    LOOM_RETURN_IF_ERROR(cached.status());
    if (cached->length != local.st_size) {
      return Status::Internal(path + " has " + std::to_string(cached->length) + " bytes, " + local_binary +
                              " has " + std::to_string(local.st_size));
    }
  }
  LOOM_ASSIGN_OR_RETURN(bool pub, ReadableByEveryone(fs, path, *cached));
  StagedFile f{path, cached->length, cached->modification_time, false};
  f.visibility = pub ? ::hadoop::yarn::PUBLIC : ::hadoop::yarn::PRIVATE;
  return f;
}

::hadoop::yarn::ResourceProto ToYarnResource(const Resources& r) {
  ::hadoop::yarn::ResourceProto p;
  p.set_memory(r.memory_mib);
  p.set_virtual_cores(r.vcores);
  if (r.gpus > 0) {
    auto* gpu = p.add_resource_value_map();
    gpu->set_key("yarn.io/gpu");
    gpu->set_value(r.gpus);
    gpu->set_units("");
    gpu->set_type(::hadoop::yarn::COUNTABLE);
  }
  return p;
}

std::vector<ManifestNode> ManifestNodes(const std::vector<::hadoop::yarn::NodeReportProto>& reports) {
  std::vector<ManifestNode> out;
  for (const auto& r : reports) {
    if (r.node_state() != ::hadoop::yarn::NS_RUNNING) continue;
    out.push_back({r.nodeid().host(), r.nodeid().port(), r.rackname().empty() ? "/default-rack" : r.rackname(),
                   r.capability().memory(), r.used().memory(), r.capability().virtual_cores(), r.used().virtual_cores(),
                   GpusOf(r.capability()), GpusOf(r.used())});
  }
  return out;
}

int64_t GpusOf(const ::hadoop::yarn::ResourceProto& r) {
  for (const auto& info : r.resource_value_map()) {
    if (info.key() == "yarn.io/gpu") return info.value();
  }
  return 0;
}

Status HandTokensToUserCode(const hadoop::Credentials& container, const std::string& path,
                            std::map<std::string, std::string>* env) {
  hadoop::Credentials tokens_only;
  tokens_only.tokens = container.tokens;
  LOOM_RETURN_IF_ERROR(WriteFileAtomic(path, hadoop::SerializeCredentials(tokens_only), 0600)
                           .WithContext("writing the tokens file for user code"));
  (*env)["HADOOP_TOKEN_FILE_LOCATION"] = path;
  return Status::Ok();
}

}  // namespace loom::cluster::yarn
