#include "cluster/yarn/cluster_rms.h"

#include "cluster/yarn/wire/ipc_frame.h"

namespace loom::cluster::yarn {

RmAddresses RmsOf(const std::vector<HostPort>& rms) {
  RmAddresses out;
  for (const HostPort& hp : rms) out.emplace_back(hp.host, hp.port);
  return out;
}

RmAddresses RmsOf(const HadoopConf& conf) { return RmsOf(conf.rms.empty() ? std::vector<HostPort>{conf.rm} : conf.rms); }

std::string RmListOf(const HadoopConf& conf) {
  return HostPortListString(conf.rms.empty() ? std::vector<HostPort>{conf.rm} : conf.rms);
}

FailoverSettings FailoverOf(const HadoopConf& conf) {
  return FailoverSettings{conf.rm_failover_max_attempts, conf.rm_failover_sleep_base_ms, conf.rm_failover_sleep_max_ms};
}

bool IsApplicationNotFound(const Status& s) {
  return RemoteExceptionClass(s) == "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException";
}

}  // namespace loom::cluster::yarn
