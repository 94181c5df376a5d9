# loom_httplib: cpp-httplib, the HTTP server of the AM's dashboard, `loom portal` and the test
# double's NodeManagers, used header-only. Debian's libcpp-httplib-dev splits it into a header
# and a shared library that links OpenSSL, zlib and brotli, which the static `loom` cannot
# carry; its source package holds the library's own single header, which needs none of them
# unless asked (CPPHTTPLIB_OPENSSL_SUPPORT and friends stay undefined). The version is the
# installed -dev package's (scripts/debian-source.sh), fetched when CMake configures, as curl's.
include_guard(GLOBAL)
find_package(Threads REQUIRED)

set(LOOM_HTTPLIB_DIR ${CMAKE_BINARY_DIR}/third_party/cpp-httplib)
execute_process(
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/../scripts/debian-source.sh cpp-httplib ${LOOM_HTTPLIB_DIR}
  RESULT_VARIABLE _loom_httplib_rc)
if(NOT _loom_httplib_rc EQUAL 0 OR NOT EXISTS ${LOOM_HTTPLIB_DIR}/source/httplib.h)
  message(FATAL_ERROR "HttpLib: scripts/debian-source.sh could not get Debian's cpp-httplib source "
                      "(see above)")
endif()

# Only the header's directory: the source tree's other files (its CMakeLists, examples) are not
# Loom's. A SYSTEM include, so that its warnings are not Loom's either.
set(_loom_httplib_include ${LOOM_HTTPLIB_DIR}/include)
file(COPY ${LOOM_HTTPLIB_DIR}/source/httplib.h DESTINATION ${_loom_httplib_include})
add_library(loom_httplib INTERFACE)
target_include_directories(loom_httplib SYSTEM INTERFACE ${_loom_httplib_include})
target_link_libraries(loom_httplib INTERFACE Threads::Threads)
# TCP_NODELAY: cpp-httplib writes an answer's headers and body apart, and without it Nagle's
# algorithm holds the body for the client's delayed ACK: 40 ms on every request. A backlog of
# 64 rather than 5, for a page that opens several requests at once. poll(2) rather than
# select(2), which fails on a descriptor numbered 1024 or more: an AM of a large job holds that
# many. On the interface, so that every user of the header compiles it alike.
target_compile_definitions(loom_httplib INTERFACE CPPHTTPLIB_TCP_NODELAY=true CPPHTTPLIB_LISTEN_BACKLOG=64
                                                  CPPHTTPLIB_USE_POLL)
