#pragma once
// The scripted HTTP server of the Hadoop web clients' tests (WebHDFS, the NodeManager's log
// pages, the reader that picks between them): it answers each connection with bytes the test
// chose, recorded answers as they are (headers, chunked bodies, redirects), and keeps every
// request it got. One connection, one request: it closes after each answer, as the clients
// under test expect of these recordings. Test double; for test targets only (links gtest and
// fails the test on a request it has no answer for).
// Thread-safety: the methods may be called from the test while the server thread serves.

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace loom::hadoop::testing {

// One HTTP request as it arrived on the wire.
struct HttpRequest {
  std::string listener;  // the name of the port it came to
  std::string line;      // the request line, "GET /ws/v1/... HTTP/1.1"
  std::string method, target, path;
  std::map<std::string, std::string> query;    // raw (still escaped) values
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // Content-Length bytes
};

// The request line and headers of `head` (up to the blank line; the body is left empty).
HttpRequest ParseHttpHead(const std::string& head);

// "HTTP/1.1 <status_line>" with a Content-Type and a Content-Length body: an answer the
// recordings do not hold.
std::string HttpAnswer(const std::string& status_line, const std::string& content_type, const std::string& body);

class ScriptedHttpServer {
 public:
  // Answers a request itself (a recorded file server), or nullopt: the next scripted answer.
  using Route = std::function<std::optional<std::string>(const HttpRequest&)>;

  // One loopback port per name in `listeners`; `route` sees each request first.
  explicit ScriptedHttpServer(std::vector<std::string> listeners = {""}, Route route = nullptr);
  ~ScriptedHttpServer();
  ScriptedHttpServer(const ScriptedHttpServer&) = delete;
  ScriptedHttpServer& operator=(const ScriptedHttpServer&) = delete;

  int port(const std::string& listener = "") const;
  // "127.0.0.1:<port>".
  std::string address(const std::string& listener = "") const;

  // The next request gets `s2c`; with a `listener`, it must come to that port. An answer that
  // opens with "HTTP/1.1 100" sends that interim answer before the request's body is read,
  // as a real DataNode does, asked for or not.
  void Answer(std::string s2c, std::string listener = "");
  // The requests so far, bodies included, and forgets them; every scripted answer must have
  // been asked for.
  std::vector<HttpRequest> TakeRequests();
  // The requests so far, without the check.
  std::vector<HttpRequest> Requests();
  void ClearRequests();

 private:
  void Loop();
  void Serve(const std::string& listener, int fd);
  std::optional<std::string> NextAnswer(const HttpRequest& request);

  std::vector<std::pair<std::string, int>> listeners_;  // name, fd
  std::map<std::string, int> ports_;
  Route route_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::deque<std::pair<std::string, std::string>> script_;  // listener, s2c
  std::vector<HttpRequest> requests_;
  std::thread thread_;
};

}  // namespace loom::hadoop::testing
