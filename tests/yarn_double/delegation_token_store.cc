#include "delegation_token_store.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <chrono>

namespace loom::yarn_double {

using hadoop::DelegationTokenIdentifier;
using hadoop::Token;

std::string ShortName(const std::string& principal) {
  // auth_to_local DEFAULT: the first component of a principal of the default realm.
  size_t end = principal.find_first_of("/@");
  return end == std::string::npos ? principal : principal.substr(0, end);
}

std::string FormatTokenId(const DelegationTokenIdentifier& id) {
  // AbstractDelegationTokenSecretManager.formatTokenId: "token for <short owner>: <kind> <toString>".
  return "token for " + ShortName(id.owner) + ": " + hadoop::kHdfsDelegationKind + " owner=" + id.owner +
         ", renewer=" + id.renewer + ", realUser=" + id.real_user + ", issueDate=" + std::to_string(id.issue_date_ms) +
         ", maxDate=" + std::to_string(id.max_date_ms) + ", sequenceNumber=" + std::to_string(id.sequence_number) +
         ", masterKeyId=" + std::to_string(id.master_key_id);
}

DelegationTokenStore::DelegationTokenStore(Options options) : options_(std::move(options)) {
  master_key_.resize(20);
  if (RAND_bytes(reinterpret_cast<unsigned char*>(master_key_.data()), static_cast<int>(master_key_.size())) != 1) {
    // A test double: a fixed key still makes passwords this store alone checks.
    master_key_.assign(20, 'k');
  }
}

int64_t DelegationTokenStore::Now() const {
  if (options_.now_ms) return options_.now_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string DelegationTokenStore::PasswordFor(const std::string& identifier) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha1(), master_key_.data(), static_cast<int>(master_key_.size()),
       reinterpret_cast<const unsigned char*>(identifier.data()), identifier.size(), mac, &len);
  return std::string(reinterpret_cast<const char*>(mac), len);
}

DelegationTokenStore::Entry* DelegationTokenStore::Find(const Token& token) {
  auto it = entries_.find(token.identifier);
  return it == entries_.end() ? nullptr : &it->second;
}
const DelegationTokenStore::Entry* DelegationTokenStore::Find(const Token& token) const {
  auto it = entries_.find(token.identifier);
  return it == entries_.end() ? nullptr : &it->second;
}

Token DelegationTokenStore::Mint(const std::string& owner, const std::string& renewer) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t now = Now();
  DelegationTokenIdentifier id;
  id.owner = owner;
  id.renewer = ShortName(renewer);
  id.issue_date_ms = now;
  id.max_date_ms = now + options_.max_lifetime_ms;
  id.sequence_number = next_sequence_++;
  id.master_key_id = master_key_id_;
  Token token;
  token.identifier = hadoop::SerializeDelegationTokenIdentifier(id);
  token.password = PasswordFor(token.identifier);
  token.kind = hadoop::kHdfsDelegationKind;
  Entry entry;
  entry.id = id;
  entry.password = token.password;
  entry.expiry_ms = std::min(now + options_.renew_interval_ms, id.max_date_ms);
  entries_[token.identifier] = entry;
  order_.push_back(token.identifier);
  return token;
}

Result<DelegationTokenIdentifier> DelegationTokenStore::Verify(const Token& token) const {
  LOOM_ASSIGN_OR_RETURN(DelegationTokenIdentifier id, hadoop::ParseDelegationTokenIdentifier(token.identifier));
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* e = Find(token);
  if (e == nullptr || e->cancelled) {
    return Status::PermissionDenied("token (" + FormatTokenId(id) + ") can't be found in cache");
  }
  if (e->password != token.password) {
    return Status::PermissionDenied("token (" + FormatTokenId(id) + ") is invalid, password doesn't match");
  }
  int64_t now = Now();
  if (e->expiry_ms < now) {
    return Status::PermissionDenied("token (" + FormatTokenId(id) + ") is expired, current time: " +
                                    std::to_string(now) + " expected renewal time: " + std::to_string(e->expiry_ms));
  }
  return e->id;
}

Result<std::string> DelegationTokenStore::RetrievePassword(const std::string& identifier) const {
  Token token;
  token.identifier = identifier;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Entry* e = Find(token);
    if (e != nullptr) token.password = e->password;
  }
  LOOM_RETURN_IF_ERROR(Verify(token).status());
  return token.password;
}

Result<int64_t> DelegationTokenStore::Renew(const Token& token, const std::string& caller) {
  LOOM_ASSIGN_OR_RETURN(DelegationTokenIdentifier id, hadoop::ParseDelegationTokenIdentifier(token.identifier));
  std::lock_guard<std::mutex> lock(mu_);
  int64_t now = Now();
  std::string who = ShortName(caller);
  if (id.max_date_ms < now) {
    return Status::PermissionDenied(who + " tried to renew an expired token (" + FormatTokenId(id) +
                                    ") max expiration date: " + std::to_string(id.max_date_ms) +
                                    " currentTime: " + std::to_string(now));
  }
  if (id.renewer.empty()) {
    return Status::PermissionDenied(who + " tried to renew a token (" + FormatTokenId(id) + ") without a renewer");
  }
  if (id.renewer != who) {
    return Status::PermissionDenied(who + " tries to renew a token (" + FormatTokenId(id) +
                                    ") with non-matching renewer " + id.renewer);
  }
  Entry* e = Find(token);
  if (e == nullptr || e->cancelled) {
    return Status::PermissionDenied("Renewal request for unknown token (" + FormatTokenId(id) + ")");
  }
  if (e->password != token.password) {
    return Status::PermissionDenied("Renewal request for token (" + FormatTokenId(id) + ") with a wrong password");
  }
  e->expiry_ms = std::min(now + options_.renew_interval_ms, id.max_date_ms);
  ++e->renewals;
  return e->expiry_ms;
}

Status DelegationTokenStore::Cancel(const Token& token, const std::string& caller) {
  LOOM_ASSIGN_OR_RETURN(DelegationTokenIdentifier id, hadoop::ParseDelegationTokenIdentifier(token.identifier));
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = Find(token);
  if (e == nullptr || e->cancelled) {
    return Status::PermissionDenied("Token not found (" + FormatTokenId(id) + ")");
  }
  std::string who = ShortName(caller);
  if (who != ShortName(id.owner) && who != id.renewer) {
    return Status::PermissionDenied(who + " is not authorized to cancel the token (" + FormatTokenId(id) + ")");
  }
  e->cancelled = true;
  return Status::Ok();
}

std::vector<DelegationTokenIdentifier> DelegationTokenStore::Minted() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<DelegationTokenIdentifier> out;
  for (const std::string& key : order_) out.push_back(entries_.at(key).id);
  return out;
}

int DelegationTokenStore::RenewCount(const Token& token) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* e = Find(token);
  return e == nullptr ? 0 : e->renewals;
}

bool DelegationTokenStore::Cancelled(const Token& token) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* e = Find(token);
  return e != nullptr && e->cancelled;
}

}  // namespace loom::yarn_double
