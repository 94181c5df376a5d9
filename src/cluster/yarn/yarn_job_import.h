#pragma once
// `loom status|logs|kill APP` from a client that did not submit the job (another $LOOM_HOME,
// another machine): the job's dir here, made from the RM's report and the job's record in HDFS.

#include <string>

#include "core/status.h"
#include "history/job_dir.h"

namespace loom::cluster::yarn {

// Finds a YARN job that has no job dir here, by its application id or its Loom job id (the
// application's loom-job:<id> tag), and makes its job dir under $LOOM_HOME from the RM's
// report and the history in HDFS. An application the RM no longer knows (a restart without a
// state store, or one that forgot it) is found by its record in HDFS alone,
// /user/<user>/.loom/<application id>/history. NotFound when HADOOP_CONF_DIR is not set or
// neither YARN nor HDFS knows the id.
Result<history::JobDir> ImportYarnJob(const std::string& id, std::string user);

}  // namespace loom::cluster::yarn
