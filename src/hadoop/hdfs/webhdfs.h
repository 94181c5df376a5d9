#pragma once
// WebHDFS client (libcurl): what staging needs. Simple auth (user.name=), two-step CREATE
// (NameNode 307 redirect, then the bytes to the DataNode, tolerating its unsolicited
// "100 Continue"), GETFILESTATUS for the exact length and modificationTime the NodeManager
// will check, MKDIRS, DELETE, LISTSTATUS, RENAME. Errors name the operation, path and the
// RemoteException WebHDFS returned.
//
// Authentication, per call to the NameNode: with a delegation token (UseDelegationToken: the
// AM and containers, which have no Kerberos) `delegation=<token>` and nothing else; otherwise
// `user.name=<user>` plus SPNEGO when the process has a Kerberos login (spnego.h: Negotiate on
// the first request, then the server's hadoop.auth cookie). The DataNode step of CREATE and
// OPEN only follows the NameNode's redirect, whose URL carries what the DataNode checks (a
// secure NameNode puts a fresh delegation token in it, kerberos/ K5.8).

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/wire/credentials.h"

namespace loom::hadoop {

struct HdfsFileStatus {
  std::string path_suffix;
  std::string type;  // "FILE" or "DIRECTORY"
  int64_t length = 0;
  int64_t modification_time = 0;  // ms
  std::string permission;         // octal text, e.g. "644"
  std::string owner;
};

// `dir`/`name` for HDFS ("/" joins as "/name").
inline std::string JoinHdfsPath(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

class WebHdfs {
 public:
  // `base` is "http://host:port" of the NameNode's HTTP server; with NameNode HA, each
  // NameNode's, comma-separated ("http://nn1:9870,http://nn2:9870"). Calls go to the one last
  // found active (in this process); one that answers StandbyException (a standby NameNode's
  // 403) or cannot be reached is skipped for the next, each NameNode tried once per call.
  WebHdfs(std::string base, std::string user);
  static WebHdfs ForConf(const HadoopConf& conf, const std::string& user);

  Status Mkdirs(const std::string& path, const std::string& permission = "755");
  // Uploads a local file (streamed, any size) to `path`, overwriting, then returns its status.
  Result<HdfsFileStatus> Upload(const std::string& local_file, const std::string& path,
                                const std::string& permission = "644");
  Result<HdfsFileStatus> Create(const std::string& path, const std::string& bytes, const std::string& permission = "644");
  Result<HdfsFileStatus> GetFileStatus(const std::string& path);  // NotFound if absent
  Result<std::vector<HdfsFileStatus>> ListStatus(const std::string& path);
  Result<std::string> Open(const std::string& path);
  // Up to `length` bytes from `offset` (fewer past the end of the file).
  Result<std::string> OpenRange(const std::string& path, int64_t offset, int64_t length);
  // true if something was deleted; a missing path is not an error.
  Result<bool> Delete(const std::string& path, bool recursive);
  // Renames `from` to `to` atomically (HDFS's rename, as WebHDFS's op=RENAME does it): false,
  // with nothing changed, when `from` is absent or `to` exists as a file. A `to` that is an
  // existing directory receives `from` inside it, so callers pass a file path.
  Result<bool> Rename(const std::string& from, const std::string& to);

  // From now on every call authenticates with `token` (an HDFS delegation token, as
  // HADOOP_TOKEN_FILE_LOCATION holds it): `&delegation=<EncodeTokenUrlString(token)>` instead
  // of user.name=, and no SPNEGO (kerberos/webhdfs/04). Not thread-safe with calls in flight.
  void UseDelegationToken(const Token& token);
  // GETDELEGATIONTOKEN (needs the Kerberos login, never a token): a token `renewer` may renew
  // (kind "WEBHDFS delegation", or "SWEBHDFS delegation" over https; service as the NameNode
  // set it).
  Result<Token> GetDelegationToken(const std::string& renewer);
  // RENEWDELEGATIONTOKEN: the new expiry (ms); PermissionDenied unless this user is the renewer.
  Result<int64_t> RenewDelegationToken(const Token& token);
  // CANCELDELEGATIONTOKEN (the owner or the renewer may).
  Status CancelDelegationToken(const Token& token);

 private:
  std::vector<std::string> bases_;
  std::string user_;
  std::string delegation_;  // EncodeTokenUrlString of UseDelegationToken's token; "" if none
};

}  // namespace loom::hadoop
