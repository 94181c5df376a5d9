#include "cluster/yarn/hdfs/curl_library.h"

#include <dlfcn.h>

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

}  // namespace

Result<const CurlLibrary*> Curl() {
  static std::once_flag once;
  static Result<CurlLibrary> loaded = Status::Internal("not loaded");
  std::call_once(once, [] { loaded = Load(); });
  if (!loaded.ok()) return loaded.status();
  return &*loaded;
}

}  // namespace loom::cluster::yarn
