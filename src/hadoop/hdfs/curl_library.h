#pragma once
// HTTP for WebHDFS and the NodeManagers' web services, through libcurl. `loom` links a libcurl
// built from Debian's source with only http(s), OpenSSL and c-ares (cmake/StaticCurl.cmake):
// no Kerberos, LDAP or NSS of the node, so the same binary runs on every node. The functions
// sit in a table so that tests can put a libcurl that refuses an option in its place.

#include <curl/curl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace loom::hadoop {

struct CurlLibrary {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_perform)(CURL*);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  void (*easy_cleanup)(CURL*);
  const char* (*easy_strerror)(CURLcode);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};

// The library (curl_global_init done). Thread-safe.
Result<const CurlLibrary*> Curl();
// Tests: Curl() returns `library` instead (e.g. the loaded one with an option refused), until
// called again with nullptr. `library` must outlive its use; not for exchanges in flight.
void SetCurlLibraryForTest(const CurlLibrary* library);

// One HTTP exchange with a cluster service (WebHDFS, a NodeManager) on its own connection:
// no proxy (cluster-internal addresses, like Hadoop's own RPC: an http_proxy meant for the
// outside world must not carry them), http(s) only, and redirects reported in `location`,
// never followed.
struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  long connect_timeout_s = 30;
  // No overall timeout (uploads and logs can be large), but a transfer that moves no byte
  // for this long fails.
  long stall_timeout_s = 120;
  // A PUT body of `body_size` bytes, given by libcurl's read callback and rewound by its seek
  // callback, both called with `body`. nullptr: no body.
  curl_read_callback read_body = nullptr;
  curl_seek_callback seek_body = nullptr;
  void* body = nullptr;
  int64_t body_size = 0;
};

struct HttpResponse {
  long code = 0;
  std::string body;
  std::string location;  // of a redirect
  // The final response's header lines ("Name: value", as sent, without CRLF); an interim
  // "100 Continue"'s are dropped.
  std::vector<std::string> headers;
  // The values of every header named `name` (case-insensitive), in order.
  std::vector<std::string> HeaderValues(std::string_view name) const;
};

// The response, whatever its status code. Unavailable "<method> <url>: <why>" when no
// response came (refused, timed out, stalled), the URL as RedactUrlSecrets gives it;
// FailedPrecondition when libcurl refuses the truststore or TLS verification (never a silent
// fall back to the system's CA store); libcurl's load errors as Curl().
Result<HttpResponse> HttpExchange(const HttpRequest& request);

// `text` (a URL, or a message quoting URLs) with the value of every `delegation=` and `token=`
// query parameter replaced by "<redacted>". A delegation token in a URL (WebHDFS with
// delegation=, a DataNode redirect, RENEW/CANCELDELEGATIONTOKEN's token=) is a bearer
// credential, and messages built from URLs reach logs: the AM's is aggregated and shown in the
// YARN UI. Every message built from a URL goes through this.
std::string RedactUrlSecrets(std::string_view text);

}  // namespace loom::hadoop
