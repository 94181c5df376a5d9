#include "cluster/yarn/yarn_am_side.h"

#include <spdlog/spdlog.h>

#include "cluster/container_env.h"
#include "cluster/yarn/history_publish.h"
#include "cluster/yarn/yarn_job_submitter.h"
#include "control/auth.h"
#include "core/files.h"
#include "core/strings.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/ipc/ipc_client.h"
#include "hadoop/logs/nm_web_logs.h"
#include "history/event_log.h"
#include "history/history_copy.h"
#include "history/events.h"

namespace loom::cluster::yarn {

Result<AmSetup> YarnAmSide::Prepare(const history::JobDir& dir, const std::map<std::string, std::string>& env) {
  LOOM_RETURN_IF_ERROR(MakeDirs(dir.tasks_dir()));
  for (const char* f : {kConfigResource, kJobJsonResource}) {
    LOOM_ASSIGN_OR_RETURN(std::string text, ReadFile(f));
    LOOM_RETURN_IF_ERROR(WriteFileAtomic(dir.root() + "/" + f, text));
  }
  // The AMRM and NM token connections accept the qops of hadoop.rpc.protection in this container's
  // HADOOP_CONF_DIR (the NodeManager's, through its env whitelist), as a Java AM's do.
  if (auto conf_dir = env.find("HADOOP_CONF_DIR"); conf_dir != env.end() && !conf_dir->second.empty()) {
    Result<hadoop::HadoopConf> conf = hadoop::HadoopConf::Load(conf_dir->second);
    if (conf.ok()) {
      hadoop::SetProcessRpcProtection(conf->rpc_protection);
      nm_web_scheme_ = conf->nm_web_scheme;
    } else {
      spdlog::warn("cannot read hadoop.rpc.protection from HADOOP_CONF_DIR ({}); using authentication",
                   conf.status().message());
    }
  }
  auto options = YarnBrokerOptionsFromContainer(env);
  if (!options.ok()) return options.status().WithContext("AM cannot reach YARN");
  AmSetup setup;
  // The secret came in the container's credentials; the AM's copy lives in its container's
  // private working dir, which the NodeManager deletes with the container.
  setup.secret_file = dir.secret();
  LOOM_RETURN_IF_ERROR(WriteFileAtomic(setup.secret_file, options->job_secret + "\n", 0600));
  // Executors run on other nodes: they reach the AM at its node's address, find `loom` as a
  // LocalResource, and get only a portable environment (the NodeManager sets the rest).
  setup.bind_address = "0.0.0.0";
  setup.advertise_host = options->nm_host;
  setup.executor_binary = std::string("./") + kLoomBinaryResource;
  for (const auto& [k, v] : env) {
    if (PassesIntoContainers(k)) setup.executor_env[k] = v;
  }
  auto get = [&](const char* k) { auto it = env.find(k); return it == env.end() ? std::string() : it->second; };
  if (!get("CONTAINER_ID").empty()) setup.location["container"] = get("CONTAINER_ID");
  if (!get("NM_PORT").empty()) setup.location["node_id"] = options->nm_host + ":" + get("NM_PORT");
  if (!get("NM_HTTP_PORT").empty()) setup.location["node_http"] = options->nm_host + ":" + get("NM_HTTP_PORT");
  // A client still following copies the AM's last events before it goes.
  setup.events_linger = std::chrono::milliseconds(3000);
  manifest_ = options->manifest;
  hdfs_token_ = DefaultFsToken(manifest_, options->delegation_tokens);
  history_copy_.emplace(manifest_.webhdfs, manifest_.user, manifest_.dir, dir, std::chrono::seconds(2), hdfs_token_);
  options_ = std::move(*options);
  return setup;
}

Result<std::unique_ptr<ContainerBroker>> YarnAmSide::MakeBroker(const history::JobDir& dir, const config::Config&,
                                                                std::function<int()> am_port,
                                                                const std::string& tracking_url) {
  if (!options_) return Status::FailedPrecondition("YarnAmSide::MakeBroker before Prepare");
  options_->am_port = std::move(am_port);
  options_->tracking_url = tracking_url;
  // Tasks still waiting for a container, and why: in the job's events, so that `loom submit`
  // and `loom status` say which tasks are pending and what YARN is waiting for.
  options_->pending_report_interval = std::chrono::seconds(5);
  options_->on_pending = [events = std::make_shared<history::EventLog>(dir.events())](
                             const std::vector<PendingRequest>& pending) {
    nlohmann::json tasks = nlohmann::json::array();
    for (const PendingRequest& p : pending) {
      tasks.push_back({{"task", p.task.ToString()}, {"waited_ms", p.waited.count()}, {"reason", p.reason},
                       {"resources", p.resources.ToString()}});
    }
    (void)events->Append(history::events::kTasksPending, {{"tasks", tasks}});
  };
  options_->on_released = [events = std::make_shared<history::EventLog>(dir.events())](
                              const std::string& container, const std::string& host, const std::string& why) {
    (void)events->Append(history::events::kContainerReleased, {{"container", container}, {"host", host}, {"reason", why}});
  };
  auto broker = std::make_unique<YarnContainerBroker>(std::move(*options_));
  options_.reset();
  broker_ = broker.get();
  return std::unique_ptr<ContainerBroker>(std::move(broker));
}

Status YarnAmSide::PublishToHistoryLocation(const history::JobDir& dir) {
  LOOM_ASSIGN_OR_RETURN(HistoryLocation location, history::HistoryLocationOf(dir));
  if (location.scheme != HistoryLocation::Scheme::kHdfs && location.scheme != HistoryLocation::Scheme::kPath) {
    return Status::Ok();  // none (file:// is refused at submit)
  }
  HistoryPublish p;
  p.webhdfs = manifest_.webhdfs;
  p.user = manifest_.user;
  p.location = location.path;  // fs.defaultFS's: the client checked it at submit
  p.job_id = history::RecordJobId(dir);
  p.replace = false;
  p.delegation = hdfs_token_;
  return PublishHistory(p, dir).WithContext("writing it to " + location.JobPath(p.job_id) + " in HDFS");
}

void YarnAmSide::Finish(const history::JobDir& dir, const std::string& state, const std::string& diagnostics) {
  // The job's record to HDFS and its staging files gone first, then unregister with the
  // outcome (`yarn application -status` shows it); after that the NodeManager may end this
  // container at any moment.
  history_copy_.reset();
  (void)UploadHistory(manifest_.webhdfs, manifest_.user, manifest_.dir, dir, /*replace_status=*/false, hdfs_token_);
  // The history location (loom.history.location) too; a client that ends the job after this
  // writes its own status.json over this one, as in the staging dir.
  if (Status s = PublishToHistoryLocation(dir); !s.ok()) spdlog::warn("the job's record to its history location: {}", s.ToString());
  (void)CleanStaging(manifest_.webhdfs, manifest_.user, manifest_.dir, hdfs_token_);
  if (!broker_) return;
  if (Status s = broker_->Finish(state, diagnostics); !s.ok()) spdlog::error("unregistering: {}", s.ToString());
}

Result<TaskLogPiece> YarnAmSide::ReadTaskLog(const std::string& container, const std::string& node_http,
                                             const std::string& file, std::optional<int64_t> size) const {
  if (container.empty() || node_http.empty()) return Status::NotFound("no container yet");
  hadoop::NmWebLogs nm(nm_web_scheme_ == "https" ? "https://" + node_http : node_http, manifest_.user);
  LOOM_ASSIGN_OR_RETURN(hadoop::NmLogContent content, nm.ReadLog(container, file, size));
  if (content.answer != hadoop::NmLogAnswer::kServed) {
    return Status::NotFound(file + " of " + container + ": " +
                            (content.answer == hadoop::NmLogAnswer::kNoSuchFile
                                 ? "no such log"
                                 : "its NodeManager serves it no more (aggregated logs: loom logs)"));
  }
  return TaskLogPiece{std::move(content.bytes), content.file_length};
}

}  // namespace loom::cluster::yarn
