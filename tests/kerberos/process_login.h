#pragma once
// What `loom` does once it found its Kerberos credentials: the process's login (from the ticket
// cache, or a keytab's principal with `options`) set for in-process SPNEGO and SASL GSSAPI. For
// the tests that talk to the double's Kerberized web servers.

#include <memory>

#include "core/testing.h"
#include "hadoop/wire/kerberos_login.h"

namespace loom::testing {

inline void SetProcessLogin(const hadoop::KerberosLoginOptions& options = {}) {
  auto login = hadoop::KerberosLogin::Acquire(options);
  ASSERT_OK(login);
  auto conf = std::make_shared<hadoop::KerberosClientConf>();
  conf->login = *login;
  hadoop::SetProcessKerberos(conf);
}

}  // namespace loom::testing
