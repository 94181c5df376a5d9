#include "localizer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <filesystem>

#include <zlib.h>

#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"

namespace loom::yarn_double {

namespace {

namespace fs = std::filesystem;

uint32_t Le(const std::string& b, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

Status Malformed(const std::string& zip, const std::string& why) {
  return Status::InvalidArgument("unzip " + zip + ": " + why);
}

// An MS-DOS date and time, read in local time as java.util.zip does.
std::time_t DosTime(uint32_t date, uint32_t time) {
  std::tm tm{};
  tm.tm_year = static_cast<int>((date >> 9) & 0x7f) + 80;
  tm.tm_mon = static_cast<int>((date >> 5) & 0x0f) - 1;
  tm.tm_mday = static_cast<int>(date & 0x1f);
  tm.tm_hour = static_cast<int>((time >> 11) & 0x1f);
  tm.tm_min = static_cast<int>((time >> 5) & 0x3f);
  tm.tm_sec = static_cast<int>((time & 0x1f) * 2);
  tm.tm_isdst = -1;
  return std::mktime(&tm);
}

Result<std::string> Inflate(const std::string& zip, const char* data, size_t size, size_t expected) {
  std::string out(expected, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return Malformed(zip, "inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
  z.avail_in = static_cast<uInt>(size);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&z, Z_FINISH);
  inflateEnd(&z);
  if (rc != Z_STREAM_END || z.total_out != expected) return Malformed(zip, "a deflated entry does not inflate");
  return out;
}

// Whether `name` stays below the destination (FileUtil.unZip refuses anything else).
bool Contained(const std::string& name) {
  if (name.empty() || name[0] == '/') return false;
  for (const std::string& part : Split(name, '/')) {
    if (part == "..") return false;
  }
  return true;
}

Status RewriteModes(const std::string& root, bool public_visibility) {
  const mode_t file_mode = public_visibility ? 0555 : 0500;
  const mode_t dir_mode = public_visibility ? 0755 : 0700;
  auto apply = [&](const fs::path& p) -> Status {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) return Status::FromErrno("lstat " + p.string(), errno);
    if (S_ISLNK(st.st_mode)) return Status::Ok();
    if (::chmod(p.c_str(), S_ISDIR(st.st_mode) ? dir_mode : file_mode) != 0) {
      return Status::FromErrno("chmod " + p.string(), errno);
    }
    return Status::Ok();
  };
  std::error_code ec;
  std::vector<fs::path> paths;  // collected first: a 0500 directory could not be listed after
  if (!fs::is_directory(fs::symlink_status(root))) return apply(root);
  for (const auto& e : fs::recursive_directory_iterator(root, ec)) paths.push_back(e.path());
  if (ec) return Status::Internal("listing " + root + ": " + ec.message());
  for (const fs::path& p : paths) LOOM_RETURN_IF_ERROR(apply(p));
  return apply(root);
}

}  // namespace

Status UnzipIgnoringSymlinks(const std::string& zip, const std::string& dest) {
  LOOM_ASSIGN_OR_RETURN(std::string b, ReadFile(zip));
  // The end of central directory record: 22 bytes plus a comment of up to 65535.
  size_t eocd = std::string::npos;
  if (b.size() >= 22) {
    size_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
    for (size_t at = b.size() - 22;; --at) {
      if (Le(b, at, 4) == 0x06054b50) {
        eocd = at;
        break;
      }
      if (at == lowest) break;
    }
  }
  if (eocd == std::string::npos) return Malformed(zip, "no end of central directory");
  uint32_t entries = Le(b, eocd + 10, 2);
  size_t at = Le(b, eocd + 16, 4);
  LOOM_RETURN_IF_ERROR(MakeDirs(dest));
  for (uint32_t i = 0; i < entries; ++i) {
    if (at + 46 > b.size() || Le(b, at, 4) != 0x02014b50) return Malformed(zip, "bad central directory");
    uint32_t flags = Le(b, at + 8, 2), method = Le(b, at + 10, 2);
    uint32_t time = Le(b, at + 12, 2), date = Le(b, at + 14, 2);
    size_t packed = Le(b, at + 20, 4), size = Le(b, at + 24, 4);
    size_t name_len = Le(b, at + 28, 2), extra_len = Le(b, at + 30, 2), comment_len = Le(b, at + 32, 2);
    size_t local = Le(b, at + 42, 4);
    if (at + 46 + name_len > b.size()) return Malformed(zip, "bad central directory");
    std::string name = b.substr(at + 46, name_len);
    at += 46 + name_len + extra_len + comment_len;
    if (EndsWith(name, "/")) continue;  // directories exist only as the parents of files
    if (!Contained(name)) return Malformed(zip, "expanding " + name + " would create a file outside of " + dest);
    if (flags & 1) return Malformed(zip, name + " is encrypted");
    if (local + 30 > b.size() || Le(b, local, 4) != 0x04034b50) return Malformed(zip, "bad local header for " + name);
    size_t data = local + 30 + Le(b, local + 26, 2) + Le(b, local + 28, 2);
    if (data + packed > b.size()) return Malformed(zip, name + " runs past the end");
    std::string bytes;
    if (method == 0) {
      bytes = b.substr(data, packed);
    } else if (method == 8) {
      LOOM_ASSIGN_OR_RETURN(bytes, Inflate(zip, b.data() + data, packed, size));
    } else {
      return Malformed(zip, name + " uses compression method " + std::to_string(method));
    }
    std::string path = dest + "/" + name;
    LOOM_RETURN_IF_ERROR(MakeDirs(path.substr(0, path.rfind('/'))));
    LOOM_RETURN_IF_ERROR(WriteFileAtomic(path, bytes, 0644));
    timespec times[2] = {{0, UTIME_OMIT}, {DosTime(date, time), 0}};
    ::utimensat(AT_FDCWD, path.c_str(), times, 0);
  }
  return Status::Ok();
}

Status LocalizeLikeFsDownload(const std::string& src, const std::string& dest, const std::string& hdfs_name,
                              bool archive, bool public_visibility) {
  std::string lower = ToLower(hdfs_name);
  Status s;
  if (archive && (EndsWith(lower, ".zip") || EndsWith(lower, ".jar"))) {
    s = UnzipIgnoringSymlinks(src, dest);
  } else if (archive && (EndsWith(lower, ".tar.gz") || EndsWith(lower, ".tgz") || EndsWith(lower, ".tar"))) {
    s = MakeDirs(dest);
    if (s.ok()) s = RunTool({"tar", EndsWith(lower, ".tar") ? "-xf" : "-xzf", src, "-C", dest});
  } else {
    s = CopyTree(src, dest);
  }
  if (!s.ok()) return s;
  return RewriteModes(dest, public_visibility);
}

}  // namespace loom::yarn_double
