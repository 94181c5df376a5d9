#pragma once
// YarnJobSubmitter: `loom submit --cluster yarn`. Stages the job through WebHDFS, submits the
// AM to the ResourceManager (ApplicationClientProtocol, SIMPLE auth) and, while the client
// follows, mirrors the application into the local job directory: the AM's events (fetched
// over the control plane), its address, and the final status from the application report.
// A job whose AM never writes a status still ends with YARN's own diagnostics.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cluster/job_submitter.h"
#include "cluster/yarn/hdfs/hadoop_conf.h"
#include "cluster/yarn/staging.h"
#include "core/job_spec.h"

namespace loom::cluster::yarn {

class ApplicationClient;

// What the client keeps about a YARN job in its job dir (yarn.json), so that `loom kill` and
// `loom status` work without HADOOP_CONF_DIR.
struct YarnJobRecord {
  std::string application_id;
  std::string rm;  // host:port
  std::string user;
  std::string staging_dir;
  std::string webhdfs;
  static std::string PathIn(const history::JobDir& dir) { return dir.root() + "/yarn.json"; }
  Status Write(const history::JobDir& dir) const;
  static Result<YarnJobRecord> Read(const history::JobDir& dir);
};

class YarnJobSubmitter : public JobSubmitter {
 public:
  // `conf` may be empty for Kill() of a job that has its yarn.json.
  YarnJobSubmitter(HadoopConf conf, std::string user, std::string loom_binary, config::Config job_conf);
  ~YarnJobSubmitter() override;

  Status CheckFits(const JobSpec& spec) const override;
  Status Submit(const history::JobDir& dir) override;
  Status Kill(const history::JobDir& dir, std::chrono::milliseconds grace) override;

 private:
  Result<StagingManifest> Stage(const history::JobDir& dir, const JobSpec& spec, const std::string& app_id);
  void Mirror(history::JobDir dir, YarnJobRecord record);
  void StopMirror();

  HadoopConf conf_;
  std::string user_;
  std::string loom_binary_;
  config::Config job_conf_;
  std::thread mirror_;
  std::atomic<bool> stop_{false};
};

// Ends a YARN job's staging: the heavy and secret files go; config.xml and a history/ copy of
// events.jsonl and status.json (when given) stay. Idempotent; used by the client and the AM.
Status CleanStaging(const std::string& webhdfs, const std::string& user, const std::string& staging_dir,
                    const history::JobDir* history_from);

// The job's final state from an application report: (state, diagnostics), or nullopt while
// the application is not finished.
std::optional<std::pair<std::string, std::string>> FinalStateOf(const hadoop::yarn::ApplicationReportProto& report);

}  // namespace loom::cluster::yarn
