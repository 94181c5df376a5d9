#pragma once
// The cluster backends `loom` knows, listed in one place (backends.cc). Every command reaches
// a job's backend through here; nothing else in the CLI names a backend.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cluster/am_side.h"
#include "cluster/backend.h"
#include "core/config/config.h"
#include "history/job_dir.h"

namespace loom::cli {

struct BackendEntry {
  std::string name;
  std::string summary;  // one line for --help
  // A backend for new jobs, configured from the job's config (and the environment, e.g.
  // HADOOP_CONF_DIR). An error is a usage error: nothing was started.
  std::function<Result<std::unique_ptr<cluster::Backend>>(const config::Config& conf)> for_submit;
  // The backend of a job already submitted, from its job dir.
  std::function<Result<std::unique_ptr<cluster::Backend>>(const history::JobDir& dir)> for_job;
  // Finds a job that has no job dir under $LOOM_HOME by its id or the backend's own id
  // (application_...), and makes its job dir there from the cluster's records. NotFound if
  // this backend does not know it.
  std::function<Result<history::JobDir>(const std::string& id)> import;
  // The backend as the ApplicationMaster sees it, in `loom am --backend NAME`.
  std::function<std::unique_ptr<cluster::AmSide>()> am_side;
};

// The user this client acts as (core/user_name.h): $USER, $LOGNAME, else its name in /etc/passwd.
// The YARN user, and who `loom kill` names.
std::string ClientUser();

const std::vector<BackendEntry>& Backends();
const BackendEntry* FindBackend(const std::string& name);
std::string BackendNames();  // "local, yarn"

// The backend that owns the job in `dir` (job.json's "backend").
Result<std::unique_ptr<cluster::Backend>> BackendForJob(const history::JobDir& dir);

// A job by id or directory: $LOOM_HOME first, then every backend's records.
Result<history::JobDir> FindJob(const std::string& id_or_path);

// The self-contained `loom` that the YARN backend ships to the nodes: this binary, or, when this
// is loom-kerberos, the `loom` installed beside it.
std::string ContainerBinary();

// The static `loom` cannot log in to Kerberos (wire/gssapi_library.h). For a client command on a
// Kerberized cluster (HADOOP_CONF_DIR's hadoop.security.authentication=kerberos) it execs
// loom-kerberos, installed beside it, with the same arguments; otherwise, or when there is none,
// it returns and `loom` goes on (and says what to do if a login is needed).
void RunAsKerberosClientIfNeeded(char** argv);

}  // namespace loom::cli
