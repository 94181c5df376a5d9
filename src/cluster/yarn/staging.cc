#include "cluster/yarn/staging.h"

namespace loom::cluster::yarn {

using nlohmann::json;

json StagingManifest::ToJson() const {
  json files_json = json::object();
  for (const auto& [name, f] : files) {
    files_json[name] = {{"path", f.path}, {"size", f.size}, {"mtime", f.mtime}, {"archive", f.archive}};
  }
  return {{"fs_scheme", fs_scheme}, {"fs_host", fs_host},   {"fs_port", fs_port},
          {"webhdfs", webhdfs},     {"user", user},         {"dir", dir},
          {"scheduler", scheduler}, {"application_id", application_id}, {"files", files_json}};
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
    m.application_id = j.value("application_id", "");
    for (const auto& [name, f] : j.at("files").items()) {
      m.files[name] = {f.at("path").get<std::string>(), f.at("size").get<int64_t>(), f.at("mtime").get<int64_t>(),
                       f.at("archive").get<bool>()};
    }
    return m;
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("malformed staging manifest: ") + e.what());
  }
}

hadoop::yarn::LocalResourceProto StagingManifest::ToLocalResource(const StagedFile& f) const {
  hadoop::yarn::LocalResourceProto r;
  auto* url = r.mutable_resource();
  url->set_scheme(fs_scheme);
  url->set_host(fs_host);
  url->set_port(fs_port);  // -1 when the URI has none: an unset port would read as 0
  url->set_file(f.path);
  r.set_size(f.size);
  r.set_timestamp(f.mtime);
  r.set_type(f.archive ? hadoop::yarn::ARCHIVE : hadoop::yarn::FILE);
  r.set_visibility(hadoop::yarn::APPLICATION);
  return r;
}

std::map<std::string, hadoop::yarn::LocalResourceProto> StagingManifest::ExecutorResources() const {
  std::map<std::string, hadoop::yarn::LocalResourceProto> out;
  for (const auto& [name, f] : files) {
    if (name == kManifestResource || name == kJobJsonResource || name == kConfigResource) continue;
    out[name] = ToLocalResource(f);
  }
  return out;
}

hadoop::yarn::ResourceProto ToYarnResource(const Resources& r) {
  hadoop::yarn::ResourceProto p;
  p.set_memory(r.memory_mib);
  p.set_virtual_cores(r.vcores);
  if (r.gpus > 0) {
    auto* gpu = p.add_resource_value_map();
    gpu->set_key("yarn.io/gpu");
    gpu->set_value(r.gpus);
    gpu->set_units("");
    gpu->set_type(hadoop::yarn::COUNTABLE);
  }
  return p;
}

int64_t GpusOf(const hadoop::yarn::ResourceProto& r) {
  for (const auto& info : r.resource_value_map()) {
    if (info.key() == "yarn.io/gpu") return info.value();
  }
  return 0;
}

}  // namespace loom::cluster::yarn
