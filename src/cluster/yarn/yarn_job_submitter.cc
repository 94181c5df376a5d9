#include "cluster/yarn/yarn_job_submitter.h"
#include "cluster/yarn/yarn_job_submitter_internal.h"

#include <fcntl.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sys/file.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cluster/yarn/capacity_check.h"
#include "cluster/yarn/cluster_rms.h"
#include "cluster/yarn/docker_runtime.h"
#include "cluster/yarn/history_publish.h"
#include "cluster/yarn/history_upload.h"
#include "cluster/yarn/job_stager.h"
#include "control/auth.h"
#include "control/control.grpc.pb.h"
#include "control/executor_env.h"
#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/forwarded_env.h"
#include "core/host_resolver.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "hadoop/hdfs/webhdfs.h"
#include "hadoop/ipc/yarn_clients.h"
#include "hadoop/logs/yarn_log_reader.h"
#include "hadoop/wire/credentials.h"
#include "hadoop/wire/ipc_frame.h"
#include "history/event_log.h"
#include "history/events.h"
#include "history/job_record.h"
#include "history/job_view.h"

namespace loom::cluster::yarn {

using nlohmann::json;
namespace ypb = ::hadoop::yarn;

namespace {

bool IsFinal(const ypb::ApplicationReportProto& report);

// A job's loom.application.hdfs-conf-path / yarn-conf-path; a relative path is taken from
// `base_dir`, where the job was submitted.
hadoop::ExtraSiteFiles JobSiteFiles(const config::Config& conf, const std::string& base_dir) {
  auto path = [&](const char* key) {
    std::string p = config::GetString(conf, key);
    if (p.empty() || p[0] == '/') return p;
    return base_dir + "/" + p;
  };
  return {path("loom.application.hdfs-conf-path"), path("loom.application.yarn-conf-path")};
}

// YarnConfiguration.APPLICATION_TYPE_LENGTH: the RM cuts a longer type to this many characters.
constexpr size_t kMaxApplicationType = 20;

}  // namespace

Status YarnJobRecord::Write(const history::JobDir& dir) const {
  json j = {{"application_id", application_id}, {"rm", rm}, {"user", user}, {"staging_dir", staging_dir},
            {"webhdfs", webhdfs}, {"am_events_offset", am_events_offset}, {"last_state", last_state},
            {"last_reason", last_reason}, {"cleaned", cleaned}, {"imported", imported}, {"submitted", submitted}};
  if (!history_location.empty()) j["history_location"] = history_location;
  return WriteFileAtomic(PathIn(dir), j.dump(2) + "\n");
}

Result<YarnJobRecord> YarnJobRecord::Read(const history::JobDir& dir) {
  LOOM_ASSIGN_OR_RETURN(std::string text, ReadFile(PathIn(dir)));
  try {
    json j = json::parse(text);
    YarnJobRecord r{j.at("application_id").get<std::string>(), j.at("rm").get<std::string>(),
                    j.at("user").get<std::string>(), j.value("staging_dir", ""), j.value("webhdfs", "")};
    r.am_events_offset = history::EventInt(j, "am_events_offset", 0, 0, int64_t{1} << 50);
    r.last_state = j.value("last_state", "");
    r.last_reason = j.value("last_reason", "");
    r.cleaned = j.value("cleaned", false);
    r.imported = j.value("imported", false);
    r.submitted = j.value("submitted", true);
    r.history_location = j.value("history_location", "");
    return r;
  } catch (const json::exception& e) {
    return Status::InvalidArgument(PathIn(dir) + " is malformed: " + e.what());
  }
}

std::optional<std::pair<std::string, std::string>> FinalStateOf(const ypb::ApplicationReportProto& report) {
  std::string diag = report.diagnostics();
  switch (report.yarn_application_state()) {
    case ypb::FINISHED:
      if (report.final_application_status() == ypb::APP_SUCCEEDED) return std::make_pair("SUCCEEDED", diag);
      if (report.final_application_status() == ypb::APP_KILLED) return std::make_pair("KILLED", diag);
      return std::make_pair("FAILED", diag);
    case ypb::FAILED:
      return std::make_pair("FAILED", diag);
    case ypb::KILLED:
      return std::make_pair("KILLED", diag);
    default:
      return std::nullopt;
  }
}

namespace {
bool IsFinal(const ypb::ApplicationReportProto& report) { return FinalStateOf(report).has_value(); }
}  // namespace

Status CleanStaging(const std::string& webhdfs, const std::string& user, const std::string& staging_dir,
                    const std::optional<hadoop::Token>& delegation) {
  if (webhdfs.empty() || staging_dir.empty()) return Status::Ok();
  hadoop::WebHdfs fs(webhdfs, user);
  if (delegation) fs.UseDelegationToken(*delegation);
  Status result = Status::Ok();
  // The job's own files only: the shared `loom` binary lives in the cache dir, outside
  // staging_dir, for the next job; config.xml and history/ stay as the job's record.
  std::vector<std::string> names = {kSrcArchiveFile, kManifestResource, kJobJsonResource};
  names.insert(names.end(), std::begin(kVenvFiles), std::end(kVenvFiles));
  for (const std::string& name : names) {
    auto deleted = fs.Delete(hadoop::JoinHdfsPath(staging_dir, name), false);
    if (!deleted.ok()) result = deleted.status();
  }
  return result;
}

YarnJobSubmitter::YarnJobSubmitter() = default;

YarnJobSubmitter::YarnJobSubmitter(hadoop::HadoopConf conf, std::string user, std::string loom_binary, config::Config job_conf)
    : conf_(std::move(conf)),
      has_conf_(true),
      user_(std::move(user)),
      loom_binary_(std::move(loom_binary)),
      job_conf_(std::move(job_conf)) {}

Result<std::unique_ptr<Backend>> YarnJobSubmitter::ForJob(const history::JobDir& dir, const std::string& user) {
  LOOM_ASSIGN_OR_RETURN(YarnJobRecord record, YarnJobRecord::Read(dir));
  std::unique_ptr<YarnJobSubmitter> b(new YarnJobSubmitter());
  b->user_ = record.user.empty() ? user : record.user;
  if (auto conf = hadoop::HadoopConf::FromEnvironment(); conf.ok()) {
    b->conf_ = std::move(*conf);
    b->has_conf_ = true;
    // The site files the job named at submit, for what only they may say (where its logs are
    // aggregated); one that is gone since leaves HADOOP_CONF_DIR's.
    config::Config job_conf;
    auto job = history::JobRecord::Read(dir);
    bool have_job_conf = job_conf.MergeXmlFile(dir.config(), /*recorded_sources=*/true).ok();
    // Kerberos before anything is asked, with the keytab keys the job was submitted with. The
    // record names the user the job was submitted as (the principal's short name, Login).
    LOOM_ASSIGN_OR_RETURN(std::string principal, LoginForCluster(b->conf_, job_conf));
    if (record.user.empty() && !principal.empty()) b->UseUser(KerberosShortName(principal));
    if (have_job_conf && job.ok()) {
      hadoop::ExtraSiteFiles extra = JobSiteFiles(job_conf, job->cwd);
      if (!extra.hdfs_site.empty() || !extra.yarn_site.empty()) {
        if (auto with = hadoop::HadoopConf::Load(b->conf_.conf_dir, extra); with.ok()) b->conf_ = std::move(*with);
      }
    }
  }
  return std::unique_ptr<Backend>(std::move(b));
}

YarnJobSubmitter::~YarnJobSubmitter() { StopMirror(); }

void YarnJobSubmitter::StopMirror() {
  stop_ = true;
  if (mirror_.joinable()) mirror_.join();
}

std::string YarnJobSubmitter::KeyAsWritten(const std::string& canonical_key) const {
  return config::Spelled(job_conf_, canonical_key);
}

Status YarnJobSubmitter::ApplyJobSiteFiles() {
  if (site_files_applied_) return Status::Ok();
  site_files_applied_ = true;
  hadoop::ExtraSiteFiles extra = JobSiteFiles(job_conf_, AbsolutePath("."));
  if (extra.hdfs_site.empty() && extra.yarn_site.empty()) return Status::Ok();
  std::vector<std::string> named;
  using Named = std::pair<std::string, std::string>;  // key, file
  for (const auto& [key, file] : {Named{"loom.application.hdfs-conf-path", extra.hdfs_site},
                                  Named{"loom.application.yarn-conf-path", extra.yarn_site}}) {
    if (file.empty()) continue;
    named.push_back(KeyAsWritten(key) + "=" + config::GetString(job_conf_, key));
    if (!PathExists(file) || IsDirectory(file)) {
      return Status::InvalidArgument(named.back() + ": " + file +
                                     " is not a file (a site file read over HADOOP_CONF_DIR's)");
    }
  }
  auto conf = hadoop::HadoopConf::Load(conf_.conf_dir, extra);
  if (!conf.ok()) return Status::InvalidArgument(Join(named, ", ") + ": " + conf.status().message());
  conf_ = std::move(*conf);
  return Status::Ok();
}

hadoop::Credentials AmCredentials(const std::string& secret, const std::map<std::string, std::string>& forwarded,
                          const std::vector<hadoop::Token>& delegation_tokens) {
  hadoop::Credentials creds;
  for (const hadoop::Token& t : delegation_tokens) creds.tokens.emplace_back(t.service, t);
  creds.secrets.push_back({kSecretCredentialAlias, secret});
  // The forwarded credentials (MLFLOW_TRACKING_TOKEN, ...): never in config.xml or HDFS.
  for (const auto& [name, value] : forwarded) creds.secrets.push_back({kSecretEnvAliasPrefix + name, value});
  return creds;
}

void SetAmCredentials(ypb::ApplicationSubmissionContextProto* asc, const hadoop::Credentials& creds) {
  asc->mutable_am_container_spec()->set_tokens(hadoop::SerializeCredentials(creds));
  // The RM's default, but said explicitly, as the issue asks: the tokens die with the job.
  asc->set_cancel_tokens_when_complete(true);
}

hadoop::IpcOptions YarnJobSubmitter::NameNodeOptions() const {
  hadoop::IpcOptions base;
  base.user = user_;
  base.call_timeout = std::chrono::milliseconds(30000);
  return base;
}

Status YarnJobSubmitter::Login() {
  LOOM_ASSIGN_OR_RETURN(std::string principal, LoginForCluster(conf_, job_conf_));
  if (principal.empty()) return Status::Ok();
  // The NameNode (WebHDFS's user.name must be the authenticated short name) and the RM (the
  // application's user) both know the user by the principal's short name, not by $USER.
  std::string short_name = KerberosShortName(principal);
  if (short_name != user_) {
    std::fprintf(stderr, "loom: running as %s, the short name of the Kerberos principal %s (not $USER=%s)\n",
                 short_name.c_str(), principal.c_str(), user_.c_str());
  }
  UseUser(short_name);
  return Status::Ok();
}

void YarnJobSubmitter::UseUser(const std::string& user) {
  user_ = user;
}

Status YarnJobSubmitter::FetchDelegationTokens() {
  delegation_tokens_.clear();
  LOOM_ASSIGN_OR_RETURN(std::vector<TokenFileSystem> systems, TokenFileSystems(conf_, job_conf_));
  if (systems.empty()) return Status::Ok();
  if (Trim(conf_.rm_principal).empty()) {
    return Status::InvalidArgument("yarn.resourcemanager.principal is not set in " + conf_.conf_dir +
                                   ": HDFS delegation tokens name the ResourceManager as their renewer");
  }
  std::string renewer = hadoop::RenewerPrincipal(conf_.rm_principal, conf_.rm.host);
  auto site = hadoop::LoadHdfsSiteProperties(conf_.conf_dir, JobSiteFiles(job_conf_, AbsolutePath(".")).hdfs_site);
  if (!site.ok()) return Status::InvalidArgument(site.status().message());
  LOOM_ASSIGN_OR_RETURN(delegation_tokens_, FetchHdfsDelegationTokens(systems, *site, NameNodeOptions(), renewer));
  return Status::Ok();
}

Status YarnJobSubmitter::CheckFits(const JobSpec& spec) {
  LOOM_RETURN_IF_ERROR(ApplyJobSiteFiles());
  LOOM_RETURN_IF_ERROR(Login());
  // The token keys' values before anything is asked (the tokens themselves come last).
  LOOM_RETURN_IF_ERROR(TokenFileSystems(conf_, job_conf_).status());
  LOOM_RETURN_IF_ERROR(CheckHistoryLocation(spec.history_location, conf_, KeyAsWritten("loom.history.location")));
  const hadoop::HadoopConf& conf = conf_;
  for (const TaskTypeSpec& t : spec.types) {
    if (!t.extra_files.empty()) {
      return Status::Unimplemented("loom." + t.name + ".resources is not supported on the yarn backend yet");
    }
  }
  LOOM_RETURN_IF_ERROR(CheckDockerSpec(spec, [this](const std::string& k) { return KeyAsWritten(k); }));
  std::string app_type = config::GetString(job_conf_, "loom.application.type");
  if (app_type.empty() || app_type.size() > kMaxApplicationType) {
    return Status::InvalidArgument(KeyAsWritten("loom.application.type") + "='" + app_type +
                                   "': YARN keeps an application type of 1 to " + std::to_string(kMaxApplicationType) +
                                   " characters" +
                                   (app_type.empty() ? "" : " (it would cut this one to '" +
                                                                app_type.substr(0, kMaxApplicationType) + "')"));
  }
  hadoop::ApplicationClient rm(RmsOf(conf), user_, FailoverOf(conf));
  auto unreachable = [&](const Status& s, const std::string& what) {
    return Status::Unavailable("asking the ResourceManager at " + conf.rm.ToString() + " for " + what + ": " + s.message());
  };
  // The queue first: an unknown one is the user's to fix, before anything is staged. It is
  // also the first call: a ResourceManager that does not answer (restarting, failing over) is
  // tried again, as YarnClient does (TonY's num-client-rm-connect-retries).
  std::string queue_name = config::GetString(job_conf_, "loom.yarn.queue");
  const int64_t retries = config::GetInt(job_conf_, "loom.application.num-client-rm-connect-retries");
  auto queue = rm.GetQueueInfo(queue_name);
  for (int64_t retry = 1; !queue.ok() && queue.status().code() == StatusCode::kUnavailable && retry <= retries;
       ++retry) {
    std::fprintf(stderr, "loom: the ResourceManager at %s does not answer (%s); trying again in %lld ms (%lld of %lld, %s)\n",
                 conf.rm.ToString().c_str(), queue.status().message().c_str(),
                 static_cast<long long>(conf.rm_connect_retry_interval_ms), static_cast<long long>(retry),
                 static_cast<long long>(retries),
                 KeyAsWritten("loom.application.num-client-rm-connect-retries").c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(conf.rm_connect_retry_interval_ms));
    queue = rm.GetQueueInfo(queue_name);
  }
  if (!queue.ok()) {
    if (queue.status().code() == StatusCode::kNotFound) {
      return Status::InvalidArgument(KeyAsWritten("loom.yarn.queue") + "=" + queue_name + ": " + queue.status().message());
    }
    // Kerberos refused by the RM (wrong service principal, QOP): the user's to fix, as a
    // missing ticket is.
    if (queue.status().code() == StatusCode::kInvalidArgument || queue.status().code() == StatusCode::kUnauthenticated) {
      return Status::InvalidArgument("asking the ResourceManager at " + conf.rm.ToString() + ": " + queue.status().message());
    }
    Status s = unreachable(queue.status(), "queue " + queue_name);
    if (queue.status().code() != StatusCode::kUnavailable) return s;
    return s.WithContext(std::to_string(retries + 1) + " tries, " + std::to_string(conf.rm_connect_retry_interval_ms) +
                         " ms apart (" + KeyAsWritten("loom.application.num-client-rm-connect-retries") + "=" +
                         std::to_string(retries) + ", yarn.resourcemanager.connect.retry-interval.ms)");
  }
  auto nodes = rm.GetClusterNodes();
  // Right after a restart the RM knows no NodeManager until they register again, each within
  // its yarn.resourcemanager.connect.retry-interval.ms (30 s by default): wait, bounded.
  constexpr auto kNodeManagerWait = std::chrono::seconds(60);
  const auto waiting_since = std::chrono::steady_clock::now();
  for (bool said = false;
       nodes.ok() && !HasRunningNode(*nodes) && std::chrono::steady_clock::now() - waiting_since < kNodeManagerWait;
       said = true) {
    if (!said) {
      std::fprintf(stderr,
                   "loom: the ResourceManager at %s has no running NodeManager (just restarted?); waiting up to %lld s "
                   "for them to register\n",
                   conf.rm.ToString().c_str(), static_cast<long long>(kNodeManagerWait.count()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    nodes = rm.GetClusterNodes();
  }
  if (!nodes.ok()) return unreachable(nodes.status(), "its nodes");
  nodes_ = *nodes;  // the AM places the gang from this snapshot (Stage)
  CapacityRules rules;
  rules.min_allocation_mb = conf.min_allocation_mb;
  LOOM_RETURN_IF_ERROR(CheckJobFits(spec, *nodes, *queue, rules));
  // Last: the job fits, so these tokens will be used. Before anything is staged (Submit).
  return FetchDelegationTokens();
}

Result<StagingManifest> YarnJobSubmitter::Stage(const history::JobDir& dir, const JobSpec& spec,
                                                 const std::string& app_id) {
  StagingManifest m;
  m.fs_scheme = conf_.fs_scheme;
  m.fs_host = conf_.fs_host;
  m.fs_port = conf_.fs_port;
  m.webhdfs = hadoop::WebHdfsBaseList(conf_);
  m.nm_web_scheme = conf_.nm_web_scheme;
  m.user = user_;
  m.dir = StagingRoot(user_) + "/" + app_id;
  m.scheduler = hadoop::HostPortListString(conf_.schedulers.empty() ? std::vector<hadoop::HostPort>{conf_.scheduler} : conf_.schedulers);
  m.rm_failover_max_attempts = conf_.rm_failover_max_attempts;
  m.rm_failover_sleep_base_ms = conf_.rm_failover_sleep_base_ms;
  m.rm_failover_sleep_max_ms = conf_.rm_failover_sleep_max_ms;
  m.application_id = app_id;
  // The nodes as the RM reported them at submit: the AM asks for each task on one of them
  // (node-local asks), so that a gang lands in one heartbeat per node.
  m.nodes = ManifestNodes(nodes_);
  // loom.docker.*: the AM asks for each type's image on its containers (CheckFits checked them).
  if (spec.docker_enabled) {
    for (const TaskTypeSpec& t : spec.types) m.docker_images[t.name] = t.docker_image;
    m.docker_mounts = spec.docker_mounts;
  }
  LOOM_RETURN_IF_ERROR(StageJob(dir, spec, loom_binary_, StagingRoot(user_) + "/cache", &m));
  return m;
}

Status YarnJobSubmitter::Submit(const JobSpec& spec, const history::JobDir& dir) {
  Status s = SubmitOnce(spec, dir);
  if (!s.ok() && !tokens_with_rm_ && !delegation_tokens_.empty()) {
    // Fetched for this submission alone; the RM, which would cancel them with the application,
    // never got them.
    int n = CancelDelegationTokens(delegation_tokens_, NameNodeOptions());
    std::fprintf(stderr, "loom: cancelled %d of the %zu HDFS delegation tokens fetched for the failed submission\n", n,
                 delegation_tokens_.size());
    delegation_tokens_.clear();
  }
  return s;
}

Status YarnJobSubmitter::SubmitOnce(const JobSpec& spec, const history::JobDir& dir) {
  const hadoop::HadoopConf& hconf = conf_;
  const config::Config& conf = job_conf_;
  LOOM_ASSIGN_OR_RETURN(std::string secret, control::ReadSecretFile(dir.secret()));
  hadoop::ApplicationClient rm(RmsOf(hconf), user_, FailoverOf(hconf));
  LOOM_ASSIGN_OR_RETURN(auto fresh, rm.GetNewApplication());
  const ypb::ApplicationIdProto& app = fresh.application_id();
  std::string app_id = hadoop::ApplicationIdString(app);
  // RM HA: the record keeps every RM ("h1:8032,h2:8032") and every NameNode's WebHDFS base.
  YarnJobRecord record{app_id, RmListOf(hconf),
                       user_, StagingRoot(user_) + "/" + app_id, hadoop::WebHdfsBaseList(hconf)};
  record.submitted = false;
  if (spec.history_location.set()) record.history_location = spec.history_location.path;
  LOOM_RETURN_IF_ERROR(record.Write(dir));
  auto staged = Stage(dir, spec, app_id);
  if (!staged.ok()) {
    (void)CleanStaging(record.webhdfs, user_, record.staging_dir);
    return staged.status().WithContext("staging " + app_id + " through WebHDFS at " + record.webhdfs);
  }

  ypb::ApplicationSubmissionContextProto asc;
  *asc.mutable_application_id() = app;
  asc.set_application_name(spec.name);
  asc.set_queue(config::GetString(conf, "loom.yarn.queue"));
  asc.mutable_priority()->set_priority(0);
  asc.set_applicationtype(config::GetString(conf, "loom.application.type"));  // 1-20 characters (CheckFits)
  asc.set_maxappattempts(1);  // the AM restarts the gang itself (loom.am.retry-count)
  asc.set_keep_containers_across_application_attempts(false);
  asc.add_applicationtags("loom");
  asc.add_applicationtags("loom-job:" + dir.job_id());
  for (const std::string& tag : config::GetList(conf, "loom.application.tags")) asc.add_applicationtags(tag);
  std::string app_label = config::GetString(conf, "loom.application.node-label");
  if (!app_label.empty()) asc.set_node_label_expression(app_label);
  *asc.mutable_resource() = ToYarnResource(spec.am_resources);
  auto* am_ask = asc.add_am_container_resource_request();
  am_ask->mutable_priority()->set_priority(0);
  am_ask->set_resource_name("*");
  *am_ask->mutable_capability() = ToYarnResource(spec.am_resources);
  am_ask->set_num_containers(1);
  am_ask->set_relax_locality(true);
  std::string am_label = config::GetString(conf, "loom.am.node-label");
  if (am_label.empty()) am_label = app_label;
  if (!am_label.empty()) am_ask->set_node_label_expression(am_label);

  auto* clc = asc.mutable_am_container_spec();
  for (const auto& [name, resource] : staged->AmResources()) {
    auto* entry = clc->add_localresources();
    entry->set_key(name);
    *entry->mutable_value() = resource;
  }
  // The secret, the forwarded credentials and the HDFS delegation tokens ride in the AM's
  // credentials (the RM adds its AMRMToken beside them); the NodeManager keeps them only as
  // long as the container.
  std::vector<hadoop::Token> tokens;
  for (const FetchedToken& t : delegation_tokens_) tokens.push_back(t.token);
  SetAmCredentials(&asc, AmCredentials(secret, ForwardedCredentials(CurrentEnvironment()), tokens));
  auto add_env = [&](const std::string& k, const std::string& v) {
    auto* e = clc->add_environment();
    e->set_key(k);
    e->set_value(v);
  };
  add_env(control::kJobIdEnv, dir.job_id());
  add_env(kStagedFilesEnv, EncodeStagedFiles(staged->files));
  add_env("MALLOC_ARENA_MAX", "2");  // a small virtual size too, for NodeManagers that check it
  if (const char* tz = std::getenv("TZ")) add_env("TZ", tz);
  // Fault-injection hooks (core/test_hooks.h) reach the AM as they reach a local one.
  for (const auto& [k, v] : CurrentEnvironment()) {
    if (StartsWith(k, "LOOM_TEST_")) add_env(k, v);
  }
  // The NodeManager joins the commands with spaces into `bash -c`; <LOG_DIR> is its to expand.
  clc->add_command("./" + std::string(kLoomBinaryResource) + " am --backend yarn --job-dir loom-job");
  clc->add_command("1><LOG_DIR>/am.log 2>&1");

  Status submitted = rm.SubmitApplication(asc);
  tokens_with_rm_ = submitted.ok();  // from here on the RM renews and cancels them
  if (!submitted.ok()) {
    (void)CleanStaging(record.webhdfs, user_, record.staging_dir);
    return submitted.WithContext("submitting " + app_id + " to " + hconf.rm.ToString());
  }
  record.submitted = true;
  LOOM_RETURN_IF_ERROR(record.Write(dir));
  (void)history::EventLog(dir.events())
      .Append(history::events::kBackendSubmitted, {{"backend", "yarn"}, {"id", app_id}, {"where", record.rm}});
  stop_ = false;
  mirror_ = std::thread([this, dir] { Mirror(dir); });
  return Status::Ok();
}

Status YarnJobSubmitter::Kill(const history::JobDir& dir, std::chrono::milliseconds grace, const std::string& cause) {
  LOOM_ASSIGN_OR_RETURN(YarnJobRecord record, YarnJobRecord::Read(dir));
  if (!cause.empty() && !PathExists(dir.status())) (void)history::RecordKillCause(dir, cause);
  std::string first = history::KillCause(dir);
  LOOM_ASSIGN_OR_RETURN(std::vector<hadoop::HostPort> rm_addrs, hadoop::ParseHostPortList(record.rm));
  LOOM_ASSIGN_OR_RETURN(auto app, hadoop::ParseApplicationId(record.application_id));
  hadoop::ApplicationClient rm(RmsOf(rm_addrs), record.user, has_conf_ ? FailoverOf(conf_) : hadoop::FailoverSettings{});
  // As `yarn application -kill`: forceKillApplication until the RM says the kill is complete,
  // then the report must say the application ended.
  auto deadline = std::chrono::steady_clock::now() + std::max(grace, std::chrono::milliseconds(5000));
  Status last = Status::Ok();
  bool ended = false;
  while (std::chrono::steady_clock::now() < deadline) {
    auto report = rm.GetApplicationReport(app);
    if (report.ok() && IsFinal(*report)) {
      ended = true;
      break;
    }
    auto done = rm.KillApplication(app, first.empty() ? cause : first);
    if (!done.ok()) last = done.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (!ended) {
    return (last.ok() ? Status::DeadlineExceeded("the ResourceManager did not confirm the kill") : last)
        .WithContext("killing " + record.application_id);
  }
  return Sync(dir);  // the final status, the tasks' rows, the history and the clean staging
}

Result<std::string> YarnJobSubmitter::ReadLog(const history::JobDir& dir, const LogTarget& target, int64_t offset) {
  LOOM_ASSIGN_OR_RETURN(YarnJobRecord record, YarnJobRecord::Read(dir));
  LOOM_ASSIGN_OR_RETURN(history::JobView view, history::LoadJobView(dir));
  hadoop::ContainerLogLocation where;
  if (target.task) {
    history::TaskView* t = view.FindTask(target.task->ToString());
    where = {t->container, t->node_id, t->node_http};
    if (!target.container.empty()) {
      auto past = std::find_if(t->earlier.begin(), t->earlier.end(),
                               [&](const history::PastContainer& p) { return p.container == target.container; });
      if (past == t->earlier.end()) return Status::NotFound(target.Label() + " never ran in " + target.container);
      where = {past->container, past->node_id, past->node_http};
    }
  } else {
    where = {view.am_container, view.am_node_id, view.am_node_http};
  }
  if (where.container_id.empty()) {
    return Status::NotFound(target.Label() + " has no container yet" +
                            (record.last_reason.empty() ? "" : " (" + record.last_reason + ")"));
  }
  // Without HADOOP_CONF_DIR the NodeManagers still answer; only aggregated logs need it.
  if (!logs_) logs_ = std::make_unique<hadoop::YarnLogReader>(conf_, record.user);
  LOOM_ASSIGN_OR_RETURN(hadoop::LogChunk chunk, logs_->ReadFrom(record.application_id, where, target.file, offset));
  if (chunk.offset != offset) return Status::Aborted(target.file + " of " + where.container_id + " was replaced");
  return std::move(chunk.bytes);
}

std::vector<std::string> YarnJobSubmitter::Describe(const history::JobDir& dir) {
  std::vector<std::string> lines;
  auto record = YarnJobRecord::Read(dir);
  if (!record.ok()) return lines;
  auto view = history::LoadJobView(dir);
  std::string line = "YARN application " + record->application_id + " (" + record->rm + ")";
  if (!record->last_state.empty()) line += " " + record->last_state;
  lines.push_back(line);
  if (!record->last_reason.empty()) lines.push_back("waiting: " + record->last_reason);
  if (view.ok() && !view->tracking_url.empty() && !view->final) lines.push_back("tracking URL: " + view->tracking_url);
  return lines;
}

}  // namespace loom::cluster::yarn
