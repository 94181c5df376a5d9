#pragma once
// RendezvousServer: the HTTP key-value store through which Horovod's gloo controller finds its
// peers, the one `horovodrun` serves in its gloo mode (horovod/runner/http/http_server.py,
// RendezvousServer + RendezvousHandler). Written from that protocol, for the AM of a job with
// loom.application.framework=horovod:
//
//   PUT    /<scope>/<key>  body = value       -> 200 (stored; a second PUT replaces it)
//   GET    /<scope>/<key>                     -> 200 + value, or 404 while nobody has put it
//   DELETE /<scope>/<key>                     -> 200; a process finalizing that scope, see below
//   anything else: 400 (a path that is not /<scope>/<key>, a Content-Length that is not one
//   decimal number, or a PUT body framed or encoded otherwise: Transfer-Encoding,
//   Content-Encoding, multipart), 405 (another method cpp-httplib knows; one it does not, it
//   answers 400), 408 (a body not received within 3 s, horovod's
//   SINGLE_REQUEST_TIMEOUT; a request line and headers not in by then: closed unanswered),
//   411 (a PUT without Content-Length), 413 (a body over 16 MiB, refused from its header),
//   414 (a request line over 8 KiB), 507 (the store holds 128 MiB already; see Limits).
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
// The HTTP is cpp-httplib's (cmake/HttpLib.cmake), with the store's own rules on top. Keys and
// scopes are taken verbatim from the request target (no percent-decoding, and a '?' is part of
// the key, as in Python's http.server). Each answer carries Content-Length (spelled so:
// Horovod's HTTP client matches that header case-sensitively) and "Connection: close", and the
// connection is closed after it, as horovod's HTTP/1.0 server does (the status line says
// HTTP/1.1: Horovod's client reads either, up to the close).
//
// The store is unauthenticated, as horovodrun's: Horovod's client has no way to send a secret.
// It holds nothing but the processes' addresses.
//
// Threading: Start/Stop from one thread; Reset and the accessors from any thread. Requests are
// served by a few threads of its own, so a slow client holds up only one of them, for at most
// the request time (3 s to send its request, as much to take the answer: a watchdog shuts the
// socket down when either is up; a body that stops coming is given up 3 s after its last byte,
// a read's timeout, so 6 s at worst). At most 64 accepted connections wait for a thread; more are
// closed at once. cpp-httplib's accept loop retries a full descriptor table (EMFILE) but ends on
// any other accept error (ENFILE, ENOMEM): the store then stops serving, and says so in the log.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
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
  RendezvousServer();
  // Each request's time is read on `clock` (a FakeClock in tests).
  explicit RendezvousServer(Limits limits, Clock& clock = Clock::Real());
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
  size_t pending() const;

  struct Response {
    int code = 200;
    std::string body;
  };
  // The answer to one parsed request (the HTTP layer aside).
  Response Handle(const std::string& method, const std::string& path, std::string body);

 private:
  class Http;       // the cpp-httplib server, with the store's handlers and deadlines
  class HttpQueue;  // cpp-httplib's queue of accepted connections, over queue_ and workers_
  void WorkerLoop();
  // From cpp-httplib's accept loop: queues an accepted connection's work, or closes it
  // unanswered when max_pending wait already or the server stops.
  void Enqueue(std::function<void()> serve);
  // From cpp-httplib's accept loop, at its end: closes the waiting connections unanswered.
  void CloseWaiting();

  const Limits limits_;
  Clock& clock_;
  int port_ = 0;
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> queued_{0};
  std::unique_ptr<Http> http_;
  std::thread listener_;  // cpp-httplib's accept loop
  std::vector<std::thread> workers_;

  mutable std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  bool stopping_ = false;                        // queue_mu_
  std::deque<std::function<void()>> queue_;      // an accepted connection's work each; queue_mu_

  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, std::string>> data_;  // scope -> key -> value; mu_
  size_t stored_bytes_ = 0;  // the keys' and values' sizes in data_; mu_
  std::map<std::string, int> scope_sizes_;                          // mu_
  std::map<std::string, std::set<std::string>> finished_;           // scope -> keys deleted; mu_
};

}  // namespace loom::am
