#pragma once
// The YARN client's security: its Kerberos login (hadoop.security.authentication=kerberos) and
// the HDFS delegation tokens a Kerberized job's AM and tasks get, as Hadoop's Java clients do
// (yarn-captures kerberos/, K4-K5). Used by `loom submit|status|logs|kill` (yarn_job_submitter).

#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/status.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/ipc/ipc_client.h"
#include "hadoop/ipc/namenode_client.h"
#include "hadoop/wire/credentials.h"

namespace loom::cluster::yarn {

// hadoop.security.authentication=kerberos: logs in (kinit's ticket cache, or the job's keytab:
// loom.kerberos.keytab/principal, TonY's tony.keytab.location/user) before anything is asked
// or staged, and makes this process's ResourceManager and NameNode connections authenticate
// with SASL GSSAPI. InvalidArgument (exit 2): no or expired ticket, a keytab that does not
// exist, keytab keys on a cluster without Kerberos, security.enabled=false on a Kerberized one.
// Returns the logged-in principal ("alice@REALM"), or "" on a cluster without Kerberos.
Result<std::string> LoginForCluster(const hadoop::HadoopConf& conf, const config::Config& job_conf);

// Hadoop's DEFAULT auth_to_local rule for the realm's principals: the principal's first
// component ("alice/host@R" -> "alice", "root@LOOM.TEST" -> "root"), the name the NameNode and
// the RM know a Kerberos user by.
std::string KerberosShortName(const std::string& principal);

// A file system to get an HDFS delegation token for, and the key that named it as the user
// wrote it ("fs.defaultFS", "loom.application.file-systems", "tony.other.namenodes").
struct TokenFileSystem {
  std::string uri;
  std::string key;
  bool operator==(const TokenFileSystem&) const = default;
};
// The file systems a Kerberized job needs tokens for: fs.defaultFS, then each URI of
// loom.application.file-systems and of loom.other.namenodes (TonY's tony.other.namenodes), each
// once. Without Kerberos: none. InvalidArgument naming the key as written: a URI that is not
// hdfs://, or either key set on a cluster without Kerberos (no token would be fetched or used).
Result<std::vector<TokenFileSystem>> TokenFileSystems(const hadoop::HadoopConf& conf, const config::Config& job_conf);

// An HDFS delegation token `loom submit` fetched, and the file system whose NameNode issued it
// (to cancel it there).
struct FetchedToken {
  hadoop::Token token;
  hadoop::HdfsFileSystem fs;
};

// One HDFS delegation token for each of `systems` (DFSClient's NameNodes and token service from
// `site`; a service already asked is not asked again), renewer `renewer`, over connections
// like `base`. On a failure the tokens already fetched are cancelled and the error names the
// file system and its key as written: Unavailable or DeadlineExceeded when no NameNode
// answered (the cluster's state: try again), InvalidArgument for anything else (a refusal, an
// unresolvable URI: the user's to fix, exit 2).
Result<std::vector<FetchedToken>> FetchHdfsDelegationTokens(const std::vector<TokenFileSystem>& systems,
                                                            const hadoop::SiteProperties& site, const hadoop::IpcOptions& base,
                                                            const std::string& renewer);
// Best effort: cancels each token at its NameNode (its owner may), logging a warning for any
// that fails (it then expires by itself); returns how many were cancelled.
int CancelDelegationTokens(const std::vector<FetchedToken>& tokens, const hadoop::IpcOptions& base);

}  // namespace loom::cluster::yarn
