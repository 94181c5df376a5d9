#pragma once
// The NodeManager web services of the YARN TEST DOUBLE (cpp-httplib), the container-log part
// shaped like the recorded Hadoop 3.3.6 NodeManager (nm-web/, log-aggregation/tfile-http-0*):
//   GET /ws/v1/node/containerlogs/{cid}/{file}[?size=N]  the file inside the NM's text wrapper
//       (chunked text/plain; size=-N the last N bytes, N the first N; "This log file belongs
//       to a running container" while it runs); 404 "Cannot find this log on the local disk."
//   GET /ws/v1/node/containers/{cid}/logs  the JSON list (fileSize as a string, directory order)
//   GET /ws/v1/node/containers/{cid}       200 while the container runs, then 404
// A container is served from its log dir while its application is known to the node, which is
// for good with log aggregation off (a real NM: yarn.nodemanager.log.retain-seconds), and until
// the logs are uploaded with it on. After that, or for a container the node never ran:
// 404 text / 500 JSON "Unknown container ...". A malformed container id: 400.
// Thread-safe: handlers run on httplib's pool and read the double's state under its mutex.

#include <memory>
#include <string>
#include <thread>

#include "core/status.h"

namespace httplib {
class Server;
}

namespace loom::yarn_double {

class YarnDoubleImpl;

class NmWebServer {
 public:
  // Serves the containers of node `node` of `d`, which must outlive it.
  NmWebServer(YarnDoubleImpl& d, int node);
  ~NmWebServer();  // Stop()
  NmWebServer(const NmWebServer&) = delete;
  NmWebServer& operator=(const NmWebServer&) = delete;

  // Listens on bind_ip:port (0: an ephemeral port).
  Status Start(const std::string& bind_ip, int port);
  void Stop();  // idempotent
  int port() const { return port_; }

 private:
  YarnDoubleImpl& d_;
  int node_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

// Starts one NmWebServer per NodeManager of `d`, on the http port each one reserved (node 0:
// nm_http_port_), releasing the reservation. Called at the end of YarnDoubleImpl::Start().
Status StartNmWebServers(YarnDoubleImpl& d);
void StopNmWebServers(YarnDoubleImpl& d);

// Hadoop's Times.format in UTC: "Sun Nov 22 18:46:25 +0000 2026".
std::string HadoopTime(int64_t ms);

}  // namespace loom::yarn_double
