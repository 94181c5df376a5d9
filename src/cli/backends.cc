#include "cli/backends.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cluster/local/docker_check.h"
#include "cluster/local/host_inventory.h"
#include "cluster/local/local_am_side.h"
#include "cluster/local/local_backend.h"
#include "cluster/yarn/yarn_am_side.h"
#include "cluster/yarn/yarn_job_import.h"
#include "cluster/yarn/yarn_job_submitter.h"
#include "core/config/config.h"
#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/static_binary.h"
#include "core/strings.h"
#include "core/user_name.h"
#include "history/job_view.h"

namespace loom::cli {

std::string ClientUser() { return CurrentUserName(); }

namespace {

// Kerberos login keys (a keytab and its principal, TonY's names too) are for a Kerberized
// cluster; the local backend has none to log in to, so accepting them would do nothing.
// tony-default.xml's placeholders count as unset.
Status RefuseKerberosOnLocal(const config::Config& conf) {
  const std::pair<const char*, const char*> keys[] = {{"loom.kerberos.keytab", ""},
                                                      {"loom.kerberos.principal", ""},
                                                      {"loom.keytab.location", "/location/to/tony.keytab"},
                                                      {"loom.keytab.user", "user1"}};
  for (const auto& [key, placeholder] : keys) {
    std::string value = Trim(config::GetString(conf, key));
    if (value.empty() || value == placeholder) continue;
    return Status::InvalidArgument(config::Spelled(conf, key) + "=" + value +
                                   ": a Kerberos login is for --cluster yarn on a Kerberized cluster; the local "
                                   "backend has nothing to log in to: remove the key");
  }
  // HDFS delegation tokens (loom.application.file-systems, TonY's tony.other.namenodes) are for
  // YARN containers on a Kerberized cluster; local tasks use the user's own ticket.
  for (const char* key : {"loom.application.file-systems", "loom.other.namenodes"}) {
    std::string value = Trim(config::GetString(conf, key));
    if (value.empty()) continue;
    return Status::InvalidArgument(config::Spelled(conf, key) + "=" + value +
                                   ": HDFS delegation tokens are for --cluster yarn on a Kerberized cluster; local "
                                   "tasks use your own Kerberos ticket: remove the key");
  }
  return Status::Ok();
}

std::vector<BackendEntry> MakeBackends() {
  std::vector<BackendEntry> all;
  all.push_back({
      "local",
      "this machine (default)",
      [](const config::Config& conf) -> Result<std::unique_ptr<cluster::Backend>> {
        LOOM_RETURN_IF_ERROR(cluster::local::RefuseDockerOnLocal(conf));  // no images here: docker_check.h
        LOOM_RETURN_IF_ERROR(RefuseKerberosOnLocal(conf));
        LOOM_ASSIGN_OR_RETURN(auto inventory, cluster::local::HostInventory::Detect(conf));
        return std::unique_ptr<cluster::Backend>(std::make_unique<cluster::local::LocalBackend>(inventory, SelfExecutable()));
      },
      [](const history::JobDir&) -> Result<std::unique_ptr<cluster::Backend>> {
        return std::unique_ptr<cluster::Backend>(
            std::make_unique<cluster::local::LocalBackend>(cluster::local::HostInventory{}, SelfExecutable()));
      },
      [](const std::string& id) -> Result<history::JobDir> {
        return Status::NotFound("no job " + id + " under " + history::LoomHome() + "/jobs");
      },
      [] { return std::unique_ptr<cluster::AmSide>(std::make_unique<cluster::local::LocalAmSide>()); },
  });
  all.push_back({
      "yarn",
      "Hadoop YARN, found through HADOOP_CONF_DIR",
      [](const config::Config& conf) -> Result<std::unique_ptr<cluster::Backend>> {
        auto hadoop = hadoop::HadoopConf::FromEnvironment();
        if (!hadoop.ok()) return hadoop.status().WithContext("--cluster yarn");
        return std::unique_ptr<cluster::Backend>(
            std::make_unique<cluster::yarn::YarnJobSubmitter>(*hadoop, ClientUser(), ContainerBinary(), conf));
      },
      [](const history::JobDir& dir) -> Result<std::unique_ptr<cluster::Backend>> {
        return cluster::yarn::YarnJobSubmitter::ForJob(dir, ClientUser());
      },
      [](const std::string& id) -> Result<history::JobDir> { return cluster::yarn::ImportYarnJob(id, ClientUser()); },
      [] { return std::unique_ptr<cluster::AmSide>(std::make_unique<cluster::yarn::YarnAmSide>()); },
  });
  return all;
}

}  // namespace

const std::vector<BackendEntry>& Backends() {
  static const std::vector<BackendEntry> backends = MakeBackends();
  return backends;
}

const BackendEntry* FindBackend(const std::string& name) {
  for (const BackendEntry& b : Backends()) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

std::string BackendNames() {
  std::vector<std::string> names;
  for (const BackendEntry& b : Backends()) names.push_back(b.name);
  return Join(names, ", ");
}

Result<std::unique_ptr<cluster::Backend>> BackendForJob(const history::JobDir& dir) {
  auto view = history::LoadJobView(dir);
  if (!view.ok()) return view.status();
  std::string name = view->backend.empty() ? "local" : view->backend;
  const BackendEntry* entry = FindBackend(name);
  if (!entry) return Status::InvalidArgument("job " + dir.job_id() + " ran on backend '" + name + "', which this loom does not have");
  return entry->for_job(dir);
}

Result<history::JobDir> FindJob(const std::string& id_or_path) {
  auto local = history::JobDir::Find(id_or_path);
  if (local.ok() || id_or_path.find('/') != std::string::npos) return local;
  std::string why = local.status().message();
  for (const BackendEntry& b : Backends()) {
    auto found = b.import(id_or_path);
    if (found.ok()) return found;
    if (found.status().code() != StatusCode::kNotFound) return found.status().WithContext(b.name);
    if (b.name != "local") why += "; " + b.name + ": " + found.status().message();
  }
  return Status::NotFound(why);
}

std::string ContainerBinary() {
  std::string self = SelfExecutable();
  if (SelfIsStatic()) return self;
  std::string sibling = self.substr(0, self.rfind('/') + 1) + "loom";
  return sibling != self && PathExists(sibling) ? sibling : self;
}

void RunAsKerberosClientIfNeeded(char** argv) {
  if (!SelfIsStatic() || argv[1] == nullptr) return;
  const std::string command = argv[1];
  if (command != "submit" && command != "status" && command != "logs" && command != "kill" && command != "portal") {
    return;
  }
  Result<hadoop::HadoopConf> hadoop = hadoop::HadoopConf::FromEnvironment();
  if (!hadoop.ok() || hadoop->security != "kerberos") return;
  std::string self = SelfExecutable();
  std::string kerberos_client = self.substr(0, self.rfind('/') + 1) + "loom-kerberos";
  if (::access(kerberos_client.c_str(), X_OK) != 0) return;
  ::execv(kerberos_client.c_str(), argv);
  std::fprintf(stderr, "loom: cannot start %s (%s); going on without Kerberos\n", kerberos_client.c_str(),
               std::strerror(errno));
}

}  // namespace loom::cli
