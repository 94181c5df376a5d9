#include "web/http_server.h"

#include <netdb.h>
#include <sys/socket.h>

#include <atomic>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "web/watched_http_server.h"

namespace loom::web {

namespace {

// cpp-httplib's server with a whole time for each request: a request must be in within
// `request_time` of its connection's start or of the previous answer (plus the keep-alive
// wait), else the connection is closed unanswered. Its answer is timed by each write (5 s).
class WatchedServer : public WatchedHttpServer {
 public:
  std::chrono::milliseconds request_time{10000};

  explicit WatchedServer(Clock& clock) : WatchedHttpServer(clock) {
    // Answered (cpp-httplib logs after each answer, its own refusals too): the next request
    // on a kept-alive connection.
    set_logger([this](const httplib::Request&, const httplib::Response&) {
      if (WatchedConnection* conn = Current()) {
        watchdog().Arm(*conn, std::chrono::seconds(keep_alive_timeout_sec_) + request_time, SHUT_RD);
      }
    });
  }

 private:
  void OnConnection(WatchedConnection& conn) override { watchdog().Arm(conn, request_time, SHUT_RD); }
};

// What every answer carries: nothing cached (the pages show a job that changes), no type
// sniffing (a log served as JSON is never run as a script), and pages that load only this
// server's own files (a value that escaped its escaping still runs nothing from elsewhere).
void AddCommonHeaders(httplib::Response& res) {
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
}

void Fill(httplib::Response& res, const HttpResponse& answer) {
  res.status = answer.status;
  for (const auto& [name, value] : answer.headers) res.set_header(name, value);
  res.set_content(answer.body, answer.content_type);
  AddCommonHeaders(res);
}

}  // namespace

struct HttpServer::Impl {
  explicit Impl(Clock& clock) : server(clock) {}
  WatchedServer server;
  std::atomic<bool> loop_ended{false};
};

HttpResponse JsonError(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  // The message may quote what the client sent, which need not be UTF-8: replaced, not thrown.
  r.body = nlohmann::json{{"error", message}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return r;
}

HttpServer::HttpServer(HttpHandler handler, Clock& clock)
    : handler_(std::move(handler)), impl_(std::make_unique<Impl>(clock)) {}

HttpServer::~HttpServer() { Stop(); }

Result<int> HttpServer::Start(const std::string& bind_address, int port, int threads,
                              std::chrono::milliseconds request_time) {
  WatchedServer& s = impl_->server;
  s.request_time = request_time;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s.set_read_timeout(5, 0);
  s.set_write_timeout(5, 0);
  s.set_keep_alive_timeout(5);
  // cpp-httplib's default also sets SO_REUSEPORT, with which a second server could bind the
  // same port and take half its connections: only SO_REUSEADDR (a restart right after a stop).
  s.set_socket_options([](socket_t sock) {
    int one = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  });
  s.set_payload_max_length(0);  // a read-only server takes no body: a request with one is 413
  s.Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
    HttpRequest request{req.method, req.path, {}};
    for (const auto& [name, value] : req.params) request.params.emplace(name, value);
    Fill(res, handler_(request));
  });
  auto refuse = [](const httplib::Request&, httplib::Response& res) {
    Fill(res, JsonError(405, "read-only: only GET and HEAD"));
    res.set_header("Allow", "GET, HEAD");
  };
  s.Post(".*", refuse);
  s.Put(".*", refuse);
  s.Patch(".*", refuse);
  s.Delete(".*", refuse);
  s.Options(".*", refuse);
  // cpp-httplib's own refusals (a request it cannot parse, a body over the limit) get the
  // same JSON shape as the handler's.
  s.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    Fill(res, JsonError(res.status, httplib::detail::status_message(res.status)));
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what += std::string(": ") + e.what();
    } catch (...) {
    }
    Fill(res, JsonError(500, what));
  });
  // Numeric only: cpp-httplib resolves with getaddrinfo, which must not reach glibc's NSS in
  // the static `loom`.
  const int flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  int bound = port == 0 ? s.bind_to_any_port(bind_address, flags) : (s.bind_to_port(bind_address, port, flags) ? port : -1);
  if (bound <= 0) {
    return Status::Unavailable("cannot listen on " + bind_address + ":" + std::to_string(port) +
                               " (a numeric address, a free port)");
  }
  thread_ = std::thread([this] {
    impl_->server.listen_after_bind();
    impl_->loop_ended = true;
  });
  // cpp-httplib's stop() does nothing before its loop runs: wait for it (microseconds).
  while (!impl_->server.is_running() && !impl_->loop_ended) std::this_thread::yield();
  return bound;
}

void HttpServer::Stop() {
  if (!thread_.joinable()) return;
  impl_->server.stop();
  thread_.join();
}

}  // namespace loom::web
