#pragma once
// HttpServer: the one HTTP server of Loom's web pages and JSON API (the AM's dashboard and
// `loom portal`), on cpp-httplib (cmake/HttpLib.cmake). Read-only: GET and HEAD reach the
// handler; any other method is 405. The handler sees a decoded path and the query's
// parameters and returns the whole answer; routing is the handler's (web/job_api.h), so that
// what a path answers is tested without a socket.
//
// Limits, for a server that must keep serving whatever a client sends: a request line of 8 KiB
// and headers of 8 KiB (cpp-httplib's; longer is 414 or 400), no request body (413), a few
// threads, and a whole time for each request to come in (10 s; a client that trickles its
// request holds a thread no longer: web/connection_watchdog.h), 5 s for each write of an
// answer. Answers carry no-store and nosniff, and a Content-Security-Policy that lets a page
// load only this server's own files.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/status.h"

namespace loom::web {

struct HttpRequest {
  std::string method;  // GET or HEAD
  std::string path;    // percent-decoded: "/api/jobs/job_1/logs/worker:0/stdout"
  std::map<std::string, std::string> params;  // the query's, decoded; a repeated one: the first
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class HttpServer {
 public:
  // The connections' request time is read on `clock` (a FakeClock in tests).
  explicit HttpServer(HttpHandler handler, Clock& clock = Clock::Real());
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Listens on `bind_address` (a numeric IPv4 or IPv6 address: names are resolved by the
  // caller, never through glibc's NSS) and `port` (0: any free one); returns the port.
  Result<int> Start(const std::string& bind_address, int port, int threads = 4,
                    std::chrono::milliseconds request_time = std::chrono::seconds(10));
  // Stops listening and waits for the requests being served. Idempotent.
  void Stop();

 private:
  struct Impl;
  HttpHandler handler_;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
};

// A JSON error answer: {"error": message}.
HttpResponse JsonError(int status, const std::string& message);

}  // namespace loom::web
