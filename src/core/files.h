#pragma once
// File-system helpers returning Status instead of throwing.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace loom {

Result<std::string> ReadFile(const std::string& path);
// The bytes of `path` from `offset` to its current end (empty if the file is not longer).
Result<std::string> ReadFileFrom(const std::string& path, int64_t offset);
// Up to `length` bytes of the open file `fd` from `offset` (pread(2): its position stays);
// fewer at its end or where a read fails.
std::string ReadAt(int fd, int64_t offset, int64_t length);
// Writes via a temporary file and rename(2), so readers never see a half-written file.
Status WriteFileAtomic(const std::string& path, const std::string& content, int mode = 0644);
// Makes `path` and its missing parents, each with `mode` (whatever the umask). Directories that
// exist keep their mode: a ledger dir made in /tmp must not turn /tmp's 1777 into 0755.
Status MakeDirs(const std::string& path, int mode = 0755);
// Recursive copy of a directory tree (or a single file) to `dst`.
Status CopyTree(const std::string& src, const std::string& dst);
Status RemoveTree(const std::string& path);
bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);
// The last `max_lines` lines of a file (fewer if the file is shorter).
std::vector<std::string> TailLines(const std::string& path, size_t max_lines);
// Absolute path of the running executable.
std::string SelfExecutable();
std::string AbsolutePath(const std::string& path);

}  // namespace loom
