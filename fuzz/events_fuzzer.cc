// Fuzzes what `loom status|list|submit` read back from a job directory: events.jsonl lines folded
// into a JobView, and the table rendered from it. A corrupt or hostile file must never crash them.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "history/job_view.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  loom::history::JobView view;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json e;
    try {
      e = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      continue;
    }
    view.Apply(e);
  }
  (void)loom::history::RenderTaskTable(view);
  return 0;
}
