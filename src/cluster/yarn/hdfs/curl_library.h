#pragma once
// libcurl, loaded on first use. Every Loom process is the same `loom` binary, and only the
// client and the YARN AM ever talk WebHDFS: linking libcurl (and its ~30 libraries: TLS,
// Kerberos, LDAP, ...) would make every executor start slower and larger. dlopen on demand
// keeps them out of every other process.

#include <curl/curl.h>

#include "core/status.h"

namespace loom::cluster::yarn {

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

// The loaded library (curl_global_init done), or why it cannot be loaded. Thread-safe.
Result<const CurlLibrary*> Curl();

}  // namespace loom::cluster::yarn
