#pragma once
// The two formats of YARN's aggregated container logs: one HDFS file per NodeManager per
// application, holding the log files of that node's containers (README §14 of the captures):
//   TFile  LogAggregationTFileController: a BCFile holding TFile key/values in
//          AggregatedLogFormat (VERSION, APPLICATION_ACL, APPLICATION_OWNER, then one entry per
//          container: for each log file writeUTF(name), writeUTF(decimal length), the bytes).
//   IFile  LogAggregationIndexedFileController: a 32-byte id (SHA-256 of the application id),
//          the log bytes back to back, a java.io-serialized IndexedLogsMeta that says where each
//          file is, its int32 length, and the 32-byte id again.
// Decoding is from bytes in memory, with no I/O; every function is thread-safe. Only
// uncompressed files are decoded (yarn.nodemanager.log-aggregation.compression-type "none",
// Hadoop's default); others give Unimplemented. Malformed bytes give InvalidArgument.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace loom::hadoop {

enum class AggregatedLogFormat { kTFile, kIFile };

// One log file of one container.
struct AggregatedLogEntry {
  std::string container_id;
  std::string file_name;   // "stdout", "stderr", "launch_container.sh", ...
  int64_t length = 0;      // bytes of the log file
  int64_t mtime_ms = 0;    // IFile: the file's modification time; TFile: 0 (it stores none)
  int64_t offset = -1;     // IFile: where the bytes start in the aggregated file
  std::string bytes;       // the contents; empty when only the IFile index was decoded
};

struct AggregatedLogFile {
  AggregatedLogFormat format = AggregatedLogFormat::kTFile;
  std::string owner;    // APPLICATION_OWNER (TFile) or IndexedLogsMeta.user (IFile)
  std::string node_id;  // IFile's IndexedLogsMeta.nodeId ("localhost:45454"); empty for TFile
  // Container by container in the file's order (TFile: as written; IFile: the index's order),
  // files in each container in the file's order. With rolling aggregation (IFile) a file
  // may appear once per upload cycle.
  std::vector<AggregatedLogEntry> entries;

  // The containers, in order of first appearance.
  std::vector<std::string> ContainerIds() const;
  // `file` of `container_id`: the bytes of all its entries in order (several after rolling
  // uploads); NotFound naming what the container has instead.
  Result<std::string> Contents(const std::string& container_id, const std::string& file) const;
};

// The file's format from its first and last bytes (a BCFile magic at both ends for TFile; the
// same 32 bytes at both ends for IFile); InvalidArgument when neither.
Result<AggregatedLogFormat> DetectAggregatedLogFormat(std::string_view head, std::string_view tail);

// A whole aggregated file, either format, entries with their bytes.
Result<AggregatedLogFile> ParseAggregatedLogFile(std::string_view bytes);
Result<AggregatedLogFile> ParseTFileLogs(std::string_view bytes);
Result<AggregatedLogFile> ParseIFileLogs(std::string_view bytes);

// IFile piece by piece, for files too large to read whole: the last kIFileTrailerSize bytes
// give the index length (the index ends where the trailer starts); the index gives the entries
// with offset and length but no bytes.
inline constexpr int64_t kIFileIdSize = 32;
inline constexpr int64_t kIFileTrailerSize = 4 + kIFileIdSize;
Result<int64_t> IFileIndexLength(std::string_view trailer, int64_t file_length);
Result<AggregatedLogFile> ParseIFileIndex(std::string_view index);

// Hadoop's Times.format, in UTC: "Sun Nov 22 19:01:21 +0000 2026".
std::string FormatLogTime(int64_t ms);

// What `yarn logs -applicationId` prints for one aggregated file: for each entry a header
// ("Container: <cid> on <node_file>", "LogAggregationType: AGGREGATED", a rule, LogType,
// LogLastModifiedTime, LogLength, LogContents), the bytes, and "End of LogType:" with a rule.
// `node_file` is the HDFS file's name ("localhost_45454"); `file_mtime_ms` is its HDFS mtime,
// which TFile entries (no time of their own) show.
std::string RenderYarnLogs(const AggregatedLogFile& file, const std::string& node_file, int64_t file_mtime_ms);

}  // namespace loom::hadoop
