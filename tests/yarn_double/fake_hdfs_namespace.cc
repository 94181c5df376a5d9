// FakeHdfs's namespace: one tree in memory (paths, entries, inode ids) over file bytes under
// storage_dir, the paths' normal form, and what tests read and write directly.

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/files.h"
#include "core/strings.h"
#include "fake_hdfs.h"
#include "fake_hdfs_internal.h"

namespace loom::yarn_double {

namespace fake_hdfs_internal {

// "/a//b/" -> "/a/b"; "" for what HDFS rejects (relative, "." or ".." segments).
std::string Normalize(const std::string& path) {
  if (path.empty() || path[0] != '/') return "";
  std::string out;
  for (const std::string& part : Split(path, '/', /*skip_empty=*/false)) {
    if (part.empty()) continue;
    if (part == "." || part == "..") return "";
    out += "/" + part;
  }
  return out.empty() ? "/" : out;
}

std::string Parent(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace fake_hdfs_internal

// ---- the namespace -------------------------------------------------------------------------

const FakeHdfs::Node* FakeHdfs::Find(const std::string& path) const {
  auto it = nodes_.find(path);
  return it == nodes_.end() ? nullptr : &it->second;
}

// mkdir -p, failing like HDFS when a file is in the way.
bool FakeHdfs::MakeDirLocked(const std::string& path, const std::string& owner,
                             const std::string& permission, Reply* error) {
  std::string current;
  for (const std::string& part : Split(path, '/')) {
    current += "/" + part;
    const Node* node = Find(current);
    if (node != nullptr && node->entry.dir) continue;
    if (node != nullptr) {
      *error = current == path
                   ? RemoteException(403, "FileAlreadyExistsException",
                                     "org.apache.hadoop.fs.FileAlreadyExistsException",
                                     "Path is not a directory: " + current)
                   : RemoteException(403, "ParentNotDirectoryException",
                                     "org.apache.hadoop.fs.ParentNotDirectoryException",
                                     "Parent path is not a directory: " + current);
      return false;
    }
    if (::mkdir(LocalPath(current).c_str(), 0755) != 0 && errno != EEXIST) {
      *error = RemoteException(500, "IOException", "java.io.IOException",
                               "mkdir " + LocalPath(current) + ": " + std::strerror(errno));
      return false;
    }
    nodes_[current] = Node{Entry{true, 0, NowMs(), permission, owner}, NextFileIdLocked(), 0};
  }
  return true;
}

// Direct children, in HDFS's (byte) order.
std::vector<std::string> FakeHdfs::ChildrenLocked(const std::string& path) const {
  std::string prefix = path == "/" ? "/" : path + "/";
  std::vector<std::string> out;
  for (auto it = nodes_.lower_bound(prefix); it != nodes_.end() && StartsWith(it->first, prefix); ++it) {
    if (it->first != prefix && it->first.find('/', prefix.size()) == std::string::npos) {
      out.push_back(it->first);
    }
  }
  return out;
}

// Field order as the real NameNode writes them.
std::string FakeHdfs::StatusJsonLocked(const std::string& path, const std::string& suffix) const {
  const Node& node = nodes_.at(path);
  const Entry& e = node.entry;
  ordered_json j;
  j["accessTime"] = e.dir ? 0 : node.access_time;
  j["blockSize"] = e.dir ? 0 : 134217728;
  j["childrenNum"] = e.dir ? static_cast<int64_t>(ChildrenLocked(path).size()) : 0;
  j["fileId"] = node.file_id;
  j["group"] = "supergroup";
  j["length"] = e.length;
  j["modificationTime"] = e.mtime_ms;
  j["owner"] = e.owner;
  j["pathSuffix"] = suffix;
  j["permission"] = e.permission;
  j["replication"] = e.dir ? 0 : 1;
  j["storagePolicy"] = 0;
  j["type"] = e.dir ? "DIRECTORY" : "FILE";
  return Dump(j);
}

Result<FakeHdfs::Entry> FakeHdfs::Stat(const std::string& hdfs_path) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Node* node = Find(Normalize(hdfs_path));
  if (node == nullptr) return Status::NotFound("fake HDFS: no " + hdfs_path);
  return node->entry;
}

std::string FakeHdfs::LocalPath(const std::string& hdfs_path) const {
  std::string path = Normalize(hdfs_path);
  return storage_dir_ + "/root" + (path == "/" || path.empty() ? "" : path);
}

std::vector<std::string> FakeHdfs::CreatedFiles() const {
  std::lock_guard<std::mutex> lock(mu_);
  return created_files_;
}

std::vector<std::string> FakeHdfs::ListRecursive(const std::string& prefix) const {
  std::string path = Normalize(prefix);
  std::string below = path == "/" ? "/" : path + "/";
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (auto it = nodes_.lower_bound(below); it != nodes_.end() && StartsWith(it->first, below); ++it) {
    if (!it->second.entry.dir) out.push_back(it->first);
  }
  return out;
}

Status FakeHdfs::MakeDir(const std::string& hdfs_path, const std::string& owner, const std::string& permission) {
  std::lock_guard<std::mutex> lock(mu_);
  Reply error;
  if (!MakeDirLocked(Normalize(hdfs_path), owner, permission, &error)) {
    return Status::FailedPrecondition("fake HDFS: cannot make directory " + hdfs_path);
  }
  return Status::Ok();
}

Status FakeHdfs::PutFile(const std::string& hdfs_path, const std::string& bytes, const std::string& owner,
                         const std::string& permission) {
  const std::string path = Normalize(hdfs_path);
  std::lock_guard<std::mutex> lock(mu_);
  Reply error;
  const Node* existing = Find(path);
  if (existing != nullptr && existing->entry.dir) return Status::AlreadyExists("fake HDFS: " + path + " is a directory");
  if (!MakeDirLocked(Parent(path), owner, "755", &error)) {
    return Status::FailedPrecondition("fake HDFS: cannot make the parent of " + path);
  }
  LOOM_RETURN_IF_ERROR(WriteFileAtomic(LocalPath(path), bytes, 0644));
  int64_t now = NowMs();
  nodes_[path] = Node{Entry{false, static_cast<int64_t>(bytes.size()), now, permission, owner}, NextFileIdLocked(), now};
  return Status::Ok();
}

}  // namespace loom::yarn_double
