#include "web/watched_http_server.h"

#include <fcntl.h>
#include <unistd.h>

namespace loom::web {

namespace {
thread_local WatchedConnection* t_current = nullptr;
}  // namespace

WatchedConnection* WatchedHttpServer::Current() { return t_current; }

bool WatchedHttpServer::process_and_close_socket(socket_t sock) {
  WatchedConnection conn;
  conn.fd = ::fcntl(sock, F_DUPFD_CLOEXEC, 0);
  if (conn.fd < 0) {
    ::close(sock);
    return false;
  }
  OnConnection(conn);
  t_current = &conn;
  bool ok = httplib::detail::process_server_socket(
      svr_sock_, sock, keep_alive_max_count_, keep_alive_timeout_sec_, read_timeout_sec_, read_timeout_usec_,
      write_timeout_sec_, write_timeout_usec_,
      [this](httplib::Stream& strm, bool close_connection, bool& connection_closed) {
        return process_request(strm, close_connection, connection_closed,
                               [this](httplib::Request& req) {
                                 // The request's head is in: from here its answer is timed
                                 // (the subclass arms for it, or times a body its own way).
                                 if (WatchedConnection* in = Current()) watchdog_.Disarm(*in);
                                 PrepareRequest(req);
                               });
      });
  httplib::detail::shutdown_socket(sock);
  httplib::detail::close_socket(sock);
  t_current = nullptr;
  watchdog_.Disarm(conn);
  ::close(conn.fd);
  return ok;
}

}  // namespace loom::web
