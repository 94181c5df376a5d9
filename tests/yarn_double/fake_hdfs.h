#pragma once
// FakeHdfs: a TEST DOUBLE of HDFS's WebHDFS endpoints, for tests only. No Hadoop can run in
// Loom's tests, so this serves, over real HTTP/1.1 on 127.0.0.1, what Loom's staging uses,
// shaped like the bytes a real Hadoop 3.3.6 NameNode (Jetty) and DataNode (Netty) sent in
// tests/data/yarn-captures/webhdfs/:
//   NameNode HTTP ("9870"): MKDIRS, CREATE step 1 (307 to the DataNode, or 200 {"Location"}
//     with noredirect=true), GETFILESTATUS, LISTSTATUS, OPEN step 1 (307), DELETE, RENAME
//     (HDFS's rename semantics; no capture of it exists, so its shape is WebHDFS's docs); JSON
//     bodies chunked, errors as {"RemoteException":{...}} with Hadoop's HTTP codes.
//   DataNode HTTP ("9864"): CREATE step 2 (always "100 Continue" first, then 201 and
//     Connection: close) and OPEN step 2 (200 with the bytes).
// Simple auth by default: a request without user.name gets 401. RequireSpnego turns on what a
// Kerberized NameNode (hadoop.http.authentication.type=kerberos) does, as recorded in
// tests/data/yarn-captures/kerberos/webhdfs/ (K5.7-K5.9):
//   * no credentials: 401 "Authentication required", a bare `WWW-Authenticate: Negotiate`, an
//     emptied hadoop.auth cookie and Jetty's HTML error page (webhdfs/01);
//   * `Authorization: Negotiate <SPNEGO token>`: accepted by a GssAcceptor on the HTTP keytab
//     (a ticket for another service: 403 as hadoop-auth's AuthenticationFilter answers), then
//     the answer carries the mutual-auth token and a signed cookie
//     hadoop.auth="u=<short>&p=<principal>&t=kerberos&e=<ms>&s=<HMAC-SHA256>" (webhdfs/02);
//   * that cookie, while its signature and expiry hold, stands for the user (no new GSS accept);
//   * `delegation=<token>` (WebHDFS's AuthFilter lets it through): verified with tokens(), the
//     owner's short name is the user; cancelled, expired or forged: 403 RemoteException
//     InvalidToken (webhdfs/04);
//   * user.name is not trusted: one that differs from the authenticated user is 403;
//   * GETDELEGATIONTOKEN (kind "WEBHDFS delegation", service the NameNode RPC address),
//     RENEWDELEGATIONTOKEN (only the renewer: 403 AccessControlException, webhdfs/07) and
//     CANCELDELEGATIONTOKEN (webhdfs/08); OPEN and CREATE redirects carry a delegation= token
//     (the caller's, or a fresh one with owner and renewer the user, webhdfs/05) and the
//     DataNode requires a valid one (webhdfs/06).
// It is not HDFS: one namespace in
// memory, file bytes as plain files under storage_dir, no permission checks, no blocks, and
// no RPC (default_fs() names a reserved port that nothing answers).

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "delegation_token_store.h"

namespace loom::yarn_double {

namespace fake_hdfs_internal {
struct Request;
struct Reply;
class Connection;
}  // namespace fake_hdfs_internal

class FakeHdfs {
 public:
  struct Entry {
    bool dir = false;
    int64_t length = 0;
    int64_t mtime_ms = 0;    // modificationTime, as GETFILESTATUS reports it
    std::string permission;  // octal text, "644"
    std::string owner;
  };

  // File bytes live under storage_dir (emptied by Start).
  explicit FakeHdfs(std::string storage_dir);
  ~FakeHdfs();
  FakeHdfs(const FakeHdfs&) = delete;
  FakeHdfs& operator=(const FakeHdfs&) = delete;

  // Listens on two ephemeral ports and reserves a third for default_fs().
  Status Start();
  // Closes the listeners and every open connection; idempotent.
  void Stop();

  int namenode_http_port() const { return nn_port_; }
  // NameNode HA: a second NameNode HTTP server, in standby, that answers every WebHDFS request
  // as Hadoop's standby NameNode does: 403 with RemoteException StandbyException ("Operation
  // category READ is not supported in state standby"). Call after Start(); its port, or 0.
  Status StartStandbyNameNode();
  int standby_namenode_http_port() const { return sb_port_; }
  int datanode_http_port() const { return dn_port_; }
  // "hdfs://127.0.0.1:<reserved port>", the namenoderpcaddress of redirects; never served,
  // unless a NameNode RPC server (namenode_rpc.h) took over: then its port.
  std::string default_fs() const;
  // The port of the NameNode RPC server serving ClientProtocol for this namespace (call before
  // the double writes its conf dir).
  void set_rpc_port(int port) { rpc_port_ = port; }

  // Kerberos for WebHDFS (see the top): SPNEGO for `http_principal` ("HTTP/localhost@LOOM.TEST")
  // with its key from `keytab`. FailedPrecondition when the keytab cannot accept for it. Call
  // before clients use the servers; without it nothing changes.
  Status RequireSpnego(const std::string& keytab, const std::string& http_principal);
  // The NameNode's delegation tokens (WebHDFS here, and the NameNode RPC of the double).
  DelegationTokenStore& tokens() { return tokens_; }
  // Negotiate tokens accepted (GSS contexts established) so far: a cookie costs none.
  int64_t spnego_accepts() const { return spnego_accepts_; }
  // How long a new hadoop.auth cookie is valid (hadoop.http.authentication.token.validity,
  // 10 h by default).
  void set_auth_cookie_validity_ms(int64_t ms) { cookie_validity_ms_ = ms; }

  // The namespace as a test sees it (paths like "/user/root/x"; NotFound when absent).
  Result<Entry> Stat(const std::string& hdfs_path) const;
  // Where a file's bytes are on disk.
  std::string LocalPath(const std::string& hdfs_path) const;
  // Every file (not directory) below `prefix`, sorted.
  std::vector<std::string> ListRecursive(const std::string& prefix) const;
  // HTTP requests received so far, NameNode and DataNode together (each counted before its
  // answer is sent).
  int64_t requests_served() const { return requests_served_; }
  // How long a DataNode CREATE holds its answer after the body, as a real one whose close waits
  // for the NameNode to learn of the block (the client's completeFile retries 400 ms apart).
  void set_datanode_close_ms(int64_t ms) { datanode_close_ms_ = ms; }
  // The most DataNode CREATEs in progress at one time so far.
  int max_concurrent_creates() const { return max_concurrent_creates_; }
  // Every file a DataNode CREATE wrote, in order (the path it was created at, before any rename).
  std::vector<std::string> CreatedFiles() const;
  // The bytes of all those files, counted when each was created (renames and deletes later do
  // not change it): what clients wrote into HDFS.
  int64_t bytes_created() const { return bytes_created_; }
  // Writes into the namespace directly, as a NodeManager's log upload does over HDFS RPC
  // (which the double does not speak). MakeDir: mkdir -p, the missing directories get `owner`
  // and `permission`, existing ones stay as they are. PutFile: the file (replaced if there),
  // missing parents made 755.
  Status MakeDir(const std::string& hdfs_path, const std::string& owner, const std::string& permission);
  Status PutFile(const std::string& hdfs_path, const std::string& bytes, const std::string& owner,
                 const std::string& permission);

 private:
  struct Node {
    Entry entry;
    int64_t file_id = 0;
    int64_t access_time = 0;
  };
  using Reply = fake_hdfs_internal::Reply;
  using Request = fake_hdfs_internal::Request;
  using Connection = fake_hdfs_internal::Connection;
  struct Conn {
    std::thread thread;
    int fd = -1;
    std::atomic<bool> done{false};
  };

  void AcceptLoop(int listen_fd, bool datanode, bool standby = false);
  void ReapFinished();  // with conn_mu_ held
  void Serve(int fd, bool datanode, bool standby = false);
  bool ServeNameNode(Connection& conn, const Request& req, bool standby = false);
  void ServeDataNode(Connection& conn, const Request& req);

  Reply Mkdirs(const Request& req);
  Reply Redirect(const Request& req, const std::string& op);
  Reply GetFileStatus(const Request& req);
  Reply ListStatus(const Request& req);
  Reply Delete(const Request& req);
  Reply Rename(const Request& req);
  void DataNodeCreate(Connection& conn, const Request& req);
  void DataNodeOpen(Connection& conn, const Request& req);

  Reply GetDelegationToken(const Request& req);
  Reply RenewDelegationToken(const Request& req);
  Reply CancelDelegationToken(const Request& req);
  // SPNEGO mode: who sent `req` (the user fields of *req set), or the whole refusal to send.
  std::optional<std::string> Authenticate(Request* req, std::string* auth_headers);
  // The `delegation=` token of `req`, verified: its owner's short name, or the 403 to send.
  Result<std::string> DelegationUser(const Request& req);
  std::string SignCookie(const std::string& data) const;

  // Namespace helpers; mu_ held.
  const Node* Find(const std::string& path) const;
  bool MakeDirLocked(const std::string& path, const std::string& owner, const std::string& permission,
                     Reply* error);
  std::vector<std::string> ChildrenLocked(const std::string& path) const;
  std::string StatusJsonLocked(const std::string& path, const std::string& suffix) const;
  int64_t NextFileIdLocked() { return next_file_id_++; }

  std::string storage_dir_;
  int nn_fd_ = -1, dn_fd_ = -1, rpc_fd_ = -1;
  int nn_port_ = 0, dn_port_ = 0, rpc_port_ = 0;
  std::thread nn_thread_, dn_thread_;
  int sb_fd_ = -1, sb_port_ = 0;  // the standby NameNode (StartStandbyNameNode)
  std::thread sb_thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> requests_served_{0};
  std::atomic<int64_t> upload_counter_{0};
  std::atomic<int64_t> bytes_created_{0};

  // SPNEGO (RequireSpnego); set before serving, read by every connection.
  std::atomic<bool> spnego_{false};
  std::string spnego_keytab_, spnego_principal_;
  std::string cookie_secret_;  // random, per server: the cookie's HMAC key
  std::atomic<int64_t> spnego_accepts_{0};
  std::atomic<int64_t> cookie_validity_ms_{36000LL * 1000};
  std::atomic<int64_t> datanode_close_ms_{0};
  std::atomic<int> creates_in_progress_{0};
  std::atomic<int> max_concurrent_creates_{0};
  DelegationTokenStore tokens_;

  std::mutex conn_mu_;
  std::list<std::unique_ptr<Conn>> conns_;

  mutable std::mutex mu_;
  std::map<std::string, Node> nodes_;  // by normalised path; "/" always present
  std::vector<std::string> created_files_;
  int64_t next_file_id_ = 16386;      // HDFS's first inode id after the root's 16385
};

}  // namespace loom::yarn_double
