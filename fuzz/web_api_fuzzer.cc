// Fuzzes what a client of the AM's dashboard or `loom portal` sends: the request's path and
// query parameters, answered by web::WebApp over a real job record (web/job_api.h). Whatever a
// client sends must give an answer, 2xx or 4xx with a JSON error, never a crash, and never a
// file outside the record. Input: the path, then "\n"-separated name=value parameters.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "web/job_api.h"

namespace {

namespace fs = std::filesystem;

// One job, job_1, with a task and its output; and a file beside the root that must never be
// served.
class OneJob : public loom::web::JobCatalog {
 public:
  OneJob() {
    root_ = fs::temp_directory_path() / ("loom-web-fuzz." + std::to_string(::getpid()));
    fs::create_directories(root_ / "job_1" / "tasks" / "worker-0");
    std::ofstream(root_ / "job_1" / "job.json") << R"({"job_id":"job_1","name":"n","user":"u","submitted_ms":1})";
    std::ofstream(root_ / "job_1" / "events.jsonl")
        << R"({"ts":1,"event":"JOB_SUBMITTED","job_id":"job_1","tasks":["worker:0"]})" "\n"
        << R"({"ts":2,"event":"TASK_STATE","task":"worker:0","state":"RUNNING"})" "\n";
    std::ofstream(root_ / "job_1" / "metrics.jsonl") << R"({"ms":3,"task":"worker:0","rss":1})" "\n";
    std::ofstream(root_ / "job_1" / "config.xml")
        << "<configuration><property><name>a</name><value>b</value></property></configuration>";
    std::ofstream(root_ / "job_1" / "tasks" / "worker-0" / "stdout") << "out\n";
    std::ofstream(root_ / "outside") << "SECRET-OUTSIDE\n";
  }
  std::string ServerKind() const override { return "portal"; }
  loom::Result<Location> Find(const std::string& id) const override {
    if (id != "job_1") return loom::Status::NotFound("no job " + id);
    return Location{root_.string(), id};
  }
  loom::web::JobPage List(const loom::web::JobQuery&) const override { return {}; }
  bool Live(const loom::history::JobView&) const override { return false; }
  std::string PrometheusMetrics() const override { return ""; }

 private:
  fs::path root_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static OneJob catalog;
  static loom::web::WebApp app(catalog);
  std::string input(reinterpret_cast<const char*>(data), size);
  loom::web::HttpRequest request;
  request.method = "GET";
  size_t nl = input.find('\n');
  request.path = input.substr(0, nl);
  while (nl != std::string::npos) {
    size_t next = input.find('\n', nl + 1);
    std::string param = input.substr(nl + 1, next == std::string::npos ? std::string::npos : next - nl - 1);
    size_t eq = param.find('=');
    request.params.emplace(param.substr(0, eq), eq == std::string::npos ? "" : param.substr(eq + 1));
    nl = next;
  }
  loom::web::HttpResponse r = app.Handle(request);
  if (r.status < 200 || r.status >= 500) std::abort();  // every bad request is the client's (4xx)
  // (An error may quote the request: only a marker the request did not hold counts.)
  if (input.find("SECRET-OUTSIDE") == std::string::npos && r.body.find("SECRET-OUTSIDE") != std::string::npos) {
    std::abort();
  }
  if (r.status >= 400 && !nlohmann::json::parse(r.body, nullptr, false).contains("error")) std::abort();
  return 0;
}
