#include "cluster/yarn/yarn_job_import.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cluster/yarn/client_security.h"
#include "cluster/yarn/cluster_rms.h"
#include "cluster/yarn/staging.h"
#include "cluster/yarn/yarn_job_submitter.h"
#include "core/config/config.h"
#include "core/files.h"
#include "core/history_location.h"
#include "core/strings.h"
#include "hadoop/hdfs/webhdfs.h"
#include "history/job_record.h"

namespace loom::cluster::yarn {

using nlohmann::json;
namespace ypb = ::hadoop::yarn;

namespace {

// The Loom job id of an application: its loom-job:<id> tag, "" when it has none.
std::string LoomJobTag(const ypb::ApplicationReportProto& report) {
  for (const std::string& tag : report.applicationtags()) {
    if (StartsWith(tag, "loom-job:")) return tag.substr(9);
  }
  return "";
}

}  // namespace

Result<history::JobDir> ImportYarnJob(const std::string& id, std::string user) {
  if (!StartsWith(id, "application_") && !StartsWith(id, "job_")) return Status::NotFound("not a YARN or Loom job id");
  auto conf = hadoop::HadoopConf::FromEnvironment();
  if (!conf.ok()) return Status::NotFound("HADOOP_CONF_DIR is not set, so YARN was not asked");
  // A job dir here that already follows this application.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(history::LoomHome() + "/jobs", ec)) {
    history::JobDir dir(entry.path().string());
    if (auto r = YarnJobRecord::Read(dir); r.ok() && r->application_id == id) return dir;
  }
  // A Kerberized cluster: the ticket cache (no job file here names a keytab), and the user is
  // the principal's short name, as for submit.
  auto principal = LoginForCluster(*conf, config::Config{});
  if (!principal.ok()) return principal.status();
  if (!principal->empty()) user = KerberosShortName(*principal);
  hadoop::ApplicationClient rm(RmsOf(*conf), user, FailoverOf(*conf));
  // What the RM says of the application, or (it forgot it) what its record in HDFS says.
  std::string app_id, job_id, owner = user, name;
  int64_t started_ms = 0;
  if (StartsWith(id, "application_")) {
    LOOM_ASSIGN_OR_RETURN(auto app, hadoop::ParseApplicationId(id));
    auto r = rm.GetApplicationReport(app);
    if (!r.ok() && !IsApplicationNotFound(r.status())) return r.status().WithContext("asking " + conf->rm.ToString() + " about " + id);
    if (r.ok()) {
      app_id = hadoop::ApplicationIdString(r->applicationid());
      job_id = LoomJobTag(*r);
      if (!r->user().empty()) owner = r->user();
      name = r->name();
      started_ms = r->starttime();
    } else {
      // A ResourceManager restarted without a state store knows no application from before;
      // the job's record in HDFS is still there (and its aggregated logs).
      const std::string record_dir = "/user/" + user + "/.loom/" + id + "/history";
      auto job = hadoop::WebHdfs(hadoop::WebHdfsBaseList(*conf), user).Open(record_dir + "/job.json");
      if (!job.ok()) {
        if (job.status().code() == StatusCode::kNotFound) {
          return Status::NotFound("YARN does not know " + id + ", and HDFS has no record of it (" + record_dir + ")");
        }
        return job.status().WithContext("YARN does not know " + id + "; reading its record in HDFS");
      }
      json j = json::parse(*job, nullptr, false);
      if (!j.is_object() || !j.contains("job_id") || !j["job_id"].is_string()) {
        return Status::InvalidArgument(record_dir + "/job.json is not a Loom job's record");
      }
      app_id = id;
      job_id = j["job_id"].get<std::string>();
      name = j.value("name", "");
      started_ms = j.value("submitted_ms", int64_t{0});
    }
  } else {
    auto apps = rm.GetApplications({}, {"loom-job:" + id});
    if (!apps.ok()) return apps.status().WithContext("asking " + conf->rm.ToString() + " for loom-job:" + id);
    if (apps->empty()) return Status::NotFound("YARN has no application tagged loom-job:" + id);
    const ypb::ApplicationReportProto& r = apps->front();
    app_id = hadoop::ApplicationIdString(r.applicationid());
    job_id = LoomJobTag(r);
    if (!r.user().empty()) owner = r.user();
    name = r.name();
    started_ms = r.starttime();
  }
  if (job_id.empty()) return Status::NotFound(app_id + " is not a Loom job (no loom-job tag)");
  YarnJobRecord record{app_id, RmListOf(*conf), owner, "/user/" + owner + "/.loom/" + app_id,
                       hadoop::WebHdfsBaseList(*conf)};
  // The record lives in HDFS: <staging>/history/ once the job ended, job.json beside it before.
  history::JobDir dir = history::JobDir::ForJob(job_id);
  LOOM_RETURN_IF_ERROR(MakeDirs(dir.tasks_dir()));
  hadoop::WebHdfs fs(record.webhdfs, owner);
  auto fetch = [&](const std::vector<std::string>& candidates, const std::string& local) {
    for (const std::string& path : candidates) {
      if (auto bytes = fs.Open(path); bytes.ok()) return WriteFileAtomic(local, *bytes);
    }
    return Status::NotFound("none of " + Join(candidates, ", "));
  };
  (void)fetch({record.staging_dir + "/history/job.json", record.staging_dir + "/" + kJobJsonResource}, dir.job_json());
  (void)fetch({record.staging_dir + "/history/events.jsonl"}, dir.events());
  (void)fetch({record.staging_dir + "/history/metrics.jsonl"}, dir.metrics());
  (void)fetch({record.staging_dir + "/history/status.json"}, dir.status());
  if (!PathExists(dir.job_json())) {
    history::JobRecord job;
    job.job_id = job_id;
    job.name = name;
    job.user = owner;
    job.backend = "yarn";
    job.submitted_ms = started_ms;
    LOOM_RETURN_IF_ERROR(job.Write(dir));
  }
  record.imported = true;
  record.cleaned = PathExists(dir.status());
  if (!record.cleaned) {
    // Where the job's record goes when this client ends it (loom.history.location), from the
    // config it was submitted with, which the staging dir keeps.
    config::Config job_conf;
    auto xml = fs.Open(record.staging_dir + "/" + kConfigResource);
    if (xml.ok() && job_conf.MergeXmlString(*xml, record.staging_dir + "/" + kConfigResource, true).ok()) {
      if (auto location = ParseHistoryLocation(job_conf); location.ok() && location->set()) {
        record.history_location = location->path;
      }
    }
  }
  LOOM_RETURN_IF_ERROR(record.Write(dir));
  return dir;
}

}  // namespace loom::cluster::yarn
