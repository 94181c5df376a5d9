#pragma once
// The ResourceManager's web server of the YARN TEST DOUBLE (cpp-httplib, 127.0.0.1, an
// ephemeral port in place of 8088): the RM's web proxy, shaped like the recorded Hadoop 3.3.6
// RM (yarn-captures rm-rest/02, 05, 07; README §11) and YARN's WebAppProxyServlet:
//   GET|HEAD /proxy/<app>[/<rest>][?<query>]
//     * an application the RM does not know: 404, the recorded "could not be found in RM or
//       history server" page (rm-rest/07);
//     * no tracking URL (not registered yet, registered "", unregistered without a final one:
//       the report's originalTrackingUrl "N/A"): 302 to the RM's application page
//       http://<node_host>:<port>/cluster/app/<app> with the recorded "Moved" page (02, 05);
//     * FINISHED, KILLED or FAILED with a tracking URL: 302 to it + rest + query (the servlet
//       sends users on rather than proxying an ended application; KILLED and FAILED have the
//       RM's application page as theirs);
//     * otherwise the request goes to the tracking URL + rest + query, as a GET (HEAD too, as
//       HttpServlet.doHead runs doGet) with the servlet's pass-through headers, and its status,
//       headers (less the hop-by-hop ones) and body come back under the RM's own headers;
//       redirects of the AM are followed, as the servlet's HttpClient does. An AM that does not
//       answer: 500 (the servlet's IOException reaches Jetty; that page is not recorded).
//   A malformed application id or a path without one: 404 in the same page shape.
// Nothing else is served: the RM's REST API and its /cluster pages are not in the double (404).
// One server for both ResourceManagers under Options::rm_ha (they share the RM state).
// Thread-safe: handlers run on httplib's pool, read the double's state under its mutex and
// call the AM without it.

#include <memory>
#include <string>
#include <thread>

#include "core/status.h"

namespace httplib {
class Server;
}

namespace loom::yarn_double {

class YarnDoubleImpl;

class RmWebServer {
 public:
  // Serves the applications of `d`, which must outlive it.
  explicit RmWebServer(YarnDoubleImpl& d);
  ~RmWebServer();  // Stop()
  RmWebServer(const RmWebServer&) = delete;
  RmWebServer& operator=(const RmWebServer&) = delete;

  // Listens on bind_ip, an ephemeral port.
  Status Start(const std::string& bind_ip);
  void Stop();  // idempotent
  int port() const { return port_; }

 private:
  YarnDoubleImpl& d_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace loom::yarn_double
