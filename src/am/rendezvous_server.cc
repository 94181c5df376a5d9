#include "am/rendezvous_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "core/ports.h"
#include "core/strings.h"
#include "web/watched_http_server.h"

namespace loom::am {

namespace {

constexpr int kWorkers = 4;

// When the request of the connection this thread serves must be in. The watchdog enforces each
// connection's whole time (web/watched_http_server.h): for reading while the request line and
// headers are due (the connection is then closed unanswered), both ways while the answer is.
// A PUT's body is timed by its reader, against this.
thread_local Clock::TimePoint t_request_due;
// Set while this thread closes, unanswered, connections that may not wait (Enqueue, CloseWaiting).
thread_local bool t_refuse = false;

// One Content-Length at most, digits only: two could each be read by a different party
// (request smuggling), and cpp-httplib would take the first and read a sign or junk as 0.
bool ContentLengthIsValid(const httplib::Request& req) {
  size_t n = req.get_header_value_count("Content-Length");
  if (n == 0) return true;
  if (n > 1) return false;
  std::string value = Trim(req.get_header_value("Content-Length"));
  return !value.empty() && value.size() <= 12 &&
         std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

}  // namespace

class RendezvousServer::HttpQueue : public httplib::TaskQueue {
 public:
  explicit HttpQueue(RendezvousServer& owner) : owner_(owner) {}
  void enqueue(std::function<void()> fn) override { owner_.Enqueue(std::move(fn)); }
  void shutdown() override { owner_.CloseWaiting(); }

 private:
  RendezvousServer& owner_;
};

class RendezvousServer::Http : public web::WatchedHttpServer {
 public:
  explicit Http(RendezvousServer& owner) : WatchedHttpServer(owner.clock_), owner_(owner) {
    const auto timeout = owner.limits_.request_timeout;
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
    new_task_queue = [this] { return new HttpQueue(owner_); };
    set_read_timeout(us / 1000000, us % 1000000);
    set_write_timeout(us / 1000000, us % 1000000);
    // One request a connection, then "Connection: close" and the close: Horovod's client reads
    // the answer up to the close. Its wait for that request is in whole seconds: the watchdog
    // ends it first, at the request's time.
    set_keep_alive_max_count(1);
    set_keep_alive_timeout(std::chrono::duration_cast<std::chrono::seconds>(timeout).count() + 2);
    set_payload_max_length(owner.limits_.max_value_bytes);  // also refused before, from the header
    // Everything but a PUT's body is answered here, before cpp-httplib would read a body or
    // route on its percent-decoded path.
    set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!ContentLengthIsValid(req)) return Answer(res, {400, ""});
      if (req.method != "PUT") return Answer(res, owner_.Handle(req.method, req.target, ""));
      // Only Content-Length frames the body, as in horovod's server.
      if (req.has_header("Transfer-Encoding") || req.has_header("Content-Encoding") || req.is_multipart_form_data()) {
        return Answer(res, {400, ""});
      }
      if (!req.has_header("Content-Length")) return Answer(res, {411, ""});
      // Digits only, at most 12 (ContentLengthIsValid): no exception.
      if (std::stoull(Trim(req.get_header_value("Content-Length"))) > owner_.limits_.max_value_bytes) {
        return Answer(res, {413, ""});
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    // Any target: [\s\S] where '.' would not match a decoded "%0A".
    Put(R"([\s\S]*)", [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read) {
      std::string body;
      // Checked as it comes (a body that trickles), and cpp-httplib's read timeout, the request
      // time, for one that stops.
      bool whole = read([this, &body](const char* data, size_t n) {
        body.append(data, n);
        return Current() == nullptr || clock().Now() <= t_request_due;
      });
      // Not received in time, or the client went: as horovod, the request is dropped.
      if (!whole) return (void)Answer(res, {408, ""});
      Answer(res, owner_.Handle("PUT", req.target, std::move(body)));
    });
  }

  // Serves on `fd`, bound and listening, until stop().
  bool Serve(int fd) {
    svr_sock_ = fd;
    return listen_after_bind();
  }

 private:
  // The request is in: `response` is sent within the request time from now.
  httplib::Server::HandlerResponse Answer(httplib::Response& res, RendezvousServer::Response response) {
    if (web::WatchedConnection* conn = Current()) watchdog().Arm(*conn, owner_.limits_.request_timeout, SHUT_RDWR);
    res.status = response.code;
    res.body = std::move(response.body);
    return httplib::Server::HandlerResponse::Handled;
  }

  bool process_and_close_socket(socket_t sock) override {
    if (t_refuse) {
      ::close(sock);
      return false;
    }
    return web::WatchedHttpServer::process_and_close_socket(sock);
  }
  void OnConnection(web::WatchedConnection& conn) override {
    t_request_due = clock().Now() + owner_.limits_.request_timeout;
    watchdog().Arm(conn, owner_.limits_.request_timeout, SHUT_RD);
  }
  // The request's head is in (the base has disarmed its connection): its answer is timed by
  // Answer's arming, a PUT's body by its reader (shut for reading, the socket could not take
  // the 408). The store answers whole values, as horovod's: no Range.
  void PrepareRequest(httplib::Request& req) override { req.ranges.clear(); }

  RendezvousServer& owner_;
};

RendezvousServer::RendezvousServer() : RendezvousServer(Limits{}) {}

RendezvousServer::RendezvousServer(Limits limits, Clock& clock) : limits_(limits), clock_(clock) {}

RendezvousServer::~RendezvousServer() { Stop(); }

Result<int> RendezvousServer::Start(const std::string& bind_address, int port_low, int port_high) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, bind_address.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("rendezvous server: bad bind address " + bind_address);
  }
  std::vector<int> candidates;
  if (port_low > 0) {
    candidates = PortCandidates(port_low, port_high);
  } else {
    candidates.push_back(0);
  }
  // The socket is Loom's, not cpp-httplib's bind_to_port: that one could not tell a port in
  // use (try the next) from a failure.
  int fd = -1;
  for (int p : candidates) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status::FromErrno("rendezvous server: socket", errno);
    addr.sin_port = htons(static_cast<uint16_t>(p));
    // No SO_REUSEADDR: an executor on this host may hold a port of the same range, bound with
    // SO_REUSEADDR and not listening, and a second SO_REUSEADDR socket could bind it too.
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) break;
    int err = errno;
    ::close(fd);
    fd = -1;
    if (err != EADDRINUSE && err != EACCES) return Status::FromErrno("rendezvous server: bind " + bind_address, err);
  }
  if (fd < 0) {
    return Status::ResourceExhausted("rendezvous server: no free port in " + std::to_string(port_low) + "-" +
                                     std::to_string(port_high) + " (loom.task.port-range)");
  }
  socklen_t len = sizeof(addr);
  if (::listen(fd, SOMAXCONN) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno("rendezvous server: listen", err);
  }
  port_ = ntohs(addr.sin_port);
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = false;
  }
  http_ = std::make_unique<Http>(*this);
  for (int i = 0; i < kWorkers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  auto loop_ended = std::make_shared<std::atomic<bool>>(false);
  listener_ = std::thread([this, fd, loop_ended] {
    if (!http_->Serve(fd)) {
      spdlog::error("Horovod rendezvous store on port {}: accepting connections failed ({}); it serves no more",
                    port_, std::strerror(errno));
    }
    *loop_ended = true;
  });
  // cpp-httplib's stop() does nothing before its loop runs: wait for it (microseconds).
  while (!http_->is_running() && !*loop_ended) std::this_thread::yield();
  return port_;
}

void RendezvousServer::Stop() {
  if (!listener_.joinable()) return;
  // Closes the listening socket; the accept loop then ends with CloseWaiting().
  http_->stop();
  listener_.join();
  // The connections being served are answered first, each within its time.
  for (auto& w : workers_) w.join();
  workers_.clear();
  http_.reset();
}

void RendezvousServer::Enqueue(std::function<void()> serve) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (!stopping_ && queue_.size() < limits_.max_pending) {
      queue_.push_back(std::move(serve));
      ++queued_;
      queue_cv_.notify_one();
      return;
    }
  }
  // Horovod's client takes a connection closed unanswered as a failed try, and tries again
  // 500 ms later (HTTPStore::PerformHTTP).
  t_refuse = true;
  serve();
  t_refuse = false;
}

void RendezvousServer::CloseWaiting() {
  std::deque<std::function<void()>> unserved;
  {
    // Under the lock, so that no worker is between its check of `stopping_` and its wait.
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
    unserved.swap(queue_);
  }
  queue_cv_.notify_all();
  // Closed now, not after the requests in progress (Horovod's client tries again).
  t_refuse = true;
  for (auto& serve : unserved) serve();
  t_refuse = false;
}

size_t RendezvousServer::pending() const {
  std::lock_guard<std::mutex> lock(queue_mu_);
  return queue_.size();
}

void RendezvousServer::WorkerLoop() {
  for (;;) {
    std::function<void()> serve;
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;  // what is queued, CloseWaiting() closes
      serve = std::move(queue_.front());
      queue_.pop_front();
    }
    serve();
  }
}

RendezvousServer::Response RendezvousServer::Handle(const std::string& method, const std::string& path,
                                                    std::string body) {
  ++requests_;
  if (method != "GET" && method != "PUT" && method != "DELETE") return {405, ""};
  // Exactly "/<scope>/<key>" (horovod splits the path on '/' and wants three parts).
  std::vector<std::string> parts = Split(path, '/', /*skip_empty=*/false);
  if (parts.size() != 3 || !parts[0].empty()) return {400, ""};
  const std::string& scope = parts[1];
  const std::string& key = parts[2];
  std::lock_guard<std::mutex> lock(mu_);
  if (method == "GET") {
    auto s = data_.find(scope);
    if (s == data_.end()) return {404, ""};
    auto k = s->second.find(key);
    if (k == s->second.end()) return {404, ""};
    return {200, k->second};
  }
  if (method == "PUT") {
    // Keys count too: many small values under long keys are as costly.
    size_t old = 0;
    if (auto s = data_.find(scope); s != data_.end()) {
      if (auto k = s->second.find(key); k != s->second.end()) old = key.size() + k->second.size();
    }
    size_t after = stored_bytes_ - old + key.size() + body.size();
    if (after > limits_.max_stored_bytes) {
      // Not 413, which blames the value: the store is full. Horovod's client retries a few
      // times, then fails that rank.
      spdlog::warn("Horovod rendezvous store full ({} MiB held): PUT /{}/{} refused", stored_bytes_ >> 20, scope,
                   key.substr(0, 64));
      return {507, ""};
    }
    stored_bytes_ = after;
    data_[scope][key] = std::move(body);
    return {200, ""};
  }
  // DELETE: a process is done with the scope (HTTPStore::Finalize, after gloo's barrier, so
  // every peer has read its key by now).
  auto size = scope_sizes_.find(scope);
  if (size != scope_sizes_.end()) {
    // A set, not horovod's list: a DELETE its client retried must not count twice.
    std::set<std::string>& done = finished_[scope];
    done.insert(key);
    if (static_cast<int>(done.size()) >= size->second) {
      if (auto s = data_.find(scope); s != data_.end()) {
        for (const auto& [k, v] : s->second) stored_bytes_ -= k.size() + v.size();
        data_.erase(s);
      }
      finished_.erase(scope);
    }
  } else if (auto s = data_.find(scope); s != data_.end()) {
    if (auto k = s->second.find(key); k != s->second.end()) {
      stored_bytes_ -= k->first.size() + k->second.size();
      s->second.erase(k);
    }
    if (s->second.empty()) data_.erase(s);
  }
  return {200, ""};
}

std::map<std::string, int> RendezvousServer::ScopeSizes(const std::vector<GlooSlot>& plan) {
  std::map<std::string, int> sizes;
  for (const GlooSlot& slot : plan) {
    sizes["global"] = slot.size;
    sizes["local_" + slot.hostname] = slot.local_size;
    sizes["cross_" + std::to_string(slot.local_rank)] = slot.cross_size;
  }
  return sizes;
}

void RendezvousServer::Reset(const std::vector<GlooSlot>& plan) {
  std::map<std::string, int> sizes = ScopeSizes(plan);
  std::lock_guard<std::mutex> lock(mu_);
  data_.clear();
  stored_bytes_ = 0;
  finished_.clear();
  scope_sizes_ = std::move(sizes);
}

std::optional<std::string> RendezvousServer::Get(const std::string& scope, const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto s = data_.find(scope);
  if (s == data_.end()) return std::nullopt;
  auto k = s->second.find(key);
  if (k == s->second.end()) return std::nullopt;
  return k->second;
}

size_t RendezvousServer::KeyCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [scope, keys] : data_) n += keys.size();
  return n;
}

}  // namespace loom::am
