#pragma once
// job.json: what was submitted, by whom, from where, and how. Written once, when the job is
// submitted (or imported from a cluster), never changed after; every reader goes through
// JobRecord rather than picking fields out of the JSON itself.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "history/job_dir.h"

namespace loom::history {

struct JobRecord {
  std::string job_id;
  std::string name;
  std::string user;       // who submitted it (the cluster's name for them, on YARN)
  std::string backend;    // local, yarn, ...
  std::string cwd;        // where `loom submit` ran: relative paths of the config resolve there
  std::string framework;  // as loom.application.framework names it; "" when not recorded
  int64_t submitted_ms = 0;
  std::vector<std::string> argv;  // `loom submit`'s arguments, as given

  nlohmann::json ToJson() const;
  // Missing fields stay empty (older records, imported ones); a field of the wrong type, or
  // anything but an object, is InvalidArgument.
  static Result<JobRecord> FromJson(const nlohmann::json& j);
  // NotFound without a job.json; InvalidArgument when it is not a record.
  static Result<JobRecord> Read(const JobDir& dir);
  // Written whole (temp file + rename): no reader sees half a record.
  Status Write(const JobDir& dir) const;
};

}  // namespace loom::history
