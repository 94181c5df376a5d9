#include "cluster/local/local_am_side.h"

#include "cluster/local/host_inventory.h"
#include "cluster/local/local_container_broker.h"
#include "control/auth.h"
#include "core/files.h"

namespace loom::cluster::local {

Result<AmSetup> LocalAmSide::Prepare(const history::JobDir& dir, const std::map<std::string, std::string>& env) {
  AmSetup setup;
  auto secret = env.find(control::kSecretFileEnv);
  setup.secret_file = secret != env.end() ? secret->second : dir.secret();
  setup.executor_binary = SelfExecutable();
  // Executors are this machine's processes: they inherit the AM's environment, less the
  // secret's path (each gets it from the AM by its own variable).
  setup.executor_env = env;
  setup.executor_env.erase(control::kSecretFileEnv);
  return setup;
}

Result<std::unique_ptr<ContainerBroker>> LocalAmSide::MakeBroker(const history::JobDir& dir, const config::Config& conf,
                                                                 std::function<int()>, const std::string&) {
  LOOM_ASSIGN_OR_RETURN(HostInventory inventory, HostInventory::Detect(conf));
  return std::unique_ptr<ContainerBroker>(std::make_unique<LocalContainerBroker>(inventory, dir));
}

}  // namespace loom::cluster::local
