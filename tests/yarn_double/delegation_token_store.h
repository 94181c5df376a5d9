#pragma once
// DelegationTokenStore: the NameNode's delegation-token secret manager, for the YARN TEST
// DOUBLE: it mints HDFS delegation tokens (identifier as hadoop/wire/credentials.h
// encodes it, password = HMAC-SHA1(identifier) under a master key of this store), verifies
// them, renews and cancels them with the checks a Hadoop 3.3.6 NameNode makes (kerberos/ K5.5,
// webhdfs/07-08): only the renewer (by short name) may renew, the owner or the renewer may
// cancel, a cancelled or expired token is refused everywhere.
//
// Thread-safe.

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "hadoop/wire/credentials.h"

namespace loom::yarn_double {

// "rm/localhost@LOOM.TEST" -> "rm", "root@LOOM.TEST" -> "root", "root" -> "root"
// (hadoop.security.auth_to_local=DEFAULT for the realm's own principals).
std::string ShortName(const std::string& principal);

class DelegationTokenStore {
 public:
  struct Options {
    int64_t renew_interval_ms = 24LL * 3600 * 1000;     // dfs.namenode.delegation.token.renew-interval
    int64_t max_lifetime_ms = 7LL * 24 * 3600 * 1000;  // dfs.namenode.delegation.token.max-lifetime
    std::function<int64_t()> now_ms;                    // unset: the wall clock
  };
  explicit DelegationTokenStore(Options options);
  DelegationTokenStore() : DelegationTokenStore(Options{}) {}

  // A new HDFS_DELEGATION_TOKEN (service "", as the RPC answer has it). `owner` as the caller
  // authenticated ("root@LOOM.TEST" over RPC, "root" over WebHDFS); `renewer` a principal or a
  // short name, stored short.
  hadoop::Token Mint(const std::string& owner, const std::string& renewer);
  // The identifier of a token this store minted that is neither cancelled nor expired;
  // PermissionDenied with the NameNode's words otherwise ("token (...) can't be found in cache",
  // "password mismatch", "is expired").
  Result<hadoop::DelegationTokenIdentifier> Verify(const hadoop::Token& token) const;
  // The new expiry (ms). PermissionDenied "<caller> tries to renew a token (...) with
  // non-matching renewer <renewer>" unless ShortName(caller) is the renewer.
  Result<int64_t> Renew(const hadoop::Token& token, const std::string& caller);
  // PermissionDenied unless ShortName(caller) is the owner's short name or the renewer.
  Status Cancel(const hadoop::Token& token, const std::string& caller);

  // The password of a live token by its identifier bytes: what a SASL TOKEN (DIGEST-MD5) server
  // checks a client against. PermissionDenied as Verify's.
  Result<std::string> RetrievePassword(const std::string& identifier) const;

  // What tests look at: every token minted, renewed (by whom), cancelled, in order.
  std::vector<hadoop::DelegationTokenIdentifier> Minted() const;
  int RenewCount(const hadoop::Token& token) const;
  bool Cancelled(const hadoop::Token& token) const;

 private:
  struct Entry {
    hadoop::DelegationTokenIdentifier id;
    std::string password;
    int64_t expiry_ms = 0;  // renewal deadline: min(now + renew interval, maxDate)
    int renewals = 0;
    bool cancelled = false;
  };
  int64_t Now() const;
  std::string PasswordFor(const std::string& identifier) const;
  // The entry for `token`'s identifier, or null (not minted here).
  Entry* Find(const hadoop::Token& token);
  const Entry* Find(const hadoop::Token& token) const;

  Options options_;
  std::string master_key_;  // 20 random bytes: HMAC-SHA1 key of every password
  int32_t master_key_id_ = 1;
  mutable std::mutex mu_;
  int32_t next_sequence_ = 1;
  std::map<std::string, Entry> entries_;  // by identifier bytes
  std::vector<std::string> order_;        // identifiers in minting order
};

// "token for root: HDFS_DELEGATION_TOKEN owner=root@LOOM.TEST, renewer=rm, ..." as the NameNode
// formats a token in its messages.
std::string FormatTokenId(const hadoop::DelegationTokenIdentifier& id);

}  // namespace loom::yarn_double
