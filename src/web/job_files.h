#pragma once
// What the JSON API reads from a job's record (history/job_dir.h), in pieces a page can poll:
// events.jsonl from a cursor, a log file's window, config.xml's entries with secrets masked.
// Nothing here follows a symlink out of the record: files are opened below a root directory
// one component at a time with O_NOFOLLOW, so a link planted in a job dir (or a job dir that
// is a link) is refused, not followed.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace loom::web {

// Opens `relative` (components separated by '/', none empty, "." or "..") below the directory
// `root` (which may itself be reached through links) for reading; no component may be a
// symlink. PermissionDenied for a link, NotFound for a missing file, InvalidArgument for a bad
// path. The descriptor is the caller's to close.
Result<int> OpenBelow(const std::string& root, const std::string& relative);
// Whether the record files of the job dir `relative` below `root` ("": root itself; job.json,
// events.jsonl, status.json, metrics.jsonl, config.xml) are plain files and directories: a job
// whose record holds a link is not shown.
Status CheckRecordHasNoLinks(const std::string& root, const std::string& relative);

struct EventsChunk {
  std::vector<nlohmann::json> events;
  int64_t next = 0;   // the cursor to ask with next time: the byte after the last whole line read
  bool more = false;  // more whole lines were there than `max_events`
};
// The entries of events.jsonl (open as `fd`, which is closed) from byte `cursor` on, at most
// `max_events`; a line that is not a JSON object is skipped, an unfinished last line is left
// for the next call. A cursor past the end (the file was replaced) starts again at 0.
EventsChunk ReadEventsFrom(int fd, int64_t cursor, size_t max_events);

struct LogChunk {
  int64_t offset = 0;  // where `data` starts in the file
  int64_t size = 0;    // the file's size when read
  std::string data;
  bool eof = false;  // data reaches the end of the file
};
// Up to `limit` bytes of the file open as `fd` (closed) from `offset`; a negative offset
// counts from the end; one past the end gives nothing.
LogChunk ReadLogChunk(int fd, int64_t offset, int64_t limit);

// Whether a configuration key holds a secret (password, secret, token, credential, keytab
// contents): its value is never shown.
bool IsSecretKey(const std::string& key);
// config.xml's entries, sorted by key: [{"key", "value", "source"}], secret values masked.
Result<nlohmann::json> ConfigEntries(const std::string& config_xml_text, const std::string& path);

}  // namespace loom::web
