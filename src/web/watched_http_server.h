#pragma once
// WatchedHttpServer: a cpp-httplib server whose every connection a ConnectionWatchdog watches
// (web/connection_watchdog.h), the base of the dashboard's and portal's HttpServer and of the
// AM's rendezvous store. A subclass arms each connection as it is taken (OnConnection); the base
// disarms it once a request's head is in; the subclass arms it again for what comes next from
// its handlers (Current(), watchdog()).

#include <httplib.h>

#include "web/connection_watchdog.h"

namespace loom::web {

class WatchedHttpServer : public httplib::Server {
 public:
  // Every deadline of the connections is read on `clock`.
  explicit WatchedHttpServer(Clock& clock = Clock::Real()) : clock_(clock), watchdog_(clock) {}

 protected:
  // The connection the calling thread serves (cpp-httplib's handlers run on the thread that
  // took it); nullptr on any other thread.
  static WatchedConnection* Current();
  ConnectionWatchdog& watchdog() { return watchdog_; }
  Clock& clock() { return clock_; }

  // The connection is taken, before its first request is read: arm it.
  virtual void OnConnection(WatchedConnection& conn) = 0;
  // Each request once its head is in (its connection disarmed), before routing; nothing by default.
  virtual void PrepareRequest(httplib::Request& req) {}

  // cpp-httplib's own (0.11.4, private there, so restated), with the connection watched. The
  // watchdog holds its own descriptor of the socket, so that it never shuts down another
  // connection's that took the number cpp-httplib closes.
  bool process_and_close_socket(socket_t sock) override;

 private:
  Clock& clock_;
  ConnectionWatchdog watchdog_;
};

}  // namespace loom::web
