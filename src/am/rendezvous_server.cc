#include "am/rendezvous_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>

#include <spdlog/spdlog.h>

#include "core/ports.h"
#include "core/strings.h"

namespace loom::am {

namespace {

constexpr int kWorkers = 4;
constexpr size_t kMaxHeaderBytes = 16 * 1024;
// accept4 failing for want of descriptors or memory: wait this long before trying again.
constexpr int kAcceptBackoffMs = 100;

const char* Reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 507: return "Insufficient Storage";
    default: return "Error";
  }
}

// Milliseconds left before `deadline`, at least 0.
int MsLeft(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Appends what `fd` has to `buf`, waiting until `deadline`; false on timeout, EOF or error.
bool ReadMore(int fd, std::string& buf, std::chrono::steady_clock::time_point deadline) {
  pollfd p{fd, POLLIN, 0};
  int ready = ::poll(&p, 1, MsLeft(deadline));
  if (ready <= 0) return false;
  char chunk[16384];
  ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
  if (n <= 0) return false;
  buf.append(chunk, static_cast<size_t>(n));
  return true;
}

// Sends `data` until `deadline` (each send also gives up after the socket's SO_SNDTIMEO): a
// client that does not read must not hold a worker, and Stop() with it, for ever.
void SendAll(int fd, const std::string& data, std::chrono::steady_clock::time_point deadline) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client went away or did not read in time: nothing to tell it
    sent += static_cast<size_t>(n);
    if (sent < data.size() && std::chrono::steady_clock::now() >= deadline) return;
  }
}

}  // namespace

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
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno("rendezvous server: eventfd", err);
  }
  listen_fd_ = fd;
  port_ = ntohs(addr.sin_port);
  stopping_ = false;
  for (int i = 0; i < kWorkers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return port_;
}

void RendezvousServer::Stop() {
  stopping_ = true;
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
  if (acceptor_.joinable()) acceptor_.join();
  std::deque<int> unserved;
  {
    // Under the lock, so that no worker is between its check of `stopping_` and its wait.
    std::lock_guard<std::mutex> lock(queue_mu_);
    unserved.swap(queue_);
  }
  queue_cv_.notify_all();
  // Connections no worker has taken are closed unanswered now, not after the requests in
  // progress (Horovod's client takes that as a failed try, and tries again).
  for (int fd : unserved) ::close(fd);
  for (auto& w : workers_) w.join();
  workers_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
}

void RendezvousServer::AcceptLoop() {
  while (!stopping_) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // The connection stays in the backlog, so the listening socket stays readable: without
        // a pause this loop would spin. Stop() still wakes it at once.
        pollfd wake{wake_fd_, POLLIN, 0};
        ::poll(&wake, 1, kAcceptBackoffMs);
      }
      continue;
    }
    // No request may take a worker longer than its time (SendAll, ReadMore).
    auto ms = limits_.request_timeout.count();
    timeval limit{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>(ms % 1000 * 1000)};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      if (queue_.size() >= limits_.max_pending) {
        // Horovod's client takes a connection closed unanswered as a failed try, and tries
        // again 500 ms later (HTTPStore::PerformHTTP).
        ::close(fd);
        continue;
      }
      queue_.push_back(fd);
      ++queued_;
    }
    queue_cv_.notify_one();
  }
}

void RendezvousServer::WorkerLoop() {
  for (;;) {
    int fd;
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;  // what is queued, Stop() closes
      fd = queue_.front();
      queue_.pop_front();
    }
    Serve(fd);
    ::close(fd);
  }
}

void RendezvousServer::Serve(int fd) {
  auto deadline = std::chrono::steady_clock::now() + limits_.request_timeout;
  auto answer = [this, fd](int code, const std::string& body = "") {
    SendAll(fd,
            "HTTP/1.0 " + std::to_string(code) + " " + Reason(code) + "\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body,
            std::chrono::steady_clock::now() + limits_.request_timeout);
  };
  std::string buf;
  size_t header_end;
  while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
    if (buf.size() > kMaxHeaderBytes) return answer(431);
    if (!ReadMore(fd, buf, deadline)) return;  // nothing (complete) to answer
  }
  std::string head = buf.substr(0, header_end);
  std::string body = buf.substr(header_end + 4);
  std::vector<std::string> lines = Split(head, '\n');
  for (auto& l : lines) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
  }
  if (lines.empty()) return answer(400);
  std::vector<std::string> request_line = Split(lines[0], ' ');
  if (request_line.size() != 3) return answer(400);
  const std::string& method = request_line[0];
  const std::string& path = request_line[1];
  std::optional<size_t> content_length;
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon == std::string::npos) return answer(400);
    if (ToLower(Trim(lines[i].substr(0, colon))) != "content-length") continue;
    std::string value = Trim(lines[i].substr(colon + 1));
    // One length, digits only: two could each be read by a different party (request smuggling).
    if (content_length || value.empty() || value.size() > 12 ||
        !std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
      return answer(400);
    }
    content_length = std::stoull(value);
  }
  if (method == "PUT") {
    if (!content_length) return answer(411);
    if (*content_length > limits_.max_value_bytes) return answer(413);
    while (body.size() < *content_length) {
      if (!ReadMore(fd, body, deadline)) return answer(408);  // as horovod: the request is dropped
    }
    body.resize(*content_length);
  }
  Response r = Handle(method, path, std::move(body));
  answer(r.code, r.body);
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
