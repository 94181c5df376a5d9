#pragma once
// The name of the user a client acts as, without glibc's NSS: `loom` is static, and an NSS
// module of the node's own glibc must never be loaded into it (README: "How it stays portable").

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace loom {

// One line of /etc/passwd, as much of it as Loom reads.
struct PasswdEntry {
  std::string name;
  std::string home;
};

// The entry of `uid` in `passwd` (the text of /etc/passwd: name:x:uid:gid:gecos:home:shell), or
// nullopt.
std::optional<PasswdEntry> FindPasswdEntry(std::string_view passwd, uid_t uid);
// Its login name alone.
std::optional<std::string> PasswdUserName(std::string_view passwd, uid_t uid);
// This process's uid in /etc/passwd, or nullopt (a directory user that NSS alone would know).
std::optional<PasswdEntry> CurrentPasswdEntry();

// $USER, else $LOGNAME (YARN and login shells set them), else this uid's name in /etc/passwd,
// else "uid N" (a directory user, LDAP or SSSD, that NSS alone would know).
std::string CurrentUserName();

}  // namespace loom
