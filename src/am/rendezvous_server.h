#pragma once
// RendezvousServer: the HTTP key-value store through which Horovod's gloo controller finds its
// peers, the one `horovodrun` serves in its gloo mode (horovod/runner/http/http_server.py,
// RendezvousServer + RendezvousHandler). Written from that protocol, for the AM of a job with
// loom.application.framework=horovod:
//
//   PUT    /<scope>/<key>  body = value       -> 200 (stored; a second PUT replaces it)
//   GET    /<scope>/<key>                     -> 200 + value, or 404 while nobody has put it
//   DELETE /<scope>/<key>                     -> 200; a process finalizing that scope, see below
//   anything else: 400 (a path that is not /<scope>/<key>, or a Content-Length that is not one
//   decimal number), 405 (another method), 408 (a body not received within 3 s, horovod's
//   SINGLE_REQUEST_TIMEOUT), 413 (a body over 16 MiB), 507 (the store holds 128 MiB already;
//   see Limits).
//   Horovod's client (HTTPStore::PerformHTTP) tries again on anything but 200 and 404, and on a
//   connection closed unanswered, then fails the rank.
//
// Every process of the job opens one gloo context per communicator, each in its own scope:
// "global", "local_<HOROVOD_HOSTNAME>" and "cross_<HOROVOD_LOCAL_RANK>" (horovod/common/gloo/
// gloo_context.cc). In it, it PUTs its rank's record under key "<rank>", polls GET for every
// peer's key until it is there (404 means "not yet": horovod's HTTPStore::wait), connects the
// mesh, and at the end DELETEs key "<rank>" (HTTPStore::Finalize). Once every rank of a scope
// of the slot plan has done so, the scope is cleared, as horovod's server does; in a scope the
// plan does not know (process sets: "global_process_set_hash_<h>") a DELETE removes that key.
//
// Keys and scopes are taken verbatim from the path (no percent-decoding, as Python's
// http.server). Each answer carries Content-Length (spelled so: Horovod's HTTP client matches
// that header case-sensitively) and closes the connection (HTTP/1.0, as horovod's server).
//
// The store is unauthenticated, as horovodrun's: Horovod's client has no way to send a secret.
// It holds nothing but the processes' addresses.
//
// Threading: Start/Stop from one thread; Reset and the accessors from any thread. Requests are
// served by a few threads of its own, so a slow client holds up only one of them, for at most
// the request time (3 s to send its request, as much to take the answer). At most 64 accepted
// connections wait for a thread; more are closed at once.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace loom::am {

// One process of the job as the slot plan knows it (horovod's SlotInfo), from the variables it
// is given: HOROVOD_HOSTNAME, HOROVOD_LOCAL_RANK, HOROVOD_SIZE, HOROVOD_LOCAL_SIZE,
// HOROVOD_CROSS_SIZE.
struct GlooSlot {
  std::string hostname;
  int local_rank = 0;
  int size = 1;
  int local_size = 1;
  int cross_size = 1;
};

class RendezvousServer {
 public:
  // What one client may cost the AM. The defaults are the served ones; tests make them small.
  struct Limits {
    // To receive one request, and again to send its answer (horovod's SINGLE_REQUEST_TIMEOUT).
    std::chrono::milliseconds request_timeout{3000};
    size_t max_value_bytes = size_t{16} << 20;  // a rank's record: 8 bytes per peer, and a little
    // Keys and values together: 8 bytes x ranks^2 in the global scope, about 4000 ranks.
    size_t max_stored_bytes = size_t{128} << 20;
    size_t max_pending = 64;  // accepted connections waiting for a thread
  };
  RendezvousServer() : RendezvousServer(Limits{}) {}
  explicit RendezvousServer(Limits limits) : limits_(limits) {}
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  // Listens on `bind_address` (IPv4), on a free port of [port_low, port_high] outside the
  // kernel's ephemeral range when there is one (the job's loom.task.port-range: the ports its
  // processes may reach), else an ephemeral port when port_low is 0. The port is bound
  // exclusively (no SO_REUSEADDR), so it never shares one that an executor holds for its task.
  // Returns the port. InvalidArgument: a bad address; ResourceExhausted: no free port in the
  // range; Unavailable: the socket calls failed.
  Result<int> Start(const std::string& bind_address, int port_low = 0, int port_high = 0);
  // Stops serving: requests in progress are answered first (each within its time), connections
  // still waiting for a thread are closed unanswered. Idempotent.
  void Stop();
  int port() const { return port_; }

  // Begins a new rendezvous: drops every key and every finished rank, and takes the scope
  // sizes from `plan` (horovod's RendezvousHTTPServer.init(host_alloc_plan)). Called before any
  // process of a (new) gang is told where the store is, so that an attempt never reads the
  // keys of the one before it.
  void Reset(const std::vector<GlooSlot>& plan);

  // The scope sizes of the plan ("global" -> size, "local_<host>" -> local size,
  // "cross_<local rank>" -> cross size), as horovod derives them.
  static std::map<std::string, int> ScopeSizes(const std::vector<GlooSlot>& plan);

  // What the store holds now (for tests and the AM's log): the value, if any.
  std::optional<std::string> Get(const std::string& scope, const std::string& key) const;
  size_t KeyCount() const;
  // Requests answered so far.
  int64_t requests() const { return requests_.load(); }
  // Connections queued for a thread so far, and those waiting now.
  int64_t queued() const { return queued_.load(); }
  size_t pending() const {
    std::lock_guard<std::mutex> lock(queue_mu_);
    return queue_.size();
  }

  struct Response {
    int code = 200;
    std::string body;
  };
  // The answer to one parsed request (the HTTP layer aside).
  Response Handle(const std::string& method, const std::string& path, std::string body);

 private:
  void AcceptLoop();
  void WorkerLoop();
  void Serve(int fd);

  const Limits limits_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: wakes the accept loop on Stop
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> queued_{0};
  std::thread acceptor_;
  std::vector<std::thread> workers_;

  mutable std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<int> queue_;  // accepted connections; guarded by queue_mu_

  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, std::string>> data_;  // scope -> key -> value; mu_
  size_t stored_bytes_ = 0;  // the keys' and values' sizes in data_; mu_
  std::map<std::string, int> scope_sizes_;                          // mu_
  std::map<std::string, std::set<std::string>> finished_;           // scope -> keys deleted; mu_
};

}  // namespace loom::am
