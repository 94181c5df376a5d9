# loom_curl_static: a minimal static libcurl (HTTP/HTTPS over OpenSSL, zlib, c-ares) built from
# Debian's curl source package, for a fully static `loom`. Debian's libcurl.a cannot be used:
# it needs gssapi, ldap, rtmp, ssh2, psl, idn2 and nghttp2, several without a static archive.
# c-ares does its own /etc/hosts and resolv.conf handling, so curl never calls glibc's NSS
# (getaddrinfo), which a static binary cannot use safely on another glibc.
#
# The source is fetched when CMake configures (execute_process): that step may need sudo and
# the network, which belong in the foreground, and the headers must exist before any target
# uses them; on a rerun it is a stamp check. curl itself is configured and built by
# ExternalProject at build time, in parallel with Loom's own sources, and its stamps keep a
# rerun of the build from configuring or compiling it again.
include_guard(GLOBAL)
include(ExternalProject)
find_package(Threads REQUIRED)

set(LOOM_CURL_DIR ${CMAKE_BINARY_DIR}/third_party/curl)
set(_loom_curl_src ${LOOM_CURL_DIR}/source)
set(_loom_curl_bin ${LOOM_CURL_DIR}/build)
set(_loom_curl_lib ${_loom_curl_bin}/lib/.libs/libcurl.a)

execute_process(
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/../scripts/debian-source.sh curl ${LOOM_CURL_DIR}
  RESULT_VARIABLE _loom_curl_rc)
if(NOT _loom_curl_rc EQUAL 0)
  message(FATAL_ERROR "StaticCurl: scripts/debian-source.sh could not get Debian's curl source "
                      "(see above)")
endif()

# The static archives curl is linked with, by full path so that no -l picks a .so.
set(_loom_curl_hint_dirs)
foreach(_lib IN ITEMS ${OPENSSL_SSL_LIBRARY} ${OPENSSL_CRYPTO_LIBRARY})
  get_filename_component(_dir ${_lib} DIRECTORY)
  list(APPEND _loom_curl_hint_dirs ${_dir})
endforeach()
foreach(_spec IN ITEMS "CARES;cares;libc-ares-dev" "SSL;ssl;libssl-dev"
                       "CRYPTO;crypto;libssl-dev" "ZLIB;z;zlib1g-dev")
  list(GET _spec 0 _var)
  list(GET _spec 1 _name)
  list(GET _spec 2 _deb)
  find_library(LOOM_CURL_${_var}_A NAMES lib${_name}.a HINTS ${_loom_curl_hint_dirs})
  if(NOT LOOM_CURL_${_var}_A)
    message(FATAL_ERROR "StaticCurl: lib${_name}.a not found: install ${_deb}")
  endif()
endforeach()

execute_process(COMMAND nproc OUTPUT_VARIABLE _loom_curl_jobs OUTPUT_STRIP_TRAILING_WHITESPACE)

# The release's configure and Makefile.in are used as shipped (Debian's rules run buildconf):
# Debian's patches to configure.ac and the Makefile.am files concern only gssapi, ldap, zsh and
# the library's name in the gnutls/nss flavours, and AM_MAINTAINER_MODE keeps make from
# regenerating them, so no autotools are needed.
#
# Only HTTP(S) over OpenSSL with zlib and c-ares; every optional dependency that Debian ships
# no static archive of is off, as are the protocols and the docs Loom does not use.
set(LOOM_CURL_CONFIGURE_ARGS
  --disable-shared --enable-static --with-pic --disable-dependency-tracking --disable-silent-rules
  --with-openssl --with-zlib --enable-ares
  # Not the host's openssl.cnf: the static OpenSSL may be older or newer than the host's.
  --disable-openssl-auto-load-config
  --without-gssapi --without-librtmp --without-libssh2 --without-libssh --without-wolfssh
  --without-libpsl --without-libidn2 --without-nghttp2 --without-ngtcp2 --without-nghttp3
  --without-quiche --without-msh3 --without-hyper --without-brotli --without-zstd
  --without-libgsasl --without-zsh-functions-dir --without-fish-functions-dir
  --disable-ldap --disable-ldaps --disable-ftp --disable-file --disable-dict --disable-telnet
  --disable-tftp --disable-pop3 --disable-imap --disable-smtp --disable-gopher --disable-mqtt
  --disable-rtsp --disable-smb --disable-ntlm-wb --disable-manual --disable-libcurl-option
  # .netrc lookup is the only caller of getpwuid_r (NSS) in curl.
  --disable-netrc)
set(_loom_curl_env CFLAGS=-O2)
if(CMAKE_C_COMPILER)
  list(APPEND _loom_curl_env CC=${CMAKE_C_COMPILER})
endif()

ExternalProject_Add(loom_curl_build
  PREFIX ${LOOM_CURL_DIR}/ep
  SOURCE_DIR ${_loom_curl_src}
  BINARY_DIR ${_loom_curl_bin}
  DOWNLOAD_COMMAND ""
  UPDATE_COMMAND ""
  # Without dependency tracking make would keep objects built under the previous
  # configuration: a reconfigure starts lib/ afresh.
  CONFIGURE_COMMAND ${CMAKE_COMMAND} -E rm -rf lib
            COMMAND ${_loom_curl_src}/configure ${LOOM_CURL_CONFIGURE_ARGS} ${_loom_curl_env}
  BUILD_COMMAND make -C lib -j${_loom_curl_jobs}
  INSTALL_COMMAND ""
  BUILD_BYPRODUCTS ${_loom_curl_lib}
  LOG_CONFIGURE ON
  LOG_BUILD ON
  LOG_OUTPUT_ON_FAILURE ON)
# A new source (another Debian version unpacked) configures and builds curl again.
ExternalProject_Add_StepDependencies(loom_curl_build configure
  ${LOOM_CURL_DIR}/.debian-source.stamp)

add_library(loom_curl_static INTERFACE)
add_dependencies(loom_curl_static loom_curl_build)
target_include_directories(loom_curl_static INTERFACE ${_loom_curl_src}/include)
target_compile_definitions(loom_curl_static INTERFACE CURL_STATICLIB)
target_link_libraries(loom_curl_static INTERFACE
  ${_loom_curl_lib} ${LOOM_CURL_CARES_A} ${LOOM_CURL_SSL_A} ${LOOM_CURL_CRYPTO_A}
  ${LOOM_CURL_ZLIB_A} Threads::Threads)
