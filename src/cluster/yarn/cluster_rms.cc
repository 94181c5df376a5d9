#include "cluster/yarn/cluster_rms.h"

#include "hadoop/wire/ipc_frame.h"

namespace loom::cluster::yarn {

hadoop::RmAddresses RmsOf(const std::vector<hadoop::HostPort>& rms) {
  hadoop::RmAddresses out;
  for (const hadoop::HostPort& hp : rms) out.emplace_back(hp.host, hp.port);
  return out;
}

hadoop::RmAddresses RmsOf(const hadoop::HadoopConf& conf) { return RmsOf(conf.rms.empty() ? std::vector<hadoop::HostPort>{conf.rm} : conf.rms); }

std::string RmListOf(const hadoop::HadoopConf& conf) {
  return hadoop::HostPortListString(conf.rms.empty() ? std::vector<hadoop::HostPort>{conf.rm} : conf.rms);
}

hadoop::FailoverSettings FailoverOf(const hadoop::HadoopConf& conf) {
  return hadoop::FailoverSettings{conf.rm_failover_max_attempts, conf.rm_failover_sleep_base_ms, conf.rm_failover_sleep_max_ms};
}

bool IsApplicationNotFound(const Status& s) {
  return hadoop::RemoteExceptionClass(s) == "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException";
}

}  // namespace loom::cluster::yarn
