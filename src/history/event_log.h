#pragma once
// EventLog: events.jsonl, the append-only record of a job's transitions. Each event is one JSON
// object on one line, written with a single write(2) on an O_APPEND descriptor, so concurrent
// writers (client, AM) never interleave and a reader never sees half a line. Thread-safe.

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
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

// How events.jsonl is read, by every reader (the job's views, `loom submit` following a local
// job, the AM serving its events to a client that mirrors them): complete lines only, since a
// writer may be in the middle of one.

// The complete lines of `path` from byte `offset`: at least `max_bytes` of them where the file
// has that many, more only to finish a line. `end` is the offset just after them; `text` is
// empty (and `end` is `offset`) when no complete line follows.
struct EventLines {
  std::string text;
  int64_t end = 0;
};
EventLines ReadEventLines(const std::string& path, int64_t offset, int64_t max_bytes = int64_t{1} << 20);

// The events in `text`, one JSON object per line; malformed lines are skipped (and counted in
// `skipped`).
std::vector<nlohmann::json> ParseEvents(std::string_view text, int* skipped = nullptr);

// Every complete event of the file.
std::vector<nlohmann::json> ReadEvents(const std::string& path, int* skipped = nullptr);

// Follows events.jsonl as it grows: each Next() gives the events completed since the last.
class EventTail {
 public:
  explicit EventTail(std::string path) : path_(std::move(path)) {}
  std::vector<nlohmann::json> Next();

 private:
  std::string path_;
  int64_t offset_ = 0;
};

// Reads an integer field of an event (or any JSON read from a file): anything but an integer in
// [lo, hi] gives `fallback`. Converting a float such as 4.9e79 is undefined behaviour, and a
// timestamp far out of range would overflow the durations computed from it.
int64_t EventInt(const nlohmann::json& j, const char* key, int64_t fallback, int64_t lo, int64_t hi);
// A timestamp or duration in milliseconds: [0, 2^50], about the year 37000.
int64_t EventMillis(const nlohmann::json& j, const char* key, int64_t fallback);

}  // namespace loom::history
