#pragma once
// YarnJobSubmitter: the yarn backend on the client's side (`loom submit --cluster yarn`, and
// status, logs, kill of its jobs). It checks the job against the cluster and the queue,
// stages the job through WebHDFS, submits the AM to the ResourceManager
// (ApplicationClientProtocol) and keeps the local job directory in step with the application:
// YARN's state and the scheduler's reason while it waits, the AM's events (fetched over the
// control plane), and at the end the final status, a final row for every task, the history
// copied to HDFS and the staging directory cleaned. The job's secret never touches HDFS: it
// travels in the containers' credentials, which the NodeManager deletes with them.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "cluster/backend.h"
#include "cluster/yarn/client_security.h"
#include "cluster/yarn/staging.h"
#include "core/config/config.h"
#include "core/job_spec.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/wire/credentials.h"

namespace loom::hadoop {
class ApplicationClient;
class YarnLogReader;
}  // namespace loom::hadoop

namespace loom::cluster::yarn {


// What the client keeps about a YARN job in its job dir (yarn.json), so that `loom kill`,
// `status` and `logs` work without HADOOP_CONF_DIR, and from another client.
struct YarnJobRecord {
  std::string application_id;
  std::string rm;  // host:port
  std::string user;
  std::string staging_dir;
  std::string webhdfs;
  // Kept by Sync(): how far the AM's events.jsonl was copied, and what was last recorded.
  int64_t am_events_offset = 0;
  std::string last_state, last_reason;
  bool cleaned = false;   // the final status is written and staging is clean
  bool imported = false;  // found from another client: the AM's events come from HDFS
  bool submitted = true;  // false while the client stages it: the RM does not know it yet
  // loom.history.location's HDFS path (on fs.defaultFS), where the job's record goes at its
  // end (history_publish.h); "" for none.
  std::string history_location;
  static std::string PathIn(const history::JobDir& dir) { return dir.root() + "/yarn.json"; }
  Status Write(const history::JobDir& dir) const;
  static Result<YarnJobRecord> Read(const history::JobDir& dir);
};

// YARN's own keys of a job, each refused with exit 2 when it cannot do what it says:
//   loom.application.type                    the application type at submit (YARN keeps at most
//                                            20 characters: a longer one is refused)
//   loom.application.num-client-rm-connect-retries  how often the submitting client tries an
//                                            unreachable ResourceManager again before it gives
//                                            up, yarn.resourcemanager.connect.retry-interval.ms apart
//   loom.application.hdfs-conf-path / yarn-conf-path  site files over HADOOP_CONF_DIR's
//   loom.docker.*                            YARN's Docker runtime on every task container
//                                            (docker_runtime.h)
//   loom.application.file-systems            more hdfs:// file systems (tf-yarn's file_systems;
//                                            TonY's tony.other.namenodes too) to get HDFS
//                                            delegation tokens for, besides fs.defaultFS
class YarnJobSubmitter : public Backend {
 public:
  // `conf` is the cluster's (HADOOP_CONF_DIR); `job_conf` the job's, for YARN's own keys.
  YarnJobSubmitter(hadoop::HadoopConf conf, std::string user, std::string loom_binary, config::Config job_conf);
  // For a job already submitted: its yarn.json is enough to follow and kill it; the cluster's
  // configuration, when HADOOP_CONF_DIR names one, adds its aggregated logs.
  static Result<std::unique_ptr<Backend>> ForJob(const history::JobDir& dir, const std::string& user);
  ~YarnJobSubmitter() override;

  std::string name() const override { return "yarn"; }
  Status CheckFits(const JobSpec& spec) override;
  Status Submit(const JobSpec& spec, const history::JobDir& dir) override;
  Status Sync(const history::JobDir& dir) override;
  // `cause` goes to the RM as the kill's diagnostics too, so that a client elsewhere records it.
  Status Kill(const history::JobDir& dir, std::chrono::milliseconds grace, const std::string& cause) override;
  Result<std::string> ReadLog(const history::JobDir& dir, const LogTarget& target, int64_t offset) override;
  std::vector<std::string> Describe(const history::JobDir& dir) override;
  bool LogsPerContainer() const override { return true; }

 private:
  YarnJobSubmitter();
  Result<StagingManifest> Stage(const history::JobDir& dir, const JobSpec& spec, const std::string& app_id);
  // Reloads conf_ with the job's loom.application.{hdfs,yarn}-conf-path files; InvalidArgument
  // naming the key when one is missing or malformed. Once per submit.
  Status ApplyJobSiteFiles();
  // Logs in (Kerberos when the cluster uses it: the ticket cache or the job's keytab); with
  // Kerberos the user becomes the principal's short name (KerberosShortName), for the RM, the
  // staging dir, every WebHDFS call and the job's record, said on stderr when it is not $USER.
  Status Login();
  // user_ and the staging root under /user/<user>.
  void UseUser(const std::string& user);
  // hadoop.security.authentication=kerberos: one HDFS delegation token per file system of
  // TokenFileSystems, renewer the RM (FetchHdfsDelegationTokens), into delegation_tokens_.
  // Called by CheckFits, so that nothing is staged without them.
  Status FetchDelegationTokens();
  // The NameNodes' connection options (the SIMPLE user; Kerberos is the process's).
  hadoop::IpcOptions NameNodeOptions() const;
  // Submit but for cancelling the tokens when it fails before the RM has them.
  Status SubmitOnce(const JobSpec& spec, const history::JobDir& dir);
  std::string KeyAsWritten(const std::string& canonical_key) const;
  Status SyncLocked(const history::JobDir& dir);
  // Copies the AM's events past record->am_events_offset into dir's events over the control
  // plane (one channel for the job, kept); false when the AM could not be asked.
  bool PullAmEvents(const std::string& am_address, const std::string& secret, YarnJobRecord* record,
                    const history::JobDir& dir);
  void Mirror(history::JobDir dir);
  void StopMirror();

  hadoop::HadoopConf conf_;
  bool has_conf_ = false;  // HADOOP_CONF_DIR was found (always for submit)
  bool site_files_applied_ = false;
  std::string user_;
  std::string loom_binary_;
  config::Config job_conf_;
  std::unique_ptr<hadoop::YarnLogReader> logs_;  // made on first use
  std::vector<::hadoop::yarn::NodeReportProto> nodes_;  // from CheckFits, for Stage
  std::vector<FetchedToken> delegation_tokens_;        // from CheckFits, for the AM's credentials
  bool tokens_with_rm_ = false;                        // submitApplication took them
  struct AmChannel;
  std::unique_ptr<AmChannel> am_;  // the control-plane channel to the job's AM, made on first use
  bool said_following_hdfs_ = false;
  // The AM's events said the job ended: YARN's FINISHED follows within moments (the AM
  // unregisters), so the mirror asks at its fastest until then.
  std::atomic<bool> am_ended_{false};
  std::chrono::steady_clock::time_point next_hdfs_read_;  // following the HDFS record: at most 1/s
  std::mutex sync_mu_;  // one Sync at a time in this process (the mirror and the follower)
  std::thread mirror_;
  std::atomic<bool> stop_{false};
};

// The AM container's credentials: the job secret, the forwarded credentials (alias -> value, as
// ForwardedCredentials gives them) and the HDFS delegation tokens, each under its service as
// alias (what Hadoop's clients do: K5.5).
hadoop::Credentials AmCredentials(const std::string& secret, const std::map<std::string, std::string>& forwarded,
                          const std::vector<hadoop::Token>& delegation_tokens);
// Puts `creds` in the AM's launch context and asks the RM to cancel the tokens when the
// application completes (cancel_tokens_when_complete, explicitly true).
void SetAmCredentials(::hadoop::yarn::ApplicationSubmissionContextProto* asc, const hadoop::Credentials& creds);


// Ends a YARN job's staging: the job's own files go; config.xml and history/ stay, and the
// shared binary cache is never touched. Idempotent; used by the client and the AM.
Status CleanStaging(const std::string& webhdfs, const std::string& user, const std::string& staging_dir,
                    const std::optional<hadoop::Token>& delegation = std::nullopt);

// The job's final state from an application report: (state, diagnostics), or nullopt while
// the application is not finished.
std::optional<std::pair<std::string, std::string>> FinalStateOf(const ::hadoop::yarn::ApplicationReportProto& report);

}  // namespace loom::cluster::yarn
