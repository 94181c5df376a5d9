#pragma once
// Log aggregation in the YARN TEST DOUBLE: what a Hadoop 3.3.6 NodeManager uploads to HDFS
// when an application ends and yarn.log-aggregation-enable is true (README §14 of the
// captures). Writers of the two file formats, shaped byte for byte like the recorded files
// (log-aggregation/tfile-localhost_45454.bin, ifile-localhost_45454.bin), and the double's
// upload step, which writes one file per NodeManager into the FakeHdfs at
// <remote-app-log-dir>/<user>/bucket-logs-<tfile|ifile>/<seq % 10000>/<appId>/<host>_<port>.
// Test code: written independently of Loom's readers in src/hadoop/logs/.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace loom::yarn_double {

class YarnDoubleImpl;

struct LogFileToAggregate {
  std::string name;
  std::string bytes;
  int64_t mtime_ms = 0;  // IFile stores it; TFile does not
};

struct ContainerLogsToAggregate {
  std::string container_id;
  std::vector<LogFileToAggregate> files;  // directory order
};

struct NodeLogsToAggregate {
  std::string app_id;
  std::string owner;    // the application's user
  std::string node_id;  // "localhost:45454"
  std::vector<ContainerLogsToAggregate> containers;  // the order the NM uploads them in
  int64_t upload_time_ms = 0;                        // IFile's uploadTimeStamp
};

// LogAggregationTFileController, compression "none": a BCFile with VERSION,
// APPLICATION_ACL (none), APPLICATION_OWNER, then one entry per container in the given
// order, each container's files sorted by name (AggregatedLogFormat.LogValue sorts them).
// Values are chunked as TFile's ChunkEncoder does (1 MiB buffer, the NM copying 65535-byte
// reads); a data block ends once it holds 256 KiB (the NM's minBlockSize).
std::string WriteTFileLogs(const NodeLogsToAggregate& logs);

// LogAggregationIndexedFileController, compression "none", one upload cycle: SHA-256 of the
// application id, the files' bytes in the given order, the java.io-serialized IndexedLogsMeta
// (containers in java.util.HashMap iteration order, as a real NM's), its length, the id again.
std::string WriteIFileLogs(const NodeLogsToAggregate& logs);

// The double's NodeManager uploads the logs of application `app` (its containers' log dirs)
// in Options::log_aggregation's format. No lock held by the caller.
Status UploadAggregatedLogs(YarnDoubleImpl& d, int32_t app);

// Applications whose logs are due for upload: ended, every container that started on the
// NM has completed, not uploaded yet. Call with d.mu_ held.
std::vector<int32_t> AppsDueForLogAggregationLocked(YarnDoubleImpl& d);

}  // namespace loom::yarn_double
