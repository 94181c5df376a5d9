// The NodeManager half of the YARN test double: ContainerManagementProtocol, resource
// localization from the FakeHdfs, and the container processes, shaped like the Hadoop 3.3.6
// NM recorded in dshell/03, 06-11, 13 and container/ (launch_container.sh, container_tokens).

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>

#include "core/files.h"
#include "core/strings.h"
#include "fake_hdfs.h"
#include "localizer.h"
#include "nm_gpus.h"
#include "yarn_double_impl.h"

namespace loom::yarn_double {

namespace {

using ::hadoop::common::RpcResponseHeaderProto;

constexpr char kYarnException[] = "org.apache.hadoop.yarn.exceptions.YarnException";
constexpr char kInvalidToken[] = "org.apache.hadoop.security.token.SecretManager$InvalidToken";

// yarn.nodemanager.env-whitelist of the recorded cluster, in its order.
constexpr const char* kEnvWhitelist[] = {"JAVA_HOME",   "HADOOP_COMMON_HOME", "HADOOP_HDFS_HOME",
                                         "HADOOP_CONF_DIR", "CLASSPATH_PREPEND_DISTCACHE", "HADOOP_YARN_HOME",
                                         "HADOOP_HOME", "PATH", "LANG", "TZ", "HADOOP_MAPRED_HOME"};
// Variables the NM sets itself; a CLC cannot override them.
constexpr const char* kNmVars[] = {"HADOOP_TOKEN_FILE_LOCATION", "CONTAINER_ID", "NM_PORT", "NM_HOST", "NM_HTTP_PORT",
                                   "LOCAL_DIRS", "LOCAL_USER_DIRS", "LOG_DIRS", "USER", "LOGNAME", "HOME", "PWD",
                                   "LOCALIZATION_COUNTERS", "JVM_PID"};

template <typename T>
std::optional<T> Parse(std::string_view bytes) {
  T m;
  if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return std::nullopt;
  return m;
}

yp::ContainerExceptionMapProto Failure(const yp::ContainerIdProto& id, const std::string& cls,
                                       const std::string& message, const std::string& method) {
  yp::ContainerExceptionMapProto f;
  *f.mutable_container_id() = id;
  auto* e = f.mutable_exception();
  e->set_message(message);
  e->set_trace(cls + ": " + message +
               "\n\tat org.apache.hadoop.yarn.server.nodemanager.containermanager.ContainerManagerImpl." + method +
               "(ContainerManagerImpl.java)\n");
  e->set_class_name(cls);
  return f;
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
  return s;
}

// ContainerLaunch.expandEnvironment: {{VAR}} -> $VAR, <CPS> -> ':', <LOG_DIR> -> the log dir.
std::string Expand(std::string s, const std::string& log_dir) {
  s = ReplaceAll(std::move(s), "<LOG_DIR>", log_dir);
  s = ReplaceAll(std::move(s), "<CPS>", ":");
  for (size_t open; (open = s.find("{{")) != std::string::npos;) {
    size_t close = s.find("}}", open);
    if (close == std::string::npos) break;
    s.replace(open, close + 2 - open, "$" + s.substr(open + 2, close - open - 2));
  }
  return s;
}

std::string Timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return "[" + std::string(buf) + "." + std::to_string(NowMs() % 1000) + "]";
}

std::string LastBytes(const std::string& path, size_t n) {
  Result<std::string> s = ReadFile(path);
  if (!s.ok()) return "";
  return s->size() > n ? s->substr(s->size() - n) : *s;
}

// What one launch needs, copied out of the state so localization runs without the lock.
struct LaunchPlan {
  std::string container_id, app_id, user, work_dir, log_dir, appcache, user_dir;
  int nm_port = 0, nm_http_port = 0;
  std::string node_host;
};

}  // namespace

// ---- tokens -------------------------------------------------------------------------------------

PasswordLookup YarnDoubleImpl::NmPassword(const std::string& identifier) {
  yp::NMTokenIdentifierProto id;
  if (!id.ParseFromString(identifier) || !id.has_appattemptid()) {
    return RpcError{kInvalidToken, "Can't de-serialize tokenIdentifier"};
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nm_tokens_.find(identifier);
  if (it == nm_tokens_.end()) {
    return RpcError{kInvalidToken, "Given NMToken for application : " + AttemptIdString(id.appattemptid()) +
                                       " seems to have been generated illegally."};
  }
  return it->second;
}

// ---- container state ------------------------------------------------------------------------

yp::ContainerStatusProto YarnDoubleImpl::StatusLocked(const Container& c) const {
  yp::ContainerStatusProto s;
  *s.mutable_container_id() = c.id_proto;
  s.set_state(c.complete ? yp::C_COMPLETE : yp::C_RUNNING);
  s.set_diagnostics(c.complete ? c.diagnostics : "");
  s.set_exit_status(c.complete ? c.exit_status : -1000);
  *s.mutable_capability() = ResourceToProto(c.resource, WithGpu());
  s.set_executiontype(yp::GUARANTEED);
  s.set_container_sub_state(c.complete ? yp::CSS_DONE : yp::CSS_RUNNING);
  return s;
}

void YarnDoubleImpl::CompleteLocked(Container& c, int exit_status, const std::string& diagnostics) {
  if (c.complete) return;
  c.complete = true;
  c.running = false;
  c.exit_status = exit_status;
  c.diagnostics = diagnostics;
  c.finished_ms = NowMs();
  OnContainerFinishedLocked(c);
  cv_.notify_all();
}

void YarnDoubleImpl::KillContainerLocked(Container& c, const std::string& why, int grace_ms) {
  if (c.complete) return;
  if (!c.stop_requested) c.stop_diagnostics = why;
  c.stop_requested = true;
  if (c.running && c.pid > 0) {
    ::kill(-c.pid, SIGTERM);
    if (!c.sigkill_at_ms) c.sigkill_at_ms = NowMs() + grace_ms;
  } else if (!c.start_requested) {
    CompleteLocked(c, -100, why);  // never started on the NM: nothing to kill
  }
  // Otherwise the launch is under way; LaunchContainer sees stop_requested.
}

void YarnDoubleImpl::OnProcessExit(const std::string& container_id, ExitInfo info) {
  std::string work_dir, log_dir;
  {
    std::lock_guard<std::mutex> lock(mu_);
    work_dir = containers_[container_id]->work_dir;
    log_dir = containers_[container_id]->log_dir;
  }
  // The NM removes these two from the working directory when a container exits (README 9).
  ::unlink((work_dir + "/container_tokens").c_str());
  ::unlink((work_dir + "/launch_container.sh").c_str());
  std::string err_tail = LastBytes(log_dir + "/prelaunch.err", 4096);
  std::string stderr_tail = LastBytes(log_dir + "/stderr", 4096);
  std::lock_guard<std::mutex> lock(mu_);
  Container& c = *containers_[container_id];
  c.running = false;
  c.sigkill_at_ms = 0;
  int code = info.ShellCode();
  std::string diag;
  if (c.stop_requested) {
    diag = c.stop_diagnostics + "\nContainer killed on request. Exit code is " + std::to_string(code) +
           "\nContainer exited with a non-zero exit code " + std::to_string(code) + ". \n";
  } else if (code != 0) {
    diag = Timestamp() + "Exception from container-launch.\nContainer id: " + c.id +
           "\nExit code: " + std::to_string(code) + "\n\n" + Timestamp() +
           "Container exited with a non-zero exit code " + std::to_string(code) +
           ". Error file: prelaunch.err.\nLast 4096 bytes of prelaunch.err :\n" + err_tail +
           "\nLast 4096 bytes of stderr :\n" + stderr_tail + "\n\n";
  }
  CompleteLocked(c, code, diag);
}

// ---- localization ---------------------------------------------------------------------------

namespace {

struct Localized {
  std::string path;
  int64_t bytes = 0;
  bool cached = false;
};

// FSDownload.isPublic: a PUBLIC resource must be readable by everyone, through directories
// everyone may search.
bool PubliclyReadable(const FakeHdfs& hdfs, const std::string& path) {
  auto other = [](const std::string& permission) { return permission.empty() ? 0 : (permission.back() - '0') & 7; };
  Result<FakeHdfs::Entry> file = hdfs.Stat(path);
  if (!file.ok() || !(other(file->permission) & 4)) return false;
  for (std::string dir = path.substr(0, path.rfind('/'));; dir = dir.substr(0, dir.rfind('/'))) {
    Result<FakeHdfs::Entry> d = hdfs.Stat(dir.empty() ? "/" : dir);
    if (!d.ok() || !(other(d->permission) & 1)) return false;
    if (dir.empty()) return true;
  }
}

}  // namespace

std::string YarnDoubleImpl::LocalizerTokenRefusal(const std::string& tokens) const {
  Result<hadoop::Credentials> creds =
      tokens.empty() ? Result<hadoop::Credentials>(hadoop::Credentials{}) : hadoop::ParseCredentials(tokens);
  if (!creds.ok()) return "java.io.IOException: Exception reading tokens: " + creds.status().message();
  for (const auto& [alias, token] : creds->tokens) {
    // The client's token selector: the first HDFS token for this NameNode; the NameNode judges it.
    if (token.kind != hadoop::kHdfsDelegationKind || !HdfsTokenServiceRefusal(token.service).empty()) continue;
    Result<hadoop::DelegationTokenIdentifier> known = options_.hdfs->tokens().Verify(token);
    if (known.ok()) return "";
    return "org.apache.hadoop.ipc.RemoteException(org.apache.hadoop.security.token.SecretManager$InvalidToken): " +
           known.status().message();
  }
  // No token for it, and the localizer has no Kerberos login: SASL has nothing to offer.
  int port = namenode_rpc_ ? namenode_rpc_->port() : 0;
  return "java.io.IOException: DestHost:destPort 127.0.0.1:" + std::to_string(port) +
         " , LocalHost:localPort localhost/127.0.0.1:0. Failed on local exception: java.io.IOException: "
         "org.apache.hadoop.security.AccessControlException: Client cannot authenticate via:[TOKEN, KERBEROS]";
}

// Result: the local path, or the diagnostics the container fails with. A resource is localized
// once per cache (PUBLIC: the node; PRIVATE: the user; APPLICATION: the app); a container that
// asks for one being localized waits for it, as the NM's LocalizedResource makes it.
// With Options::kerberos the localizer reads HDFS as the NameNode lets it with the CLC's `tokens`.
static std::variant<Localized, std::string> Localize(YarnDoubleImpl& d, const LaunchPlan& plan,
                                                     const yp::LocalResourceProto& lr, const std::string& tokens) {
  const yp::URLProto& u = lr.resource();
  std::string url = u.scheme() + "://" + u.host() + (u.has_port() && u.port() >= 0 ? ":" + std::to_string(u.port()) : "") +
                    u.file();
  if (!d.options_.hdfs) return "java.io.IOException: " + url + ": the test double has no FakeHdfs to localize from";
  std::string fs = d.options_.hdfs->default_fs();
  // Options::standby_namenode: the conf dir names the HA nameservice (WriteHadoopConfDir).
  if (d.options_.standby_namenode && StartsWith(url, "hdfs://loomns/")) fs = "hdfs://loomns";
  if (!StartsWith(url, fs + "/")) {
    return "java.net.ConnectException: Call to " + u.host() + ":" + std::to_string(u.port()) +
           " failed on connection exception: the test double's file system is " + fs + ", not the one of " + url;
  }
  if (d.options_.kerberos.enabled) {
    std::string refusal = d.LocalizerTokenRefusal(tokens);
    if (!refusal.empty()) return refusal;
  }
  Result<FakeHdfs::Entry> entry = d.options_.hdfs->Stat(u.file());
  if (!entry.ok()) return "java.io.FileNotFoundException: File does not exist: " + url;
  if (entry->mtime_ms != lr.timestamp()) {
    // FSDownload's own wording, unbalanced parenthesis included.
    return "java.io.IOException: Resource " + url + " changed on src filesystem (expected " +
           std::to_string(lr.timestamp()) + ", was " + std::to_string(entry->mtime_ms);
  }
  bool is_public = lr.has_visibility() && lr.visibility() == yp::PUBLIC;
  if (is_public && !PubliclyReadable(*d.options_.hdfs, u.file())) {
    return "java.io.IOException: Resource " + url +
           " is not publicly accessible and as such cannot be part of the public cache.";
  }
  std::string cache_key = url + "#" + std::to_string(lr.timestamp()) + "#" + std::to_string(lr.type());
  std::string base = u.file().substr(u.file().find_last_of('/') + 1);
  std::string dest;
  NmCache* cache = nullptr;
  {
    std::unique_lock<std::mutex> lock(d.mu_);
    std::string root = plan.appcache + "/filecache";
    if (is_public) {
      root = plan.user_dir.substr(0, plan.user_dir.rfind("/usercache/")) + "/filecache";
    } else if (lr.visibility() == yp::PRIVATE) {
      root = plan.user_dir + "/filecache";
    }
    cache = &d.nm_caches_[root];  // std::map: the pointer stays valid
    d.cv_.wait(lock, [&] { return d.stopping_ || !cache->in_progress.count(cache_key); });
    if (d.stopping_) return "java.io.IOException: the NodeManager is stopping";
    auto it = cache->localized.find(cache_key);
    if (it != cache->localized.end()) return Localized{it->second, entry->length, true};
    cache->in_progress.insert(cache_key);
    dest = root + "/" + std::to_string(cache->next_filecache++) + "/" + base;
  }
  std::string parent = dest.substr(0, dest.find_last_of('/'));
  Status s = MakeDirs(parent);
  bool archive = (lr.type() == yp::ARCHIVE || lr.type() == yp::PATTERN) && !entry->dir;
  if (s.ok()) s = LocalizeLikeFsDownload(d.options_.hdfs->LocalPath(u.file()), dest, base, archive, is_public);
  std::lock_guard<std::mutex> lock(d.mu_);
  cache->in_progress.erase(cache_key);
  if (s.ok()) cache->localized[cache_key] = dest;
  d.cv_.notify_all();
  if (!s.ok()) return "java.io.IOException: localizing " + url + " failed: " + s.message();
  return Localized{dest, entry->length, false};
}

// ---- the launch script ------------------------------------------------------------------------

namespace {

std::string LaunchScript(const LaunchPlan& p, const yp::ContainerLaunchContextProto& clc,
                         const std::vector<std::pair<std::string, std::string>>& links, const std::string& counters) {
  std::string log = p.log_dir;
  std::string s = "#!/bin/bash\n\nset -o pipefail -e\n";
  s += "export PRELAUNCH_OUT=\"" + log + "/prelaunch.out\"\nexec >\"${PRELAUNCH_OUT}\"\n";
  s += "export PRELAUNCH_ERR=\"" + log + "/prelaunch.err\"\nexec 2>\"${PRELAUNCH_ERR}\"\n";
  s += "echo \"Setting up env variables\"\n";
  std::set<std::string> clc_keys;
  for (const auto& e : clc.environment()) clc_keys.insert(e.key());
  // Whitelisted variables of the NM's own environment, as defaults.
  for (const char* var : kEnvWhitelist) {
    const char* value = std::getenv(var);
    if (value && !clc_keys.count(var)) s += std::string("export ") + var + "=${" + var + ":-\"" + value + "\"}\n";
  }
  auto line = [&](const std::string& k, const std::string& v) { s += "export " + k + "=\"" + v + "\"\n"; };
  line("HADOOP_TOKEN_FILE_LOCATION", p.work_dir + "/container_tokens");
  line("CONTAINER_ID", p.container_id);
  line("NM_PORT", std::to_string(p.nm_port));
  line("NM_HOST", p.node_host);
  line("NM_HTTP_PORT", std::to_string(p.nm_http_port));
  line("LOCAL_DIRS", p.appcache);
  line("LOCAL_USER_DIRS", p.user_dir + "/");
  line("LOG_DIRS", log);
  line("USER", p.user);
  line("LOGNAME", p.user);
  line("HOME", "/home/");
  line("PWD", p.work_dir);
  line("LOCALIZATION_COUNTERS", counters);
  line("JVM_PID", "$$");
  std::set<std::string> nm_vars(std::begin(kNmVars), std::end(kNmVars));
  // The CLC's variables, expanded and unescaped inside double quotes, exactly as the NM writes them.
  for (const auto& e : clc.environment()) {
    if (!nm_vars.count(e.key())) line(e.key(), Expand(e.value(), log));
  }
  const char* arena = std::getenv("MALLOC_ARENA_MAX");  // yarn.nodemanager.admin-env
  if (!clc_keys.count("MALLOC_ARENA_MAX")) line("MALLOC_ARENA_MAX", arena ? arena : "");
  s += "echo \"Setting up job resources\"\n";
  for (const auto& [target, name] : links) {
    if (size_t slash = name.find_last_of('/'); slash != std::string::npos) {
      s += "mkdir -p \"" + name.substr(0, slash) + "\"\n";
    }
    s += "ln -sf -- \"" + target + "\" \"" + name + "\"\n";
  }
  s += "echo \"Copying debugging information\"\n# Creating copy of launch script\n";
  s += "cp \"launch_container.sh\" \"" + log + "/launch_container.sh\"\n";
  s += "chmod 640 \"" + log + "/launch_container.sh\"\n# Determining directory contents\n";
  std::string info = log + "/directory.info";
  s += "echo \"ls -l:\" 1>\"" + info + "\"\nls -l 1>>\"" + info + "\"\n";
  s += "echo \"find -L . -maxdepth 5 -ls:\" 1>>\"" + info + "\"\nfind -L . -maxdepth 5 -ls 1>>\"" + info + "\"\n";
  s += "echo \"broken symlinks(find -L . -maxdepth 5 -type l -ls):\" 1>>\"" + info +
       "\"\nfind -L . -maxdepth 5 -type l -ls 1>>\"" + info + "\"\n";
  s += "echo \"Launching container\"\n";
  std::vector<std::string> commands;
  for (const auto& c : clc.command()) commands.push_back(Expand(c, log));
  s += "exec /bin/bash -c \"" + Join(commands, " ") + "\"\n";
  return s;
}

}  // namespace

void YarnDoubleImpl::LaunchContainer(const std::string& container_id, const yp::ContainerLaunchContextProto& clc,
                                     const std::string& tokens) {
  LaunchPlan p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    Container& c = *containers_[container_id];
    App* app = FindAppLocked(c.app);
    p.container_id = c.id;
    p.app_id = app ? app->id_str : AppIdString(cluster_ts_, c.app);
    p.user = c.user;
    p.work_dir = c.work_dir;
    p.log_dir = c.log_dir;
    const Node& node = NodeOf(c);  // the NodeManager the RM placed it on
    p.user_dir = node.local_dir + "/usercache/" + c.user;
    p.appcache = p.user_dir + "/appcache/" + p.app_id;
    p.nm_port = node.port();
    p.nm_http_port = node.http_port;
    p.node_host = node.host;
    c.started_ms = NowMs();
    for (const auto& e : clc.environment()) c.launch_env[e.key()] = e.value();
    AssignContainerGpusLocked(*this, c);  // the LinuxContainerExecutor's preStart
  }
  auto fail = [&](int exit_status, const std::string& diag) {
    std::lock_guard<std::mutex> lock(mu_);
    CompleteLocked(*containers_[container_id], exit_status, diag);
  };
  Status dirs = MakeDirs(p.work_dir);
  if (dirs.ok()) dirs = MakeDirs(p.log_dir);
  if (!dirs.ok()) return fail(-1000, "java.io.IOException: " + dirs.message());

  int64_t started = NowMs(), missed_bytes = 0, cached_bytes = 0, missed = 0, cached = 0;
  std::vector<std::pair<std::string, std::string>> links;
  for (const auto& r : clc.localresources()) {
    auto got = Localize(*this, p, r.value(), tokens);
    if (auto* diag = std::get_if<std::string>(&got)) return fail(-1000, Timestamp() + *diag + "\n");
    const Localized& l = std::get<Localized>(got);
    (l.cached ? cached_bytes : missed_bytes) += l.bytes;
    (l.cached ? cached : missed) += 1;
    links.emplace_back(l.path, r.key());
  }
  std::string counters = std::to_string(missed_bytes) + "," + std::to_string(cached_bytes) + "," +
                         std::to_string(missed) + "," + std::to_string(cached) + "," +
                         std::to_string(NowMs() - started);
  // container_tokens: the CLC's credentials, or an empty HDTS file when it has none.
  std::string creds = tokens.empty() ? hadoop::SerializeCredentials(hadoop::Credentials{}) : tokens;
  Status written = WriteFileAtomic(p.work_dir + "/container_tokens", creds, 0644);
  if (written.ok()) written = WriteFileAtomic(p.work_dir + "/launch_container.sh", LaunchScript(p, clc, links, counters), 0700);
  if (!written.ok()) return fail(-1000, "java.io.IOException: " + written.message());

  std::lock_guard<std::mutex> lock(mu_);
  Container& c = *containers_[container_id];
  if (c.stop_requested || stopping_) {
    return CompleteLocked(c, 143, c.stop_diagnostics + "\nContainer killed on request. Exit code is 143\n");
  }
  SpawnOptions o;
  o.argv = {"/bin/bash", p.work_dir + "/launch_container.sh"};
  if (!options_.container_chroot.empty()) {
    // chroot(8) leaves the working dir at the new /: the root's own shell enters the work dir,
    // then its bash runs the script there, as the NM's bash would.
    o.argv = {"/usr/sbin/chroot", options_.container_chroot, "/bin/sh", "-c",
              "cd \"$0\" && exec /bin/bash \"$0/launch_container.sh\"", p.work_dir};
  }
  std::string marker = Marker(container_id);
  o.env = {{marker.substr(0, marker.find('=')), marker.substr(marker.find('=') + 1)}};  // bash sets its default PATH
  o.cwd = p.work_dir;
  o.stdout_path = p.log_dir + "/prelaunch.out";
  o.stderr_path = p.log_dir + "/prelaunch.err";
  Result<Subprocess> proc = Subprocess::Spawn(o);
  if (!proc.ok()) return CompleteLocked(c, -1000, "java.io.IOException: " + proc.status().message());
  c.process = std::make_unique<Subprocess>(std::move(*proc));
  c.pid = c.process->pid();
  c.running = true;
  c.started_ms = NowMs();
  Subprocess* raw = c.process.get();
  c.waiter = std::thread([this, container_id, raw] {
    Result<ExitInfo> e = raw->Wait();
    OnProcessExit(container_id, e.ok() ? *e : ExitInfo{255, 0});
  });
  cv_.notify_all();
}

// ---- ContainerManagementProtocol --------------------------------------------------------------

namespace {

// What the NodeManager answers a request it cannot parse (fatal: the connection closes).
RpcError DecodingError(const std::string& method) {
  return RpcError{"org.apache.hadoop.ipc.RpcServerException", "Error decoding " + method,
                  RpcResponseHeaderProto::FATAL_DESERIALIZING_REQUEST, true};
}

struct NmCalls {
  YarnDoubleImpl& d;
  yp::NMTokenIdentifierProto nm_token;
  int node = 0;  // the NodeManager that took the call

  std::string NodeAddress() const { return d.nodes_[static_cast<size_t>(node)]->Address(); }

  // Why this start request is refused, or "" to start it.
  std::string StartRefusal(const yp::StartContainerRequestProto& r, const yp::ContainerTokenIdentifierProto& id,
                           const std::string& cid) {
    auto it = d.containers_.find(cid);
    const ::hadoop::common::TokenProto& t = r.container_token();
    if (it == d.containers_.end() || it->second->node != node || it->second->token.identifier != t.identifier() ||
        it->second->token.password != t.password()) {
      return "Unauthorized request to start container.\n" + cid +
             " Invalid container token used for starting container on : " + NodeAddress();
    }
    const auto& a = nm_token.appattemptid();
    const auto& b = id.containerid().app_attempt_id();
    if (a.SerializeAsString() != b.SerializeAsString()) {
      return "Unauthorized request to start container.\nNMToken for application attempt : " + AttemptIdString(a) +
             " was used for starting container with container token issued for application attempt : " +
             AttemptIdString(b);
    }
    if (id.expirytimestamp() < NowMs()) {
      return "Unauthorized request to start container.\nThis token is expired. current time is " +
             std::to_string(NowMs()) + " found " + std::to_string(id.expirytimestamp()) +
             "\nNote: System times on machines may be out of sync. Check system time and time zones.";
    }
    Container& c = *it->second;
    if (c.start_requested) return "Container " + cid + " already is running on this node!!";
    if (c.complete || c.rm_done) return "Container " + cid + " was released or killed before it was started";
    if (r.container_launch_context().has_tokens()) {
      Result<hadoop::Credentials> creds = hadoop::ParseCredentials(r.container_launch_context().tokens());
      if (!creds.ok()) return "java.io.IOException: Exception reading tokens: " + creds.status().message();
    }
    return "";
  }

  CallResult Start(std::string_view bytes) {
    auto req = Parse<yp::StartContainersRequestProto>(bytes);
    if (!req) return DecodingError("startContainers");
    yp::StartContainersResponseProto resp;
    std::vector<std::pair<std::string, const yp::ContainerLaunchContextProto*>> launches;
    {
      std::lock_guard<std::mutex> lock(d.mu_);
      for (const auto& r : req->start_container_request()) {
        yp::ContainerTokenIdentifierProto id;
        if (!r.has_container_token() || !id.ParseFromString(r.container_token().identifier())) {
          return AppError(kInvalidToken, "Invalid container token: it does not parse as ContainerTokenIdentifier",
                          {"org.apache.hadoop.yarn.server.nodemanager.containermanager.ContainerManagerImpl."
                           "startContainers(ContainerManagerImpl.java)"});
        }
        std::string cid = ContainerIdString(id.containerid());
        std::string refusal = StartRefusal(r, id, cid);
        if (!refusal.empty()) {
          *resp.add_failed_requests() = Failure(id.containerid(), kYarnException, refusal, "startContainers");
          continue;
        }
        d.containers_[cid]->start_requested = true;
        *resp.add_succeeded_requests() = id.containerid();
        launches.emplace_back(cid, &r.container_launch_context());
      }
    }
    // Real NMs localize asynchronously; a localization failure shows as a failed container.
    for (const auto& [cid, clc] : launches) d.LaunchContainer(cid, *clc, clc->tokens());
    return resp.SerializeAsString();
  }

  // The container if this caller may act on it, else the failure to report.
  Container* Authorized(const yp::ContainerIdProto& id, const char* verb,
                        google::protobuf::RepeatedPtrField<yp::ContainerExceptionMapProto>* failed,
                        const std::string& method) {
    std::string cid = ContainerIdString(id);
    auto it = d.containers_.find(cid);
    if (it == d.containers_.end() || !it->second->start_requested || it->second->node != node) {
      *failed->Add() = Failure(id, kYarnException, "Container " + cid + " is not handled by this NodeManager", method);
      return nullptr;
    }
    const auto& a = nm_token.appattemptid().application_id();
    if (it->second->app != a.id()) {
      *failed->Add() = Failure(id, kYarnException,
                               "Unauthorized request from " + AttemptIdString(nm_token.appattemptid()) + " to " +
                                   verb + " container " + cid,
                               method);
      return nullptr;
    }
    return it->second.get();
  }

  CallResult Stop(std::string_view bytes) {
    auto req = Parse<yp::StopContainersRequestProto>(bytes);
    if (!req) return DecodingError("stopContainers");
    yp::StopContainersResponseProto resp;
    std::lock_guard<std::mutex> lock(d.mu_);
    for (const auto& id : req->container_id()) {
      Container* c = Authorized(id, "stop", resp.mutable_failed_requests(), "stopContainers");
      if (!c) continue;
      // Recorded (10, 11, 13): success also for a container that has already exited.
      d.KillContainerLocked(*c, "Container killed by the ApplicationMaster.", d.options_.nm_sigkill_delay_ms);
      *resp.add_succeeded_requests() = id;
    }
    return resp.SerializeAsString();
  }

  CallResult Statuses(std::string_view bytes) {
    auto req = Parse<yp::GetContainerStatusesRequestProto>(bytes);
    if (!req) return DecodingError("getContainerStatuses");
    yp::GetContainerStatusesResponseProto resp;
    std::lock_guard<std::mutex> lock(d.mu_);
    for (const auto& id : req->container_id()) {
      Container* c = Authorized(id, "get status of", resp.mutable_failed_requests(), "getContainerStatuses");
      if (c) *resp.add_status() = d.StatusLocked(*c);
    }
    return resp.SerializeAsString();
  }
};

}  // namespace

CallResult YarnDoubleImpl::HandleNm(const std::string& method, std::string_view req, const ConnectionInfo& conn) {
  return HandleNmOn(0, method, req, conn);
}

CallResult YarnDoubleImpl::HandleNmOn(int node, const std::string& method, std::string_view req,
                                      const ConnectionInfo& conn) {
  NmCalls calls{*this, {}, node};
  calls.nm_token.ParseFromString(conn.token_identifier);
  if (method == "startContainers") return calls.Start(req);
  if (method == "stopContainers") return calls.Stop(req);
  if (method == "getContainerStatuses") return calls.Statuses(req);
  return RpcError{"org.apache.hadoop.ipc.RpcNoSuchMethodException",
                  "Unknown method " + method + " called on " + kNmProtocol + " protocol.",
                  RpcResponseHeaderProto::ERROR_NO_SUCH_METHOD, false};
}

}  // namespace loom::yarn_double
