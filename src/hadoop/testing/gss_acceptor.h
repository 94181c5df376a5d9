#pragma once
// GssAcceptor: the accepting side of one Kerberos security context, for TEST SERVERS only
// (SASL GSSAPI in ipc_server.h; SPNEGO on the YARN test double's WebHDFS and NM web), on the
// real MIT GSSAPI library and a service keytab, as Hadoop's servers use theirs. Loom itself
// never accepts Kerberos.
// Accepts raw Kerberos (SASL GSSAPI) and SPNEGO-wrapped (HTTP Negotiate) initial tokens.
//
// Not thread-safe: one acceptor per connection (or per HTTP request).

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace loom::hadoop::testing {

class GssAcceptor {
 public:
  // Accepts only tickets for `principal` ("rm/localhost@LOOM.TEST"), with its keys read from
  // `keytab`. FailedPrecondition when the library or the keytab's key is missing.
  static Result<std::unique_ptr<GssAcceptor>> Create(const std::string& keytab, const std::string& principal);
  ~GssAcceptor();
  GssAcceptor(const GssAcceptor&) = delete;
  GssAcceptor& operator=(const GssAcceptor&) = delete;

  struct Step {
    std::string output;     // the token to send back (may be empty)
    bool complete = false;  // the context is established
  };
  // One accept step. Unauthenticated with MIT's text when the token is refused (a ticket for
  // another service, a replay, a skewed clock, garbage).
  Result<Step> Accept(std::string_view input);
  // The initiator, "root@LOOM.TEST", once complete.
  const std::string& client_principal() const { return client_principal_; }
  // RFC 4121 wrap/unwrap on the established context (conf: sealed, else signed only).
  Result<std::string> Wrap(std::string_view plain, bool conf);
  Result<std::string> Unwrap(std::string_view token, bool* conf_used);

 private:
  GssAcceptor() = default;
  struct State;
  std::unique_ptr<State> state_;
  std::string client_principal_;
};

}  // namespace loom::hadoop::testing
