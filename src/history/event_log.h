#pragma once
// EventLog: events.jsonl, the append-only record of a job's transitions. Each event is one JSON
// object on one line, written with a single write(2) on an O_APPEND descriptor, so concurrent
// writers (client, AM) never interleave and a reader never sees half a line. Thread-safe.

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace loom::history {

int64_t NowMillis();

class EventLog {
 public:
  explicit EventLog(std::string path) : path_(std::move(path)) {}
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;
  // Appends {"ts": <ms>, "event": <type>, ...fields}.
  Status Append(const std::string& type, nlohmann::json fields = nlohmann::json::object());

 private:
  std::mutex mu_;
  std::string path_;
  int fd_ = -1;  // opened on first use, kept: an AM appends tens of thousands of events
};

// Reads every complete event; malformed lines are skipped (and counted in `skipped`).
std::vector<nlohmann::json> ReadEvents(const std::string& path, int* skipped = nullptr);

// Reads an integer field of an event (or any JSON read from a file): anything but an integer in
// [lo, hi] gives `fallback`. Converting a float such as 4.9e79 is undefined behaviour, and a
// timestamp far out of range would overflow the durations computed from it.
int64_t EventInt(const nlohmann::json& j, const char* key, int64_t fallback, int64_t lo, int64_t hi);
// A timestamp or duration in milliseconds: [0, 2^50], about the year 37000.
int64_t EventMillis(const nlohmann::json& j, const char* key, int64_t fallback);

}  // namespace loom::history
