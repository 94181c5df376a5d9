// The RM's web proxy of the YARN test double: what the recorded RM answers on /proxy/ (rm-rest/
// 02, 05, 07) and, for an application that registered a tracking URL, the AM's own answer, as
// WebAppProxyServlet fetches it.

#include "rm_web_server.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <regex>
#include <set>

#include <httplib.h>

#include "core/eventually.h"
#include "yarn_double_impl.h"

namespace loom::yarn_double {

namespace {

constexpr char kHtml[] = "text/html;charset=utf-8";

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The request headers WebAppProxyServlet passes on to the AM (its PASS_THROUGH_HEADERS).
bool PassedThrough(const std::string& name) {
  static const char* kNames[] = {"user-agent",    "accept",        "accept-encoding",
                                 "accept-language", "accept-charset", "content-type",
                                 "origin",        "access-control-request-method", "access-control-request-headers"};
  std::string n = Lower(name);
  return std::any_of(std::begin(kNames), std::end(kNames), [&](const char* k) { return n == k; });
}

// Response headers that belong to one connection, not to the answer (RFC 9110 §7.6.1), and
// those httplib writes itself from the body it sends.
bool HopByHop(const std::string& name) {
  static const char* kNames[] = {"connection", "keep-alive",        "proxy-authenticate", "proxy-authorization",
                                 "te",         "trailer",           "transfer-encoding",  "upgrade",
                                 "proxy-connection", "content-length", "content-type"};
  std::string n = Lower(name);
  return std::any_of(std::begin(kNames), std::end(kNames), [&](const char* k) { return n == k; });
}

std::string HttpDate() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

// What the recorded RM's Jetty puts on every answer (rm-rest/02, 07).
void RmHeaders(httplib::Response& res) {
  std::string date = HttpDate();
  res.set_header("Date", date);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Expires", date);
  res.set_header("Pragma", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-XSS-Protection", "1; mode=block");
  res.set_header("X-Frame-Options", "SAMEORIGIN");
  res.set_header("Vary", "Accept-Encoding");
}

// ProxyUtils.notFound: Hamlet's html().h1(message), byte for byte as rm-rest/07.
void NotFound(httplib::Response& res, const std::string& message) {
  RmHeaders(res);
  res.status = 404;
  res.set_content("<html>\n  <h1>\n    " + message + "\n  </h1>\n</html>\n", kHtml);
}

// ProxyUtils.sendRedirect: 302 and the "Moved" page, byte for byte as rm-rest/02 and 05.
void Redirect(httplib::Response& res, const std::string& location) {
  RmHeaders(res);
  res.status = 302;
  res.set_header("Location", location);
  res.set_content("<html>\n  <head>\n    <title>\n      Moved\n    </title>\n  </head>\n  <body>\n    <h1>\n"
                  "      Moved\n    </h1>\n    <div>\n      Content has moved \n      <a href=\"" +
                      location + "\">here</a>\n    </div>\n  </body>\n</html>\n",
                  kHtml);
}

// The AM did not answer: proxyLink's IOException leaves the servlet and Jetty's error handler
// answers 500 (not recorded: the page's shape is Jetty 9.4's, its words approximate).
void ServerError(httplib::Response& res, const std::string& uri, const std::string& message) {
  RmHeaders(res);
  res.status = 500;
  res.set_content("<html>\n<head>\n<meta http-equiv=\"Content-Type\" content=\"text/html;charset=utf-8\"/>\n"
                  "<title>Error 500 " + message + "</title>\n</head>\n<body><h2>HTTP ERROR 500 " + message +
                      "</h2>\n<table>\n<tr><th>URI:</th><td>" + uri +
                      "</td></tr>\n<tr><th>STATUS:</th><td>500</td></tr>\n<tr><th>MESSAGE:</th><td>" + message +
                      "</td></tr>\n<tr><th>SERVLET:</th><td>proxy</td></tr>\n</table>\n\n</body>\n</html>\n",
                  kHtml);
}

// Java's words for why the AM did not answer.
std::string JavaMessage(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "java.net.ConnectException: Connection refused (Connection refused)";
    case httplib::Error::Read:
      return "java.net.SocketTimeoutException: Read timed out";
    default:
      return "java.io.IOException: " + httplib::to_string(e);
  }
}

// buildTrackingUrl: the tracking URL (made absolute as ProxyUriUtils.getUriFromAMUrl does),
// the request's query parameters added to its own, `rest` appended as a path.
std::string BuildTrackingUrl(std::string tracking, const std::string& rest, const std::string& query) {
  if (tracking.find("://") == std::string::npos) tracking = "http://" + tracking;
  std::string own_query;
  if (size_t q = tracking.find('?'); q != std::string::npos) {
    own_query = tracking.substr(q + 1);
    tracking.resize(q);
  }
  if (!rest.empty()) {
    // The path of http://host:port is "" (the authority ends at the first '/' after "//").
    size_t path_at = tracking.find('/', tracking.find("://") + 3);
    if (path_at == std::string::npos) tracking += "/";
    if (tracking.back() != '/') tracking += "/";
    tracking += rest;
  }
  std::string all_query = own_query.empty() ? query : query.empty() ? own_query : own_query + "&" + query;
  return all_query.empty() ? tracking : tracking + "?" + all_query;
}

// What the proxy does for one application, decided under the double's lock.
struct Decision {
  enum Kind { kNotFound, kRedirect, kProxy } kind = kNotFound;
  std::string url;  // kRedirect: the Location; kProxy: what to fetch
};

Decision Decide(YarnDoubleImpl& d, const std::string& app_id, const std::string& rest, const std::string& query) {
  static const std::regex kAppId(R"(application_(\d+)_(\d+))");
  std::smatch m;
  Decision out;
  if (!std::regex_match(app_id, m, kAppId)) return out;
  std::lock_guard<std::mutex> lock(d.mu_);
  if (m[1].str() != std::to_string(d.cluster_ts_)) return out;
  App* app = nullptr;
  try {
    app = d.FindAppLocked(std::stoi(m[2].str()));
  } catch (const std::exception&) {  // out of range: no such application
    return out;
  }
  if (app == nullptr) return out;
  YarnDoubleImpl::TrackingUrls urls = d.TrackingUrlsLocked(*app);
  if (urls.original == "N/A" || urls.original.empty()) {
    // getTrackingUri: no tracking URL, and the report came from the RM: its application page.
    return {Decision::kRedirect, d.RmWebUrl() + "/cluster/app/" + app->id_str};
  }
  std::string to_fetch = BuildTrackingUrl(urls.original, rest, query);
  return {app->Final() ? Decision::kRedirect : Decision::kProxy, to_fetch};
}

// GET `url` (http://host[:port]/path?query) with the request's pass-through headers; the
// answer into `res`.
void Forward(const std::string& url, const httplib::Request& req, httplib::Response& res) {
  static const std::regex kUrl(R"((https?)://([^/?#]+)([^#]*))");
  std::smatch m;
  if (!std::regex_match(url, m, kUrl) || m[1].str() != "http") {
    // The double's proxy speaks plain HTTP only (no yarn.resourcemanager.application-https.policy).
    return ServerError(res, req.path, "java.io.IOException: cannot proxy to " + url);
  }
  std::string path = m[3].str().empty() ? "/" : m[3].str();
  if (path[0] == '?') path = "/" + path;
  httplib::Client client("http://" + m[2].str());
  client.set_connection_timeout(5);
  client.set_read_timeout(30);
  client.set_follow_location(true);  // the servlet's HttpClient follows the AM's redirects
  client.set_decompress(false);      // the AM's bytes as sent, with their Content-Encoding
  client.set_url_encode(false);      // the path as the user sent it (percent-encoded)
  httplib::Headers headers;
  for (const auto& [name, value] : req.headers) {
    if (PassedThrough(name)) headers.emplace(name, value);
  }
  httplib::Result got = client.Get(path.c_str(), headers);
  if (!got) return ServerError(res, req.path, JavaMessage(got.error()));
  RmHeaders(res);
  res.status = got->status;
  std::string content_type;
  std::set<std::string> replaced;  // lower-case names the AM's headers took over
  for (const auto& [name, value] : got->headers) {
    if (Lower(name) == "content-type") content_type = value;
    if (HopByHop(name)) continue;
    // resp.setHeader: the AM's value replaces the RM's (httplib's set_header adds one more).
    if (replaced.insert(Lower(name)).second) res.headers.erase(name);
    res.set_header(name, value);
  }
  if (content_type.empty()) {
    res.body = got->body;
  } else {
    res.set_content(got->body, content_type);
  }
}

}  // namespace

RmWebServer::RmWebServer(YarnDoubleImpl& d) : d_(d) {}
RmWebServer::~RmWebServer() { Stop(); }

Status RmWebServer::Start(const std::string& bind_ip) {
  server_ = std::make_unique<httplib::Server>();
  httplib::Server& s = *server_;
  // GET serves HEAD too (httplib sends no body for it), as HttpServlet.doHead calls doGet.
  s.Get(R"(/proxy(/.*)?)", [this](const httplib::Request& req, httplib::Response& res) {
    // The raw target: the rest of the path goes to the AM as the user encoded it.
    std::string target = req.target.empty() ? req.path : req.target;
    std::string query;
    if (size_t q = target.find('?'); q != std::string::npos) {
      query = target.substr(q + 1);
      target.resize(q);
    }
    // pathInfo "/<app>/<rest>" split in at most three, as the servlet does.
    std::string info = target.substr(std::string_view("/proxy").size());
    if (info.empty() || info == "/") return NotFound(res, "Your path appears to be formatted incorrectly.");
    size_t slash = info.find('/', 1);
    std::string app_id = info.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
    std::string rest = slash == std::string::npos ? "" : info.substr(slash + 1);
    if (!std::regex_match(app_id, std::regex(R"(application_\d+_\d+)"))) {
      return NotFound(res, app_id + " appears to be formatted incorrectly.");
    }
    Decision decision = Decide(d_, app_id, rest, query);
    switch (decision.kind) {
      case Decision::kNotFound:
        return NotFound(res, "Application " + app_id + " could not be found in RM or history server");
      case Decision::kRedirect:
        return Redirect(res, decision.url);
      case Decision::kProxy:
        return Forward(decision.url, req, res);
    }
  });
  port_ = s.bind_to_any_port(bind_ip);
  if (port_ < 0) return Status::Unavailable("RM web server: cannot bind " + bind_ip);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void RmWebServer::Stop() {
  if (server_ && thread_.joinable()) {
    // As NmWebServer::Stop: stop() before listen_after_bind() runs would be lost.
    loom::testing::Eventually([&] { return server_->is_running(); }, std::chrono::seconds(5),
                              std::chrono::milliseconds(1));
    server_->stop();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace loom::yarn_double
