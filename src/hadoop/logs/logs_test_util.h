#pragma once
// Test-only: the text a NodeManager wraps around a container's log file (NMWebServices.getLogs
// in 3.3, as in the recording nm-web/04). Shared by nm_web_logs_test and yarn_log_reader_test.

#include <cstdint>
#include <string>

namespace loom::hadoop {

// `bytes` of `file` with the NM's header and trailer: rules as long as the line above /
// "End of LogType:<file>" + 50; `length` is the whole file's (LogLength).
inline std::string NmWrapped(const std::string& cid, const std::string& file, const std::string& bytes,
                             int64_t length, bool running) {
  std::string head = "Container: " + cid + " on localhost:45454";
  std::string end = "End of LogType:" + file;
  return head + "\nLogAggregationType: LOCAL\n" + std::string(head.size(), '=') + "\nLogType:" + file +
         "\nLogLastModifiedTime:Sun Nov 22 18:46:25 +0000 2026\nLogLength:" + std::to_string(length) +
         "\nLogContents:\n" + bytes + end + "." +
         (running ? "This log file belongs to a running container (" + cid + ") and so may not be complete.\n" : "\n") +
         std::string(end.size() + 50, '*') + "\n\n";
}

}  // namespace loom::hadoop
