#include "cluster/yarn/hdfs/curl_library.h"

#include <dlfcn.h>

#include <memory>
#include <mutex>

namespace loom::cluster::yarn {

namespace {

template <typename F>
bool Resolve(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(::dlsym(lib, name));
  return *fn != nullptr;
}

Result<CurlLibrary> Load() {
  void* lib = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();
    return Status::FailedPrecondition(std::string("WebHDFS needs libcurl (apt-get install libcurl4): ") +
                                      (err ? err : "dlopen failed"));
  }
  CurlLibrary c{};
  bool ok = Resolve(lib, "curl_global_init", &c.global_init) && Resolve(lib, "curl_easy_init", &c.easy_init) &&
            Resolve(lib, "curl_easy_setopt", &c.easy_setopt) && Resolve(lib, "curl_easy_perform", &c.easy_perform) &&
            Resolve(lib, "curl_easy_getinfo", &c.easy_getinfo) && Resolve(lib, "curl_easy_cleanup", &c.easy_cleanup) &&
            Resolve(lib, "curl_easy_strerror", &c.easy_strerror) && Resolve(lib, "curl_slist_append", &c.slist_append) &&
            Resolve(lib, "curl_slist_free_all", &c.slist_free_all);
  if (!ok) return Status::FailedPrecondition("libcurl.so.4 lacks a function WebHDFS needs");
  c.global_init(CURL_GLOBAL_DEFAULT);
  return c;  // the library stays loaded for the life of the process
}

size_t AppendToString(char* data, size_t size, size_t n, void* userdata) {
  static_cast<std::string*>(userdata)->append(data, size * n);
  return size * n;
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
  lib->easy_setopt(h, CURLOPT_WRITEFUNCTION, AppendToString);
  lib->easy_setopt(h, CURLOPT_WRITEDATA, &response.body);
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
    return Status::Unavailable(request.method + " " + request.url + ": " +
                               (error[0] != '\0' ? error : lib->easy_strerror(rc)));
  }
  lib->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.code);
  char* location = nullptr;
  lib->easy_getinfo(h, CURLINFO_REDIRECT_URL, &location);
  if (location != nullptr) response.location = location;
  return response;
}

Result<const CurlLibrary*> Curl() {
  static std::once_flag once;
  static Result<CurlLibrary> loaded = Status::Internal("not loaded");
  std::call_once(once, [] { loaded = Load(); });
  if (!loaded.ok()) return loaded.status();
  return &*loaded;
}

}  // namespace loom::cluster::yarn
