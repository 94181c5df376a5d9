#include "hadoop/testing/gss_acceptor.h"
#include "nm_web_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <regex>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/eventually.h"
#include "core/files.h"
#include "core/strings.h"
#include "hadoop/wire/credentials.h"
#include "nm_gpus.h"
#include "yarn_double_impl.h"

namespace loom::yarn_double {

using hadoop::testing::GssAcceptor;  // shared with the IPC server (src/hadoop/testing)
namespace {

using ordered_json = nlohmann::ordered_json;

// The recorded NodeManager's words (nm-web/09, 22-24, 27).
constexpr char kUnknownContainer[] =
    "java.lang.Exception: Unknown container. Container either has not started or has already completed or doesn't "
    "belong to this node at all.";
constexpr char kNoSuchLog[] = "java.lang.Exception: Cannot find this log on the local disk.";

std::string RemoteException(const std::string& exception, const std::string& message, const std::string& java_class) {
  ordered_json e;
  e["exception"] = exception;
  e["message"] = message;
  e["javaClassName"] = java_class;
  ordered_json j;
  j["RemoteException"] = e;
  return j.dump();
}

// ContainerId.fromString's shape: container_[e<epoch>_]<ts>_<app>_<attempt>_<id>, numbers only.
bool ParseContainerId(const std::string& cid, int64_t* ts, int64_t* app) {
  static const std::regex kId(R"(container_(?:e\d+_)?(\d+)_(\d+)_(\d+)_(\d+))");
  std::smatch m;
  if (!std::regex_match(cid, m, kId)) return false;
  Result<int64_t> t = ParseInt(m[1].str()), a = ParseInt(m[2].str());
  if (!t.ok() || !a.ok()) return false;
  *ts = *t;
  *app = *a;
  return true;
}

// What this node knows of one container.
struct View {
  bool served = false;     // its application is known here and its logs not uploaded
  bool running = false;    // the NM's "belongs to a running container"
  bool in_memory = false;  // containers/{cid} answers 200
  std::string log_dir, node_id, user;
  int64_t memory_mb = 0;
  int vcores = 0;
};

void SetCommonHeaders(httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Pragma", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
}

void Json(httplib::Response& res, int status, const std::string& body) {
  SetCommonHeaders(res);
  res.status = status;
  res.set_content(body, "application/json;charset=utf-8");
}

// The JSON routes' answer to a path that names no container id (NMWebServices' 400
// BadRequestException); whether it was one.
bool RefusedAsNoContainerId(const std::string& cid, httplib::Response& res) {
  int64_t ts, app;
  if (ParseContainerId(cid, &ts, &app)) return false;
  Json(res, 400, RemoteException("BadRequestException", "java.lang.Exception: invalid container id, " + cid,
                                 "org.apache.hadoop.yarn.webapp.BadRequestException"));
  return true;
}

void Text(httplib::Response& res, int status, const std::string& body) {
  SetCommonHeaders(res);
  res.status = status;
  res.set_content(body, "text/plain;charset=utf-8");
}

int64_t MtimeMs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

}  // namespace

std::string HadoopTime(int64_t ms) {
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::time_t s = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s %s %02d %02d:%02d:%02d +0000 %d", kDays[tm.tm_wday], kMonths[tm.tm_mon], tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, tm.tm_year + 1900);
  return buf;
}

namespace {

View Lookup(YarnDoubleImpl& d, int node, const std::string& cid) {
  View v;
  int64_t ts = 0, app_num = 0;
  if (!ParseContainerId(cid, &ts, &app_num)) return v;
  std::lock_guard<std::mutex> lock(d.mu_);
  bool nodes = !d.nodes_.empty();
  v.node_id = nodes ? d.nodes_[static_cast<size_t>(node)]->Address()
                    : d.options_.node_host + ":" + std::to_string(d.nm_server_ ? d.nm_server_->port() : 0);
  if (ts != d.cluster_ts_) return v;
  App* app = d.FindAppLocked(static_cast<int32_t>(app_num));
  if (app == nullptr || app->log_aggregation != 0) return v;
  // The NM knows an application once one of its containers started here.
  bool app_here = false;
  for (const auto& [id, c] : d.containers_) {
    if (c->app == app->id && c->start_requested && c->node == node) app_here = true;
  }
  if (!app_here) return v;
  v.served = true;
  v.user = app->user;
  auto it = d.containers_.find(cid);
  if (it != d.containers_.end() && it->second->node == node && it->second->start_requested) {
    const Container& c = *it->second;
    v.log_dir = c.log_dir;
    v.running = c.running && !c.complete;
    v.in_memory = !c.complete;
    v.memory_mb = c.resource.memory;
    v.vcores = static_cast<int>(c.resource.vcores);
  } else {
    std::string root = nodes ? d.nodes_[static_cast<size_t>(node)]->log_dir : d.options_.work_dir + "/logs";
    v.log_dir = root + "/" + app->id_str + "/" + cid;
  }
  return v;
}

// The regular files of a log dir, in directory order.
std::vector<std::pair<std::string, struct stat>> ListDir(const std::string& dir) {
  std::vector<std::pair<std::string, struct stat>> out;
  DIR* dp = ::opendir(dir.c_str());
  if (dp == nullptr) return out;
  while (dirent* e = ::readdir(dp)) {
    struct stat st;
    std::string path = dir + "/" + e->d_name;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) out.emplace_back(e->d_name, st);
  }
  ::closedir(dp);
  return out;
}

}  // namespace

NmWebServer::NmWebServer(YarnDoubleImpl& d, int node) : d_(d), node_(node) {}
NmWebServer::~NmWebServer() { Stop(); }

Status NmWebServer::Start(const std::string& bind_ip, int port) {
  server_ = std::make_unique<httplib::Server>();
  httplib::Server& s = *server_;
  // A double may run many NodeManagers: a few threads each, and no idle keep-alive
  // connections holding them (answers are quick; Loom's client uses one connection per call).
  s.new_task_queue = [] { return new httplib::ThreadPool(3); };
  s.set_keep_alive_max_count(1);

  // Options::kerberos: the NodeManager web is SPNEGO (hadoop.http.authentication.type=kerberos,
  // the same HTTP principal here since every node is localhost), as hadoop-auth's filter
  // answers: no credentials 401 with a bare `WWW-Authenticate: Negotiate`, a refused ticket 403,
  // an accepted one the mutual-auth token. No hadoop.auth cookie is issued: every request
  // negotiates (a client must work either way).
  if (d_.options_.kerberos.enabled) {
    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      const YarnTestDouble::Options::Kerberos& k = d_.options_.kerberos;
      std::string authorization = req.get_header_value("Authorization");
      if (ToLower(authorization.substr(0, 10)) != "negotiate ") {
        res.status = 401;
        res.set_header("WWW-Authenticate", "Negotiate");
        res.set_content("Authentication required", "text/html;charset=iso-8859-1");
        return httplib::Server::HandlerResponse::Handled;
      }
      Result<std::string> token = hadoop::Base64Decode(Trim(authorization.substr(10)));
      Result<std::unique_ptr<GssAcceptor>> acceptor = GssAcceptor::Create(k.http_keytab, k.http_principal);
      Result<GssAcceptor::Step> step = !token.ok()      ? Result<GssAcceptor::Step>(token.status())
                                       : !acceptor.ok() ? Result<GssAcceptor::Step>(acceptor.status())
                                                        : (*acceptor)->Accept(*token);
      if (!step.ok() || !step->complete) {
        res.status = 403;
        res.set_content("GSSException: " + (step.ok() ? std::string("incomplete context") : step.status().message()),
                        "text/html;charset=iso-8859-1");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (!step->output.empty()) {
        res.set_header("WWW-Authenticate", "Negotiate " + hadoop::Base64Encode(step->output));
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
  }

  // NMWebServices.getLogs (3.3): the wrapper around min(|size|, length) bytes.
  s.Get(R"(/ws/v1/node/containerlogs/([^/]+)/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string cid = req.matches[1], file = req.matches[2];
    int64_t ts, app;
    if (!ParseContainerId(cid, &ts, &app)) {
      SetCommonHeaders(res);
      res.status = 400;  // Response.status(BAD_REQUEST).build(): no body
      return;
    }
    View v = Lookup(d_, node_, cid);
    if (!v.served) return Text(res, 404, kUnknownContainer);
    int64_t size = INT64_MAX;
    if (req.has_param("size") && !req.get_param_value("size").empty()) {
      Result<int64_t> parsed = ParseInt(req.get_param_value("size"));
      if (!parsed.ok()) {
        return Text(res, 500, "java.lang.NumberFormatException: For input string: \"" + req.get_param_value("size") + "\"");
      }
      size = *parsed;
    }
    int fd = file == "." || file == ".." ? -1 : ::open((v.log_dir + "/" + file).c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      if (fd >= 0) ::close(fd);
      return Text(res, 404, kNoSuchLog);
    }
    const int64_t length = st.st_size;
    int64_t skip = 0, count = length;
    if (size < 0) {
      int64_t want = size == INT64_MIN ? INT64_MAX : -size;
      if (want < length) skip = length - want, count = want;
    } else if (size < length) {
      count = size;
    }
    std::string bytes = ReadAt(fd, skip, count);
    ::close(fd);
    std::string head = "Container: " + cid + " on " + v.node_id;
    std::string first = head + "\nLogAggregationType: LOCAL\n" + std::string(head.size(), '=') + "\nLogType:" + file +
                        "\nLogLastModifiedTime:" + HadoopTime(MtimeMs(st)) + "\nLogLength:" + std::to_string(length) +
                        "\nLogContents:\n" + bytes;
    std::string end = "End of LogType:" + file;
    std::string second = end + "." +
                         (v.running ? "This log file belongs to a running container (" + cid +
                                          ") and so may not be complete.\n"
                                    : std::string("\n")) +
                         std::string(end.size() + 50, '*') + "\n\n";
    SetCommonHeaders(res);
    res.status = 200;
    // Two chunks, as recorded: the header and the bytes, then the trailer.
    res.set_chunked_content_provider("text/plain;charset=utf-8",
                                     [first, second](size_t, httplib::DataSink& sink) {
                                       sink.write(first.data(), first.size());
                                       sink.write(second.data(), second.size());
                                       sink.done();
                                       return true;
                                     });
  });

  // NMWebServices.getContainerLogsInfo: the list, or 500 wrapping "Unknown container".
  s.Get(R"(/ws/v1/node/containers/([^/]+)/logs)", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string cid = req.matches[1];
    if (RefusedAsNoContainerId(cid, res)) return;
    View v = Lookup(d_, node_, cid);
    if (!v.served) {
      return Json(res, 500, RemoteException("WebApplicationException",
                                            std::string("org.apache.hadoop.yarn.webapp.NotFoundException: ") + kUnknownContainer,
                                            "javax.ws.rs.WebApplicationException"));
    }
    ordered_json files = ordered_json::array();
    for (const auto& [name, st] : ListDir(v.log_dir)) {
      ordered_json f;
      f["fileName"] = name;
      f["fileSize"] = std::to_string(st.st_size);  // a string, as recorded
      f["lastModifiedTime"] = HadoopTime(MtimeMs(st));
      files.push_back(f);
    }
    ordered_json info;
    info["containerLogInfo"] = files;
    info["logAggregationType"] = "LOCAL";
    info["containerId"] = cid;
    info["nodeId"] = v.node_id;
    ordered_json j;
    j["containerLogsInfo"] = info;
    Json(res, 200, j.dump());
  });

  AddGpuResourcesRoute(s, d_, node_);

  // NMWebServices.getNodeContainer: the NM forgets a container as soon as it completes.
  s.Get(R"(/ws/v1/node/containers/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string cid = req.matches[1];
    if (RefusedAsNoContainerId(cid, res)) return;
    View v = Lookup(d_, node_, cid);
    if (!v.in_memory) {
      return Json(res, 404, RemoteException("NotFoundException", "java.lang.Exception: container with id, " + cid + ", not found",
                                            "org.apache.hadoop.yarn.webapp.NotFoundException"));
    }
    ordered_json names = ordered_json::array();
    for (const auto& [name, st] : ListDir(v.log_dir)) names.push_back(name);
    ordered_json c;
    c["id"] = cid;
    c["state"] = v.running ? "RUNNING" : "LOCALIZING";
    c["exitCode"] = -1000;
    c["diagnostics"] = "";
    c["user"] = v.user;
    c["totalMemoryNeededMB"] = v.memory_mb;
    c["totalVCoresNeeded"] = v.vcores;
    c["executionType"] = "GUARANTEED";
    c["containerLogsLink"] = "http://" + req.get_header_value("Host") + "/node/containerlogs/" + cid + "/" + v.user;
    c["nodeId"] = v.node_id;
    c["containerLogFiles"] = names;
    ordered_json j;
    j["container"] = c;
    Json(res, 200, j.dump());
  });

  if (port == 0) {
    port_ = s.bind_to_any_port(bind_ip);
    if (port_ < 0) return Status::Unavailable("NM web server: cannot bind " + bind_ip);
  } else {
    if (!s.bind_to_port(bind_ip, port)) return Status::Unavailable("NM web server: cannot bind " + bind_ip + ":" + std::to_string(port));
    port_ = port;
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void NmWebServer::Stop() {
  if (server_ && thread_.joinable()) {
    // httplib's stop() does nothing before listen_after_bind() has started, which would then
    // accept forever: wait for it to run first (it sets is_running() as it starts).
    loom::testing::Eventually([&] { return server_->is_running(); }, std::chrono::seconds(5), std::chrono::milliseconds(1));
    server_->stop();
  }
  if (thread_.joinable()) thread_.join();
}

namespace {

Status StartOn(YarnDoubleImpl& d, int node, const std::string& ip, int port, int* bound) {
  auto server = std::make_unique<NmWebServer>(d, node);
  LOOM_RETURN_IF_ERROR(server->Start(ip, port));
  *bound = server->port();
  d.nm_web_servers_.push_back(std::move(server));
  return Status::Ok();
}

}  // namespace

Status StartNmWebServers(YarnDoubleImpl& d) {
  // Each node's http port is held by a bound socket (ReservePort); close it and serve there.
  auto release = [&](int fd) {
    if (fd < 0) return;
    ::close(fd);
    if (d.nm_http_fd_ == fd) d.nm_http_fd_ = -1;
    for (auto& n : d.nodes_) {
      if (n->http_fd == fd) n->http_fd = -1;
    }
  };
  if (d.nodes_.empty()) {
    release(d.nm_http_fd_);
    return StartOn(d, 0, "127.0.0.1", d.nm_http_port_, &d.nm_http_port_);
  }
  for (auto& n : d.nodes_) {
    bool first = n->index == 0;
    int fd = n->http_fd >= 0 ? n->http_fd : first ? d.nm_http_fd_ : -1;
    int port = n->http_port != 0 ? n->http_port : first ? d.nm_http_port_ : 0;
    release(fd);
    LOOM_RETURN_IF_ERROR(StartOn(d, n->index, n->bind_ip.empty() ? "127.0.0.1" : n->bind_ip, port, &n->http_port));
    if (first) d.nm_http_port_ = n->http_port;
  }
  return Status::Ok();
}

void StopNmWebServers(YarnDoubleImpl& d) {
  for (auto& s : d.nm_web_servers_) s->Stop();
}

}  // namespace loom::yarn_double
