#include "hadoop/hdfs/curl_library.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>

#include "core/strings.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/conf/tls_trust.h"

namespace loom::hadoop {

namespace {

Result<CurlLibrary> Load() {
  CurlLibrary c{};
  c.global_init = &curl_global_init;
  c.easy_init = &curl_easy_init;
  c.easy_setopt = &curl_easy_setopt;
  c.easy_perform = &curl_easy_perform;
  c.easy_getinfo = &curl_easy_getinfo;
  c.easy_cleanup = &curl_easy_cleanup;
  c.easy_strerror = &curl_easy_strerror;
  c.slist_append = &curl_slist_append;
  c.slist_free_all = &curl_slist_free_all;
  c.global_init(CURL_GLOBAL_DEFAULT);
  return c;
}

// The system's CA bundle, where this node's distribution keeps it. libcurl, built on Debian,
// knows only Debian's path; a static `loom` on a RHEL or SUSE node must find that node's own.
const char* SystemCaBundle() {
  static const char* const kBundles[] = {
      "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu, Gentoo, Arch
      "/etc/pki/tls/certs/ca-bundle.crt",                   // RHEL, CentOS, Fedora, Rocky
      "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // RHEL 7 and later
      "/etc/ssl/ca-bundle.pem",                             // SUSE
      "/etc/ssl/cert.pem",                                  // Alpine
  };
  for (const char* path : kBundles) {
    if (::access(path, R_OK) == 0) return path;
  }
  return nullptr;
}

size_t AppendToString(char* data, size_t size, size_t n, void* userdata) {
  static_cast<std::string*>(userdata)->append(data, size * n);
  return size * n;
}

// Collects the header lines of the response; a new status line (after "100 Continue") starts over.
size_t AppendHeader(char* data, size_t size, size_t n, void* userdata) {
  auto* headers = static_cast<std::vector<std::string>*>(userdata);
  std::string line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {
    headers->clear();
  } else if (!line.empty()) {
    headers->push_back(std::move(line));
  }
  return size * n;
}

// True when `text` at `at` starts `name` (ASCII, case-insensitive: Hadoop's WebHDFS parameter
// names are).
bool StartsWithNoCase(std::string_view text, size_t at, std::string_view name) {
  if (text.size() - at < name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[at + i])) != name[i]) return false;
  }
  return true;
}

struct CurlDeleter {
  const CurlLibrary* lib;
  void operator()(CURL* h) const { lib->easy_cleanup(h); }
  void operator()(curl_slist* l) const { lib->slist_free_all(l); }
};

}  // namespace

Result<HttpResponse> HttpExchange(const HttpRequest& request) {
  LOOM_ASSIGN_OR_RETURN(const CurlLibrary* lib, Curl());
  std::unique_ptr<CURL, CurlDeleter> curl(lib->easy_init(), CurlDeleter{lib});
  if (!curl) return Status::Internal("curl_easy_init failed");
  CURL* h = curl.get();
  HttpResponse response;
  char error[CURL_ERROR_SIZE] = "";
  lib->easy_setopt(h, CURLOPT_URL, request.url.c_str());
  lib->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  lib->easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  lib->easy_setopt(h, CURLOPT_CONNECTTIMEOUT, request.connect_timeout_s);
  lib->easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  lib->easy_setopt(h, CURLOPT_LOW_SPEED_TIME, request.stall_timeout_s);
  lib->easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  lib->easy_setopt(h, CURLOPT_PROXY, "");
#if LIBCURL_VERSION_NUM >= 0x075500
  lib->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
  std::shared_ptr<const std::string> trust;  // must outlive easy_perform
  if (ToLower(request.url.substr(0, 8)) == "https://") {
    Result<std::shared_ptr<const std::string>> t = HttpsTrust();
    if (!t.ok()) return t.status().WithContext(request.method + " " + RedactUrlSecrets(request.url));
    trust = *t;
  }
  // A libcurl (or its TLS backend) that refuses an option would otherwise go on with its
  // defaults: the system's CA store instead of the cluster's truststore, or no verification.
  auto tls_option = [&](CURLcode code, const char* what) -> Status {
    if (code == CURLE_OK) return Status::Ok();
    return Status::FailedPrecondition(request.method + " " + RedactUrlSecrets(request.url) + ": libcurl refused " +
                                      what + " (" + lib->easy_strerror(code) + "); Loom will not fall back to " +
                                      "another trust: use a libcurl 7.77 or later built with OpenSSL");
  };
  if (trust && !trust->empty()) {
    curl_blob blob{const_cast<char*>(trust->data()), trust->size(), CURL_BLOB_NOCOPY};
    LOOM_RETURN_IF_ERROR(tls_option(lib->easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob),
                                    "the HTTPS truststore (ssl.client.truststore.location in $HADOOP_CONF_DIR/"
                                    "ssl-client.xml) as CURLOPT_CAINFO_BLOB"));
    // The blob replaces the CA file; the CA directory must go too for the truststore to be
    // all that is trusted.
    LOOM_RETURN_IF_ERROR(tls_option(lib->easy_setopt(h, CURLOPT_CAPATH, static_cast<char*>(nullptr)),
                                    "to drop its CA directory (CURLOPT_CAPATH) for the HTTPS truststore"));
  }
  if (trust && trust->empty()) {
    if (const char* bundle = SystemCaBundle()) {
      LOOM_RETURN_IF_ERROR(tls_option(lib->easy_setopt(h, CURLOPT_CAINFO, bundle), "the system's CA bundle"));
    }
  }
  LOOM_RETURN_IF_ERROR(tls_option(lib->easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L), "CURLOPT_SSL_VERIFYPEER"));
  LOOM_RETURN_IF_ERROR(tls_option(lib->easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L), "CURLOPT_SSL_VERIFYHOST"));
  lib->easy_setopt(h, CURLOPT_WRITEFUNCTION, AppendToString);
  lib->easy_setopt(h, CURLOPT_WRITEDATA, &response.body);
  lib->easy_setopt(h, CURLOPT_HEADERFUNCTION, AppendHeader);
  lib->easy_setopt(h, CURLOPT_HEADERDATA, &response.headers);
  std::unique_ptr<curl_slist, CurlDeleter> headers(nullptr, CurlDeleter{lib});
  for (const std::string& header : request.headers) {
    curl_slist* list = lib->slist_append(headers.get(), header.c_str());
    if (list == nullptr) return Status::Internal("curl_slist_append failed");
    (void)headers.release();
    headers.reset(list);
  }
  if (headers) lib->easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  if (request.read_body != nullptr) {
    lib->easy_setopt(h, CURLOPT_UPLOAD, 1L);  // PUT with the body
    lib->easy_setopt(h, CURLOPT_READFUNCTION, request.read_body);
    lib->easy_setopt(h, CURLOPT_READDATA, request.body);
    lib->easy_setopt(h, CURLOPT_SEEKFUNCTION, request.seek_body);
    lib->easy_setopt(h, CURLOPT_SEEKDATA, request.body);
    lib->easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body_size));
  } else if (request.method != "GET") {
    lib->easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  CURLcode rc = lib->easy_perform(h);
  if (rc != CURLE_OK) {
    std::string why = error[0] != '\0' ? error : lib->easy_strerror(rc);
    if (rc == CURLE_PEER_FAILED_VERIFICATION) {
      why += " (Loom trusts the truststore that ssl.client.truststore.location names in $HADOOP_CONF_DIR/"
             "ssl-client.xml, else the system's CA store)";
    }
    return Status::Unavailable(request.method + " " + RedactUrlSecrets(request.url) + ": " + RedactUrlSecrets(why));
  }
  lib->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.code);
  char* location = nullptr;
  lib->easy_getinfo(h, CURLINFO_REDIRECT_URL, &location);
  if (location != nullptr) response.location = location;
  return response;
}

std::string RedactUrlSecrets(std::string_view text) {
  static constexpr std::string_view kSecret[] = {"delegation=", "token="};
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  while (at < text.size()) {
    char c = text[at];
    out += c;
    ++at;
    if (c != '?' && c != '&') continue;  // a query parameter starts after these only
    for (std::string_view name : kSecret) {
      if (!StartsWithNoCase(text, at, name)) continue;
      out.append(text.substr(at, name.size()));
      at += name.size();
      // A token's URL string is URL-safe Base64; percent-escapes and standard Base64 too are
      // taken. Anything else (':' of "<url>: why", '&', a quote, a space) ends it.
      while (at < text.size() && (std::isalnum(static_cast<unsigned char>(text[at])) ||
                                  std::string_view("-_.~%+=/").find(text[at]) != std::string_view::npos)) {
        ++at;
      }
      out += "<redacted>";
      break;
    }
  }
  return out;
}

std::vector<std::string> HttpResponse::HeaderValues(std::string_view name) const {
  std::vector<std::string> values;
  for (const std::string& line : headers) {
    size_t colon = line.find(':');
    if (colon != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < colon && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(line[i])) == std::tolower(static_cast<unsigned char>(name[i]));
    }
    if (!same) continue;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    values.push_back(start == std::string::npos ? "" : line.substr(start));
  }
  return values;
}

namespace {
std::atomic<const CurlLibrary*> g_test_library{nullptr};
}  // namespace

void SetCurlLibraryForTest(const CurlLibrary* library) { g_test_library.store(library); }

Result<const CurlLibrary*> Curl() {
  if (const CurlLibrary* test = g_test_library.load()) return test;
  static std::once_flag once;
  static Result<CurlLibrary> loaded = Status::Internal("not loaded");
  std::call_once(once, [] { loaded = Load(); });
  if (!loaded.ok()) return loaded.status();
  return &*loaded;
}

}  // namespace loom::hadoop
