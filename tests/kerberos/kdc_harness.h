#pragma once
// KdcHarness: a real MIT Kerberos KDC (krb5kdc) for tests, in a throwaway realm LOOM.TEST on
// 127.0.0.1 with a free TCP port, all its files in a private temporary directory:
//   kdc.conf / krb5.conf (KRB5_KDC_PROFILE / KRB5_CONFIG), the database (kdb5_util create -s),
//   principals made with random keys (kadmin.local addprinc -randkey) and their keytabs
//   (ktadd), and a ticket cache (KRB5CCNAME) that Kinit() fills.
// Env() is what a child (the `loom` binary) needs; ExportToThisProcess() sets the same in this
// process for in-process GSSAPI. The destructor stops the KDC (its own process group, through
// Subprocess) and removes the directory. Needs krb5-kdc, krb5-admin-server and krb5-user
// (scripts/setup.sh); Start() says which tool is missing.
//
// Not thread-safe; one harness per test.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/eventually.h"
#include "core/inet_address.h"
#include "core/status.h"
#include "core/subprocess.h"

namespace loom::testing {

class KdcHarness {
 public:
  static constexpr char kRealm[] = "LOOM.TEST";

  KdcHarness() = default;
  ~KdcHarness() {
    kdc_ = Subprocess();  // kills and reaps the KDC's group
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  KdcHarness(const KdcHarness&) = delete;
  KdcHarness& operator=(const KdcHarness&) = delete;

  // Creates the realm with `principals` (e.g. "alice", "rm/localhost"), a keytab for each
  // (Keytab(p)), and starts the KDC. `max_life` caps every ticket's lifetime ("10h", "3s").
  Status Start(const std::vector<std::string>& principals, const std::string& max_life = "10h") {
    char tmpl[] = "/tmp/loom-kdc-XXXXXX";
    if (!::mkdtemp(tmpl)) return Status::FromErrno("mkdtemp", errno);
    dir_ = tmpl;
    port_ = FreePort();
    if (port_ <= 0) return Status::Unavailable("no free port for the KDC");
    std::string p = std::to_string(port_);
    Write(dir_ + "/kdc.conf",
          "[realms]\n " + std::string(kRealm) + " = {\n"
          "  database_name = " + dir_ + "/principal\n  key_stash_file = " + dir_ + "/stash\n"
          "  acl_file = " + dir_ + "/kadm5.acl\n  max_life = " + max_life + "\n  max_renewable_life = 0\n"
          "  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n"
          "  kdc_listen = 127.0.0.1:" + p + "\n  kdc_tcp_listen = 127.0.0.1:" + p + "\n }\n"
          "[logging]\n kdc = FILE:" + dir_ + "/kdc.log\n");
    Write(dir_ + "/krb5.conf",
          "[libdefaults]\n default_realm = " + std::string(kRealm) + "\n dns_lookup_kdc = false\n"
          " dns_lookup_realm = false\n rdns = false\n udp_preference_limit = 1\n"
          " default_ccache_name = FILE:" + dir_ + "/ccache\n"
          "[realms]\n " + std::string(kRealm) + " = {\n  kdc = 127.0.0.1:" + p + "\n }\n");
    Write(dir_ + "/kadm5.acl", "");
    env_ = {{"KRB5_CONFIG", dir_ + "/krb5.conf"},
            {"KRB5_KDC_PROFILE", dir_ + "/kdc.conf"},
            {"KRB5CCNAME", "FILE:" + dir_ + "/ccache"}};
    LOOM_RETURN_IF_ERROR(Run({"/usr/sbin/kdb5_util", "-r", kRealm, "create", "-s", "-P", "loom-test-master"}));
    for (const std::string& principal : principals) {
      LOOM_RETURN_IF_ERROR(Run({"/usr/sbin/kadmin.local", "-r", kRealm, "-q", "addprinc -randkey " + principal}));
      LOOM_RETURN_IF_ERROR(Run({"/usr/sbin/kadmin.local", "-r", kRealm, "-q",
                                "ktadd -k " + Keytab(principal) + " " + principal}));
    }
    SpawnOptions o;
    o.argv = {"/usr/sbin/krb5kdc", "-n", "-r", kRealm};
    o.env = Env();
    o.env["PATH"] = "/usr/sbin:/usr/bin:/bin";
    o.stdout_path = dir_ + "/krb5kdc.out";
    o.stderr_path = dir_ + "/krb5kdc.out";
    LOOM_ASSIGN_OR_RETURN(kdc_, Subprocess::Spawn(o));
    // Ready once it accepts on its TCP port.
    if (loom::testing::Eventually([&] { return Accepts(port_); }, std::chrono::seconds(10), std::chrono::milliseconds(20))) {
      return Status::Ok();
    }
    return Status::Unavailable("krb5kdc did not listen on 127.0.0.1:" + p + " within 10 s (see " + dir_ + "/krb5kdc.out)");
  }

  // Start(principals), then this process set up for in-process GSSAPI (ExportToThisProcess) with
  // `user`'s ticket in the cache (Kinit).
  Status StartLoggedIn(const std::vector<std::string>& principals, const std::string& user = "root") {
    LOOM_RETURN_IF_ERROR(Start(principals));
    ExportToThisProcess();
    return Kinit(user);
  }

  // kinit -kt <its keytab> principal (into KRB5CCNAME); `lifetime` e.g. "2s" for a ticket that
  // expires soon.
  Status Kinit(const std::string& principal, const std::string& lifetime = "") {
    std::vector<std::string> argv = {"/usr/bin/kinit"};
    if (!lifetime.empty()) argv.insert(argv.end(), {"-l", lifetime});
    argv.insert(argv.end(), {"-kt", Keytab(principal), Principal(principal)});
    return Run(argv);
  }
  // True while the cache holds a TGT that has not expired (klist -s).
  bool TicketValid() { return Run({"/usr/bin/klist", "-s"}).ok(); }

  std::string Keytab(const std::string& principal) const {
    std::string name = principal;
    for (char& c : name) {
      if (c == '/' || c == '@') c = '_';
    }
    return dir_ + "/" + name + ".keytab";
  }
  static std::string Principal(const std::string& name) { return name + "@" + kRealm; }
  const std::string& dir() const { return dir_; }
  int port() const { return port_; }
  // KRB5_CONFIG, KRB5_KDC_PROFILE and KRB5CCNAME for children.
  std::map<std::string, std::string> Env() const { return env_; }
  void ExportToThisProcess() const {
    for (const auto& [k, v] : env_) ::setenv(k.c_str(), v.c_str(), 1);
  }

 private:
  static void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

  static int FreePort() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = Ipv4Address(INADDR_LOOPBACK, 0);
    socklen_t len = sizeof a;
    int port = -1;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port = ntohs(a.sin_port);
    }
    ::close(fd);
    return port;
  }

  static bool Accepts(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = Ipv4Address(INADDR_LOOPBACK, port);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
  }

  // Runs a Kerberos tool with the harness's environment; its output goes to tools.log.
  Status Run(const std::vector<std::string>& argv) {
    SpawnOptions o;
    o.argv = argv;
    o.env = Env();
    o.env["PATH"] = "/usr/sbin:/usr/bin:/bin";
    o.stdout_path = dir_ + "/tools.log";
    o.stderr_path = dir_ + "/tools.log";
    if (::access(argv[0].c_str(), X_OK) != 0) {
      return Status::FailedPrecondition(argv[0] + " is missing: apt-get install krb5-kdc krb5-admin-server krb5-user");
    }
    LOOM_ASSIGN_OR_RETURN(Subprocess p, Subprocess::Spawn(o));
    LOOM_ASSIGN_OR_RETURN(ExitInfo e, p.Wait());
    if (!e.success()) return Status::Internal(argv[0] + " " + (argv.size() > 1 ? argv.back() : "") + ": " + e.Describe() + " (see " + dir_ + "/tools.log)");
    return Status::Ok();
  }

  std::string dir_;
  int port_ = -1;
  std::map<std::string, std::string> env_;
  Subprocess kdc_;
};

}  // namespace loom::testing
