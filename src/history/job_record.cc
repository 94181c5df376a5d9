#include "history/job_record.h"

#include "core/files.h"
#include "history/event_log.h"

namespace loom::history {

using nlohmann::json;

json JobRecord::ToJson() const {
  json j = {{"job_id", job_id}, {"name", name}, {"user", user}, {"backend", backend}, {"submitted_ms", submitted_ms}};
  if (!cwd.empty()) j["cwd"] = cwd;
  if (!framework.empty()) j["framework"] = framework;
  if (!argv.empty()) j["argv"] = argv;
  return j;
}

Result<JobRecord> JobRecord::FromJson(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("a job record is a JSON object");
  JobRecord r;
  for (auto [key, field] : {std::pair<const char*, std::string*>{"job_id", &r.job_id}, {"name", &r.name},
                            {"user", &r.user}, {"backend", &r.backend}, {"cwd", &r.cwd}, {"framework", &r.framework}}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_string()) return Status::InvalidArgument(std::string("job record field ") + key + " is not a string");
    *field = it->get<std::string>();
  }
  r.submitted_ms = EventMillis(j, "submitted_ms", 0);
  if (auto it = j.find("argv"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return Status::InvalidArgument("job record field argv is not a list");
    for (const json& a : *it) {
      if (!a.is_string()) return Status::InvalidArgument("job record field argv holds something but strings");
      r.argv.push_back(a.get<std::string>());
    }
  }
  return r;
}

Result<JobRecord> JobRecord::Read(const JobDir& dir) {
  LOOM_ASSIGN_OR_RETURN(std::string text, ReadFile(dir.job_json()));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument(dir.job_json() + " is not valid JSON");
  Result<JobRecord> r = FromJson(j);
  if (!r.ok()) return Status::InvalidArgument(dir.job_json() + ": " + r.status().message());
  return r;
}

Status JobRecord::Write(const JobDir& dir) const { return WriteFileAtomic(dir.job_json(), ToJson().dump(2) + "\n"); }

}  // namespace loom::history
