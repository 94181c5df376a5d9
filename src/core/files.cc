#include "core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace fs = std::filesystem;

namespace loom {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::FromErrno("open " + path, errno ? errno : ENOENT);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<std::string> ReadFileFrom(const std::string& path, int64_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::FromErrno("open " + path, errno);
  in.seekg(0, std::ios::end);
  int64_t size = in.tellg();
  if (offset < 0 || offset >= size) return std::string();
  std::string out(static_cast<size_t>(size - offset), '\0');
  in.seekg(offset);
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

std::string ReadAt(int fd, int64_t offset, int64_t length) {
  std::string out(static_cast<size_t>(std::max<int64_t>(length, 0)), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::pread(fd, out.data() + got, out.size() - got, offset + static_cast<int64_t>(got));
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

Status WriteFileAtomic(const std::string& path, const std::string& content, int mode) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Status::FromErrno("open " + tmp, errno);
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status::FromErrno("write " + tmp, err);
    }
    off += static_cast<size_t>(n);
  }
  ::fchmod(fd, mode);  // umask must not widen or narrow what the caller asked for
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Status::FromErrno("rename " + tmp, err);
  }
  return Status::Ok();
}

Status MakeDirs(const std::string& path, int mode) {
  std::error_code ec;
  std::vector<fs::path> missing;  // deepest first
  for (fs::path p = fs::path(path).lexically_normal(); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  fs::create_directories(path, ec);
  if (ec) return Status::Internal("mkdir " + path + ": " + ec.message());
  for (const fs::path& p : missing) ::chmod(p.c_str(), mode);
  return Status::Ok();
}

Status CopyTree(const std::string& src, const std::string& dst) {
  std::error_code ec;
  fs::copy(src, dst,
           fs::copy_options::recursive | fs::copy_options::overwrite_existing |
               fs::copy_options::copy_symlinks,
           ec);
  if (ec) return Status::Internal("copy " + src + " to " + dst + ": " + ec.message());
  return Status::Ok();
}

Status RemoveTree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return Status::Internal("remove " + path + ": " + ec.message());
  return Status::Ok();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> TailLines(const std::string& path, size_t max_lines) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || max_lines == 0) return {};
  // Read at most the last 64 KiB: enough for any reasonable tail, bounded for huge logs.
  std::streamoff size = in.tellg();
  std::streamoff start = size > 65536 ? size - 65536 : 0;
  in.seekg(start);
  std::string buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> lines;
  std::istringstream ss(buf);
  std::string line;
  bool first = start > 0;  // the first line may be cut; drop it
  while (std::getline(ss, line)) {
    if (first) { first = false; continue; }
    lines.push_back(line);
  }
  if (lines.size() > max_lines) lines.erase(lines.begin(), lines.end() - static_cast<long>(max_lines));
  return lines;
}

std::string SelfExecutable() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  auto p = fs::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

}  // namespace loom
