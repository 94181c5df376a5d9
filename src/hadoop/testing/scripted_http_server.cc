#include "hadoop/testing/scripted_http_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string_view>

#include <gtest/gtest.h>

#include "core/strings.h"
#include "hadoop/testing/test_socket.h"

namespace loom::hadoop::testing {

HttpRequest ParseHttpHead(const std::string& head) {
  HttpRequest r;
  std::vector<std::string> lines = Split(head, '\n');
  if (lines.empty()) return r;
  r.line = Trim(lines[0]);
  std::vector<std::string> first = Split(r.line, ' ');
  if (first.size() >= 2) r.method = first[0], r.target = first[1];
  size_t q = r.target.find('?');
  r.path = r.target.substr(0, q);
  if (q != std::string::npos) {
    for (const std::string& kv : Split(r.target.substr(q + 1), '&')) {
      size_t eq = kv.find('=');
      r.query[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    r.headers[ToLower(Trim(lines[i].substr(0, colon)))] = Trim(lines[i].substr(colon + 1));
  }
  return r;
}

std::string HttpAnswer(const std::string& status_line, const std::string& content_type, const std::string& body) {
  return "HTTP/1.1 " + status_line + "\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

ScriptedHttpServer::ScriptedHttpServer(std::vector<std::string> listeners, Route route) : route_(std::move(route)) {
  for (std::string& name : listeners) {
    int port = 0;
    Result<int> fd = ListenLoopback(&port);
    EXPECT_TRUE(fd.ok()) << fd.status().ToString();
    ports_[name] = port;
    listeners_.emplace_back(std::move(name), fd.value_or(-1));
  }
  thread_ = std::thread([this] { Loop(); });
}

ScriptedHttpServer::~ScriptedHttpServer() {
  stop_ = true;
  thread_.join();
  for (const auto& [name, fd] : listeners_) ::close(fd);
}

int ScriptedHttpServer::port(const std::string& listener) const {
  auto it = ports_.find(listener);
  return it == ports_.end() ? 0 : it->second;
}

std::string ScriptedHttpServer::address(const std::string& listener) const {
  return "127.0.0.1:" + std::to_string(port(listener));
}

void ScriptedHttpServer::Answer(std::string s2c, std::string listener) {
  std::lock_guard<std::mutex> lock(mu_);
  script_.emplace_back(std::move(listener), std::move(s2c));
}

std::vector<HttpRequest> ScriptedHttpServer::TakeRequests() {
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_TRUE(script_.empty()) << script_.size() << " scripted answers were never asked for";
  script_.clear();
  return std::exchange(requests_, {});
}

std::vector<HttpRequest> ScriptedHttpServer::Requests() {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void ScriptedHttpServer::ClearRequests() {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.clear();
}

void ScriptedHttpServer::Loop() {
  std::vector<pollfd> fds;
  for (const auto& [name, fd] : listeners_) fds.push_back({fd, POLLIN, 0});
  while (!stop_) {
    // A short wait, so that the destructor's stop is seen soon.
    if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      int conn = ::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) continue;
      Serve(listeners_[i].first, conn);
      ::close(conn);
    }
  }
}

std::optional<std::string> ScriptedHttpServer::NextAnswer(const HttpRequest& request) {
  if (route_) {
    if (std::optional<std::string> routed = route_(request)) return routed;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (script_.empty()) {
    ADD_FAILURE() << "unscripted request " << request.line;
    return std::nullopt;
  }
  auto [listener, s2c] = std::move(script_.front());
  script_.pop_front();
  if (!listener.empty()) {
    EXPECT_EQ(listener, request.listener) << request.target;
  }
  return std::move(s2c);
}

void ScriptedHttpServer::Serve(const std::string& listener, int fd) {
  std::string in;
  char buf[65536];
  size_t head_end;
  while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    in.append(buf, static_cast<size_t>(n));
  }
  HttpRequest request = ParseHttpHead(in.substr(0, head_end));
  request.listener = listener;
  std::optional<std::string> s2c = NextAnswer(request);
  if (s2c && StartsWith(*s2c, "HTTP/1.1 100")) {
    size_t end = s2c->find("\r\n\r\n") + 4;
    (void)WriteAll(fd, std::string_view(*s2c).substr(0, end));
    s2c->erase(0, end);
  }
  size_t length = 0;
  if (request.headers.count("content-length")) length = std::stoul(request.headers["content-length"]);
  request.body = in.substr(head_end + 4);
  while (s2c && request.body.size() < length) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    request.body.append(buf, static_cast<size_t>(n));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
  }
  if (!s2c) return;
  (void)WriteAll(fd, *s2c);
  ::shutdown(fd, SHUT_WR);
}

}  // namespace loom::hadoop::testing
