#pragma once
// The ResourceManagers a HADOOP_CONF_DIR names, as the YARN clients want them: every RM of an HA
// pair (one without HA), its failover policy, and the words the RM uses for an unknown app.

#include <string>

#include "core/status.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/ipc/rm_failover.h"
#include "hadoop/ipc/yarn_clients.h"

namespace loom::cluster::yarn {

hadoop::RmAddresses RmsOf(const hadoop::HadoopConf& conf);
hadoop::RmAddresses RmsOf(const std::vector<hadoop::HostPort>& rms);
// "h1:8032,h2:8032", rm-ids order: what a job's record keeps.
std::string RmListOf(const hadoop::HadoopConf& conf);
hadoop::FailoverSettings FailoverOf(const hadoop::HadoopConf& conf);
// The RM does not know the application (ApplicationNotFoundException): never submitted there,
// or forgotten (yarn.resourcemanager.max-completed-applications, a restart without a state store).
bool IsApplicationNotFound(const Status& s);

}  // namespace loom::cluster::yarn
