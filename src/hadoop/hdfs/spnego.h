#pragma once
// SPNEGO (HTTP Negotiate, RFC 4559) for the cluster's Kerberized web services: the NameNode's
// WebHDFS and the NodeManagers' web servers (`hadoop.http.authentication.type=kerberos`).
//
// What a request carries, as curl --negotiate and Java's hadoop-auth client do (kerberos/
// webhdfs/01-02, K5.7):
//   * with a `hadoop.auth` cookie this process got from that server (scheme://host:port) and
//     whose expiry (e=) has not passed: the cookie, and no new Kerberos token;
//   * else, when the process has a Kerberos login (ProcessKerberos()): `Authorization: Negotiate
//     <token>` on the FIRST request (no 401 round trip). The token is the Kerberos GSS initial
//     token (AP-REQ, mutual authentication), as Java's KerberosAuthenticator sends it; curl
//     wraps the same in a SPNEGO NegTokenInit, and Hadoop's filter accepts both. It is for
//     the service principal
//     HTTP/<host>@<default realm>, where <host> is the URL's host lower-cased and an IP literal
//     is replaced by its reverse-resolved name. That is what Java's WebHDFS client ends up with
//     (KerberosUtil.getServicePrincipal on the host of a URL built from an InetSocketAddress's
//     getHostName()): https://127.0.0.1:9871 asks for HTTP/localhost, not HTTP/127.0.0.1;
//   * with neither: the request as given.
// The server's mutual-auth token (`WWW-Authenticate: Negotiate <token>`) is checked when sent;
// a `Set-Cookie: hadoop.auth=...` is kept (process-wide) and an empty one drops it. A 401 to a
// cookie drops the cookie and negotiates once more.
//
// Errors: Unauthenticated when the server demands Negotiate and the process has no login, or
// refuses the token (401 after negotiating), or its mutual-auth token is bad; PermissionDenied
// for a 403 to a fresh token that is not a WebHDFS RemoteException (Hadoop's filter refusing
// the ticket). Both name the HTTP principal and `kinit`. Other answers, 403 RemoteExceptions
// (standby, AccessControlException) included, are returned as they are.
//
// Thread-safe: the cookie jar is shared and locked; each exchange has its own GSS context.

#include <string>

#include "core/status.h"
#include "hadoop/hdfs/curl_library.h"

namespace loom::hadoop {

class KerberosLogin;

// The host part of the service principal for an http(s) URL ("localhost" for
// "https://127.0.0.1:9871/x" where 127.0.0.1 resolves back to localhost); InvalidArgument
// for a URL without a host.
Result<std::string> SpnegoServiceHost(const std::string& url);

// One exchange as described above, with the process's Kerberos login (none: plain, but a
// Negotiate demand becomes a clear error). A request with a body must have `seek_body` so
// that it can be sent again after a refused cookie.
Result<HttpResponse> AuthenticatedExchange(const HttpRequest& request);
// The same with an explicit login (nullptr: none), for tests and callers that hold one.
Result<HttpResponse> AuthenticatedExchange(const HttpRequest& request, const KerberosLogin* login);

// Forgets every hadoop.auth cookie of this process (tests; a new login).
void ClearSpnegoCookies();

}  // namespace loom::hadoop
