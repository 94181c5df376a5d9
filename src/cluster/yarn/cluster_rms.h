#pragma once
// The ResourceManagers a HADOOP_CONF_DIR names, as the YARN clients want them: every RM of an HA
// pair (one without HA), its failover policy, and the words the RM uses for an unknown app.

#include <string>

#include "cluster/yarn/hdfs/hadoop_conf.h"
#include "cluster/yarn/rpc/rm_failover.h"
#include "cluster/yarn/rpc/yarn_clients.h"
#include "core/status.h"

namespace loom::cluster::yarn {

RmAddresses RmsOf(const HadoopConf& conf);
RmAddresses RmsOf(const std::vector<HostPort>& rms);
// "h1:8032,h2:8032", rm-ids order: what a job's record keeps.
std::string RmListOf(const HadoopConf& conf);
FailoverSettings FailoverOf(const HadoopConf& conf);
// The RM does not know the application (ApplicationNotFoundException): never submitted there,
// or forgotten (yarn.resourcemanager.max-completed-applications, a restart without a state store).
bool IsApplicationNotFound(const Status& s);

}  // namespace loom::cluster::yarn
