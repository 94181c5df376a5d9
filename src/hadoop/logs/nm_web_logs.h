#pragma once
// Client of a NodeManager's web services for container logs (Hadoop 2.9+ and 3.x, recorded
// from 3.3.6 in nm-web/ of the captures):
//   GET /ws/v1/node/containers/{cid}/logs             the container's log files (JSON)
//   GET /ws/v1/node/containerlogs/{cid}/{file}[?size=N] one file, inside the NM's text wrapper
//       ("Container: ... LogContents:\n" + bytes + "End of LogType:<file>." + [running note] + rule)
// A NodeManager serves a container's logs from its local log dir while the container runs
// and, once it has finished, until its application's logs are aggregated (log aggregation
// on) or for yarn.nodemanager.log.retain-seconds (off). After that it answers "Unknown
// container" (404 for a file, 500 for the list) or redirects to yarn.log.server.url; both
// come back as NmLogAnswer::kUnknownContainer, which means "read the aggregated logs".
// One HTTP exchange per call (libcurl, loaded on first use), no state: thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace loom::hadoop {

enum class NmLogAnswer {
  kServed,            // the NM answered with the file / the list
  kUnknownContainer,  // the NM does not (or no longer) serve this container's logs
  kNoSuchFile,        // the container is served but has no such log file
};

struct NmLogContent {
  NmLogAnswer answer = NmLogAnswer::kServed;
  std::string bytes;          // kServed: the file's bytes (all, or the part `size` asked for)
  int64_t file_length = 0;    // kServed: the whole file's length when it was read ("LogLength")
  std::string last_modified;  // kServed: "LogLastModifiedTime", e.g. "Sun Nov 22 18:46:25 +0000 2026"
  bool container_running = false;  // kServed: the NM said the file "belongs to a running container"
  std::string message;        // otherwise: the NM's words
};

struct NmLogFileInfo {
  std::string name;
  int64_t length = 0;
  std::string last_modified;
  bool aggregated = false;  // listed from aggregated logs (a rolling upload), not the NM's disk
};

struct NmLogListing {
  NmLogAnswer answer = NmLogAnswer::kServed;  // kServed or kUnknownContainer
  std::vector<NmLogFileInfo> files;           // in the NM's order (directory order)
  std::string message;
};

class NmWebLogs {
 public:
  // `http_address` is the NM web server's "host:port" (a container's node_http_address),
  // http; or "https://host:port" (yarn.http.policy=HTTPS_ONLY, HadoopConf::nm_web_scheme);
  // `user` is sent as user.name= (simple HTTP authentication) when not empty. With the process's
  // Kerberos login, requests also negotiate SPNEGO (hadoop/hdfs/spnego.h); a NodeManager
  // that demands it of a process without one is Unauthenticated, naming kinit.
  NmWebLogs(std::string http_address, std::string user);

  // One log file. `size`: absent, the whole file; N > 0 its first N bytes; N < 0 its last
  // |N| bytes; 0 none (file_length still says how long it is).
  // Errors: Unavailable (NM unreachable, timed out, or a server error other than "Unknown
  // container"), InvalidArgument (the NM rejected the container id), PermissionDenied (401/403),
  // Internal (an answer this client cannot read).
  Result<NmLogContent> ReadLog(const std::string& container_id, const std::string& file,
                               std::optional<int64_t> size = std::nullopt) const;
  // The container's log files; errors as ReadLog.
  Result<NmLogListing> ListLogs(const std::string& container_id) const;

  const std::string& http_address() const { return http_address_; }

 private:
  std::string http_address_;
  std::string user_;
};

// The decoding of one answer, without I/O (what ReadLog/ListLogs do with what they receive).
// `code` is the HTTP status, `location` the redirect target if any.
Result<NmLogContent> ParseContainerLogsAnswer(long code, const std::string& body, const std::string& location,
                                              const std::string& container_id, const std::string& file,
                                              std::optional<int64_t> size);
Result<NmLogListing> ParseLogListAnswer(long code, const std::string& body, const std::string& location);

}  // namespace loom::hadoop
