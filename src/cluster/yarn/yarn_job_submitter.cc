#include "cluster/yarn/yarn_job_submitter.h"

#include <fcntl.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cluster/yarn/hdfs/webhdfs.h"
#include "cluster/yarn/rpc/yarn_clients.h"
#include "control/auth.h"
#include "control/control.grpc.pb.h"
#include "core/config/key_registry.h"
#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "history/event_log.h"
#include "history/job_view.h"

namespace loom::cluster::yarn {

using nlohmann::json;
namespace ypb = ::hadoop::yarn;

namespace {

std::string JoinPath(const std::string& dir, const std::string& name) { return dir + "/" + name; }

// One write(2) on O_APPEND: whole lines, never interleaved with the client's own events.
Status AppendBytes(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("open " + path, errno);
  ssize_t n = ::write(fd, bytes.data(), bytes.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(bytes.size())) return Status::FromErrno("append to " + path, err);
  return Status::Ok();
}

}  // namespace

Status YarnJobRecord::Write(const history::JobDir& dir) const {
  json j = {{"application_id", application_id}, {"rm", rm}, {"user", user}, {"staging_dir", staging_dir},
            {"webhdfs", webhdfs}};
  return WriteFileAtomic(PathIn(dir), j.dump(2) + "\n");
}

Result<YarnJobRecord> YarnJobRecord::Read(const history::JobDir& dir) {
  LOOM_ASSIGN_OR_RETURN(std::string text, ReadFile(PathIn(dir)));
  try {
    json j = json::parse(text);
    return YarnJobRecord{j.at("application_id").get<std::string>(), j.at("rm").get<std::string>(),
                         j.at("user").get<std::string>(), j.value("staging_dir", ""), j.value("webhdfs", "")};
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

Status CleanStaging(const std::string& webhdfs, const std::string& user, const std::string& staging_dir,
                    const history::JobDir* history_from) {
  if (webhdfs.empty() || staging_dir.empty()) return Status::Ok();
  WebHdfs fs(webhdfs, user);
  if (history_from) {
    (void)fs.Mkdirs(staging_dir + "/history", "700");
    for (const std::string& f : {history_from->events(), history_from->status()}) {
      if (PathExists(f)) (void)fs.Upload(f, staging_dir + "/history/" + f.substr(f.rfind('/') + 1), "600");
    }
  }
  Status result = Status::Ok();
  for (const char* name : {kLoomBinaryResource, kSecretResource, "src.zip", "venv.zip", kManifestResource,
                           kJobJsonResource}) {
    auto deleted = fs.Delete(JoinPath(staging_dir, name), false);
    if (!deleted.ok()) result = deleted.status();
  }
  return result;
}

YarnJobSubmitter::YarnJobSubmitter(HadoopConf conf, std::string user, std::string loom_binary, config::Config job_conf)
    : conf_(std::move(conf)), user_(std::move(user)), loom_binary_(std::move(loom_binary)), job_conf_(std::move(job_conf)) {}

YarnJobSubmitter::~YarnJobSubmitter() { StopMirror(); }

void YarnJobSubmitter::StopMirror() {
  stop_ = true;
  if (mirror_.joinable()) mirror_.join();
}

Status YarnJobSubmitter::CheckFits(const JobSpec& spec) const {
  ApplicationClient rm(conf_.rm.host, conf_.rm.port, user_);
  auto nodes = rm.GetClusterNodes();
  if (!nodes.ok()) {
    return nodes.status().WithContext("asking the ResourceManager at " + conf_.rm.ToString() + " for its nodes");
  }
  if (nodes->empty()) return Status::FailedPrecondition("the YARN cluster at " + conf_.rm.ToString() + " has no running NodeManager");
  auto fits_somewhere = [&](const Resources& r) {
    for (const auto& n : *nodes) {
      const auto& cap = n.capability();
      if (cap.memory() >= r.memory_mib && cap.virtual_cores() >= r.vcores && GpusOf(cap) >= r.gpus) return true;
    }
    return false;
  };
  std::string largest;
  for (const auto& n : *nodes) {
    largest += (largest.empty() ? "" : ", ") + NodeIdString(n.nodeid()) + " " + std::to_string(n.capability().memory()) +
               " MiB/" + std::to_string(n.capability().virtual_cores()) + " vcores/" +
               std::to_string(GpusOf(n.capability())) + " GPUs";
  }
  if (!fits_somewhere(spec.am_resources)) {
    return Status::ResourceExhausted("the AM needs " + spec.am_resources.ToString() +
                                     " but no YARN node is that large (" + largest + ")");
  }
  for (const TaskTypeSpec& t : spec.types) {
    if (!fits_somewhere(t.resources)) {
      return Status::ResourceExhausted("a " + t.name + " task needs " + t.resources.ToString() +
                                       " but no YARN node is that large (" + largest + ")");
    }
  }
  return Status::Ok();
}

Result<StagingManifest> YarnJobSubmitter::Stage(const history::JobDir& dir, const JobSpec& spec,
                                                 const std::string& app_id) {
  StagingManifest m;
  m.fs_scheme = conf_.fs_scheme;
  m.fs_host = conf_.fs_host;
  m.fs_port = conf_.fs_port;
  m.webhdfs = "http://" + conf_.namenode_http.ToString();
  m.user = user_;
  m.dir = conf_.staging_dir + "/" + app_id;
  m.scheduler = conf_.scheduler.ToString();
  m.application_id = app_id;
  WebHdfs fs(m.webhdfs, user_);
  LOOM_RETURN_IF_ERROR(fs.Mkdirs(m.dir, "700").WithContext("creating the staging dir " + m.dir));
  auto upload = [&](const std::string& local, const std::string& name, const std::string& hdfs_name, bool archive,
                    const std::string& perm) -> Status {
    LOOM_ASSIGN_OR_RETURN(HdfsFileStatus st, fs.Upload(local, JoinPath(m.dir, hdfs_name), perm));
    m.files[name] = {JoinPath(m.dir, hdfs_name), st.length, st.modification_time, archive};
    return Status::Ok();
  };
  LOOM_RETURN_IF_ERROR(upload(loom_binary_, kLoomBinaryResource, kLoomBinaryResource, false, "700"));
  LOOM_RETURN_IF_ERROR(upload(dir.secret(), kSecretResource, kSecretResource, false, "600"));
  LOOM_RETURN_IF_ERROR(upload(dir.config(), kConfigResource, kConfigResource, false, "600"));
  LOOM_RETURN_IF_ERROR(upload(dir.job_json(), kJobJsonResource, kJobJsonResource, false, "600"));
  if (!spec.src_dir.empty()) {
    std::string zip = dir.root() + "/src.zip";
    // The directory's contents, not the directory: the NodeManager unpacks it as loom-src/.
    LOOM_RETURN_IF_ERROR(RunTool({"zip", "-q", "-r", "-X", "-y", zip, "."}, spec.src_dir));
    Status s = upload(zip, kSrcResource, "src.zip", true, "600");
    ::unlink(zip.c_str());
    LOOM_RETURN_IF_ERROR(s);
  }
  if (!spec.python_venv.empty()) LOOM_RETURN_IF_ERROR(upload(spec.python_venv, kVenvResource, "venv.zip", true, "600"));
  for (const TaskTypeSpec& t : spec.types) {
    if (!t.extra_files.empty()) {
      return Status::Unimplemented("loom." + t.name + ".resources is not supported on the yarn backend yet");
    }
  }
  LOOM_ASSIGN_OR_RETURN(HdfsFileStatus st, fs.Create(JoinPath(m.dir, kManifestResource), m.ToJson().dump(2), "600"));
  m.files[kManifestResource] = {JoinPath(m.dir, kManifestResource), st.length, st.modification_time, false};
  return m;
}

Status YarnJobSubmitter::Submit(const history::JobDir& dir) {
  config::Config conf;
  LOOM_RETURN_IF_ERROR(conf.MergeXmlFile(dir.config()));
  LOOM_ASSIGN_OR_RETURN(JobSpec spec, BuildJobSpec(conf, AbsolutePath("."), /*check_files=*/false));
  ApplicationClient rm(conf_.rm.host, conf_.rm.port, user_);
  LOOM_ASSIGN_OR_RETURN(auto fresh, rm.GetNewApplication());
  const ypb::ApplicationIdProto& app = fresh.application_id();
  std::string app_id = ApplicationIdString(app);
  YarnJobRecord record{app_id, conf_.rm.ToString(), user_, conf_.staging_dir + "/" + app_id,
                       "http://" + conf_.namenode_http.ToString()};
  LOOM_RETURN_IF_ERROR(record.Write(dir));
  auto staged = Stage(dir, spec, app_id);
  if (!staged.ok()) {
    (void)CleanStaging(record.webhdfs, user_, record.staging_dir, nullptr);
    return staged.status().WithContext("staging " + app_id + " through WebHDFS at " + record.webhdfs);
  }

  ypb::ApplicationSubmissionContextProto asc;
  *asc.mutable_application_id() = app;
  asc.set_application_name(spec.name);
  asc.set_queue(config::GetString(conf, "loom.yarn.queue"));
  asc.mutable_priority()->set_priority(0);
  asc.set_applicationtype("LOOM");
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
  for (const auto& [name, f] : staged->files) {
    auto* entry = clc->add_localresources();
    entry->set_key(name);
    *entry->mutable_value() = staged->ToLocalResource(f);
  }
  auto add_env = [&](const std::string& k, const std::string& v) {
    auto* e = clc->add_environment();
    e->set_key(k);
    e->set_value(v);
  };
  add_env("LOOM_JOB_ID", dir.job_id());
  add_env(control::kSecretFileEnv, kSecretResource);
  add_env("LOOM_LOG_DIR", "<LOG_DIR>");
  if (const char* tz = std::getenv("TZ")) add_env("TZ", tz);
  // The NodeManager joins the commands with spaces into `bash -c`; <LOG_DIR> is its to expand.
  clc->add_command("./" + std::string(kLoomBinaryResource) + " am --backend yarn --job-dir loom-job");
  clc->add_command("1><LOG_DIR>/am.log 2>&1");

  Status submitted = rm.SubmitApplication(asc);
  if (!submitted.ok()) {
    (void)CleanStaging(record.webhdfs, user_, record.staging_dir, nullptr);
    return submitted.WithContext("submitting " + app_id + " to " + conf_.rm.ToString());
  }
  (void)history::EventLog(dir.events()).Append("YARN_SUBMITTED", {{"application_id", app_id}, {"rm", record.rm}});
  stop_ = false;
  mirror_ = std::thread([this, dir, record] { Mirror(dir, record); });
  return Status::Ok();
}

void YarnJobSubmitter::Mirror(history::JobDir dir, YarnJobRecord record) {
  auto rm_addr = ParseHostPort(record.rm);
  if (!rm_addr.ok()) return;
  auto app = ParseApplicationId(record.application_id);
  if (!app.ok()) return;
  ApplicationClient rm(rm_addr->host, rm_addr->port, record.user);
  auto secret = control::ReadSecretFile(dir.secret());
  std::unique_ptr<control::Control::Stub> stub;
  std::string am_address;
  int64_t offset = 0;
  std::string last_state;
  history::EventLog local(dir.events());
  // Appends the AM's new events to the local events.jsonl (which `loom submit` follows).
  auto pull_events = [&]() -> bool {
    if (!stub || !secret.ok()) return false;
    grpc::ClientContext ctx;
    ctx.AddMetadata(control::kSecretMetadataKey, *secret);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    control::JobStateRequest req;
    req.set_events_offset(offset);
    control::JobStateResponse resp;
    if (!stub->JobState(&ctx, req, &resp).ok() || resp.events().empty()) return false;
    if (!AppendBytes(dir.events(), resp.events()).ok()) return false;
    offset = resp.events_end();
    return true;
  };
  while (!stop_) {
    auto report = rm.GetApplicationReport(*app);
    if (report.ok()) {
      std::string state = ypb::YarnApplicationStateProto_Name(report->yarn_application_state());
      if (state != last_state) {
        last_state = state;
        (void)local.Append("YARN_STATE", {{"application_id", record.application_id}, {"state", state},
                                          {"tracking_url", report->trackingurl()}, {"diagnostics", report->diagnostics()}});
      }
      if (!stub && report->rpc_port() > 0 && report->host() != "N/A" && !report->host().empty()) {
        std::string host = report->host();
        if (size_t slash = host.find('/'); slash != std::string::npos) host = host.substr(slash + 1);  // "name/ip"
        am_address = host + ":" + std::to_string(report->rpc_port());
        stub = control::Control::NewStub(grpc::CreateChannel(am_address, grpc::InsecureChannelCredentials()));
        (void)WriteFileAtomic(dir.am_addr(), am_address + "\n");
      }
      while (pull_events()) {
      }
      if (auto final_state = FinalStateOf(*report)) {
        while (pull_events()) {  // the AM may still answer for a moment
        }
        (void)history::WriteFinalStatus(dir, {{"job_id", dir.job_id()},
                                             {"state", final_state->first},
                                             {"diagnostics", final_state->second},
                                             {"yarn_application_id", record.application_id},
                                             {"finished_ms", history::NowMillis()}});
        (void)CleanStaging(record.webhdfs, record.user, record.staging_dir, &dir);
        return;
      }
    } else {
      spdlog::warn("application report for {}: {}", record.application_id, report.status().ToString());
    }
    for (int i = 0; i < 5 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Status YarnJobSubmitter::Kill(const history::JobDir& dir, std::chrono::milliseconds grace) {
  LOOM_ASSIGN_OR_RETURN(YarnJobRecord record, YarnJobRecord::Read(dir));
  LOOM_ASSIGN_OR_RETURN(HostPort rm_addr, ParseHostPort(record.rm));
  LOOM_ASSIGN_OR_RETURN(auto app, ParseApplicationId(record.application_id));
  ApplicationClient rm(rm_addr.host, rm_addr.port, record.user);
  auto deadline = std::chrono::steady_clock::now() + std::max(grace, std::chrono::milliseconds(1000));
  Status last = Status::Ok();
  while (std::chrono::steady_clock::now() < deadline) {
    auto done = rm.KillApplication(app, "killed by loom (" + dir.job_id() + ")");
    if (!done.ok()) {
      last = done.status();
    } else if (*done) {
      break;
    }
    auto report = rm.GetApplicationReport(app);
    if (report.ok() && FinalStateOf(*report)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (!last.ok()) return last.WithContext("killing " + record.application_id);
  return Status::Ok();
}

}  // namespace loom::cluster::yarn
