// Fuzzes Loom's readers of YARN container logs: aggregated log files (TFile/BCFile and the
// IFile's Java-serialized index) as they come from HDFS, and the NodeManager's web answers.
// Beyond not crashing, every decoded file must lie within the input: no reader may invent
// bytes or lengths it was not given.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "hadoop/logs/aggregated_log_file.h"
#include "hadoop/logs/nm_web_logs.h"

using namespace loom::hadoop;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto parsed = ParseAggregatedLogFile(bytes); parsed.ok()) {
    size_t total = 0;
    for (const auto& e : parsed->entries) {
      if (e.length < 0 || e.bytes.size() != static_cast<size_t>(e.length)) std::abort();  // a length it did not read
      total += e.bytes.size();
    }
    if (total > size) std::abort();  // bytes that were not in the input
    (void)RenderYarnLogs(*parsed, "localhost_45454", 0);
  }
  (void)ParseIFileIndex(bytes);
  std::string body(bytes);
  for (long code : {200L, 404L, 500L}) {
    (void)ParseContainerLogsAnswer(code, body, "", "container_1_0001_01_000002", "stdout", std::nullopt);
    (void)ParseContainerLogsAnswer(code, body, "", "container_1_0001_01_000002", "stdout", -4);
    (void)ParseLogListAnswer(code, body, "");
  }
  return 0;
}
