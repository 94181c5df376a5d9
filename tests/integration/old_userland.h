#pragma once
// OldUserland: runs the real `loom` inside another distribution's root (Debian 11, made by
// scripts/bullseye-root.sh), as on a node with an older OS: the self-contained `loom` has to
// start there with nothing of this machine's libraries.
//
// The cached root is shared and never written: each OldUserland mounts its own copy-on-write
// view of it (an overlay whose upper layer is a private tmpfs), with /proc, the host's /dev,
// the host's /etc/hosts and resolv.conf (a node resolves its own name and localhost), the test's
// directories bound at the same paths (so paths are identical in and out: LOOM_HOME, the job's
// sources, the YARN double's NodeManager dirs) and the loom under test at /opt/loom/bin/loom.
//
// Every mount lives in a private mount namespace that the test process enters when the first
// OldUserland is made. Why the test process and not `unshare --mount` around each command: the
// YARN test double runs inside the test process and starts containers from its own threads, so
// those must see the very same mounts; one namespace serves both the local job (a `chroot` per
// command) and the double's containers (a `chroot` per container). And why a namespace at all:
// the host never sees these mounts, and the kernel drops them when the last process in the
// namespace is gone, however the test ended (a failed assertion, a crash, ctest's timeout
// SIGKILL), so no crashed test ever leaves the shared root, or anything else, mounted. The
// destructor still detaches them at once.
//
// unshare(CLONE_NEWNS) moves only the calling thread, and threads inherit it from their creator:
// make the OldUserland before anything that starts threads (YarnDoubleCluster, FakeHdfs).

#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/files.h"
#include "core/status.h"
#include "core/subprocess.h"
#include "mini_loom.h"

namespace loom::testing {

class OldUserland {
 public:
  // Where `loom` is inside the root, as a node's installation would put it.
  static constexpr const char* kLoom = "/opt/loom/bin/loom";
  // What scripts/bullseye-root.sh writes last into a complete root.
  static constexpr const char* kStamp = ".loom-root-complete";

  // The cached root: LOOM_TEST_OLD_ROOT from the environment, else the build dir's (CMake).
  static std::string CachedRoot() {
    const char* env = std::getenv("LOOM_TEST_OLD_ROOT");
    if (env != nullptr && *env != '\0') return env;
#ifdef LOOM_TEST_OLD_ROOT
    return LOOM_TEST_OLD_ROOT;
#else
    return "";
#endif
  }

  // Mounts the root's view (see above) and copies the loom under test in. ok() says whether it
  // worked; status() says why not.
  explicit OldUserland(std::string cached_root = CachedRoot()) : cached_(std::move(cached_root)) {
    status_ = Mount();
  }
  ~OldUserland() { Unmount(); }
  OldUserland(const OldUserland&) = delete;
  OldUserland& operator=(const OldUserland&) = delete;

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // The mounted root: what `chroot` takes (the YARN double's Options::container_chroot).
  std::string root() const { return (scratch_ / "root").string(); }

  // Makes host directory `dir` (absolute, existing) appear at the same path inside the root.
  Status Bind(const std::string& dir) {
    if (!status_.ok()) return status_;
    std::error_code ec;
    std::filesystem::path inside = root() + std::filesystem::absolute(dir).string();
    std::filesystem::create_directories(inside, ec);
    if (ec) return Status::Internal("mkdir " + inside.string() + ": " + ec.message());
    return Sys(::mount(dir.c_str(), inside.c_str(), nullptr, MS_BIND | MS_REC, nullptr), "bind " + dir);
  }

  // The argv that runs `argv` (paths as seen inside) in the root with working dir `cwd`: the
  // host's chroot(8), then the root's own /bin/sh for the cd (chroot leaves the cwd at /).
  std::vector<std::string> Command(const std::vector<std::string>& argv, const std::string& cwd = "/") const {
    std::vector<std::string> out = {"/usr/sbin/chroot", root(), "/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", cwd};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }

  // `env` for a process inside: without what would lead the old userland to the host's
  // libraries or Python modules, and with the usual PATH of a Debian node.
  static std::map<std::string, std::string> InsideEnv(std::map<std::string, std::string> env) {
    for (auto it = env.begin(); it != env.end();) {
      bool host_only = it->first.starts_with("LD_") || it->first.starts_with("PYTHON");
      it = host_only ? env.erase(it) : std::next(it);
    }
    env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    return env;
  }

  // `loom args...` inside the root, as MiniLoom::Run does on the host: the MiniLoom's
  // environment (LOOM_HOME, which must be bound) and its home as the working dir.
  RunResult RunLoom(MiniLoom& loom, const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& extra_env = {}) {
    std::vector<std::string> argv = {kLoom};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string name = "inside" + std::to_string(runs_++);
    SpawnOptions o;
    o.argv = Command(argv, loom.home());
    o.env = loom.Env();
    for (const auto& [k, v] : extra_env) o.env[k] = v;
    o.env = InsideEnv(o.env);
    o.stdout_path = loom.home() + "/" + name + ".out";
    o.stderr_path = loom.home() + "/" + name + ".err";
    auto child = Subprocess::Spawn(o);
    EXPECT_TRUE(child.ok()) << child.status().ToString();
    if (!child.ok()) return {};
    return loom.Collect(*child, name);
  }

 private:
  static Status Sys(int rc, const std::string& what) {
    if (rc == 0) return Status::Ok();
    return Status::Internal(what + ": " + std::strerror(errno));
  }

  // Whether this process runs a single thread (unshare would move only the calling one).
  static bool SingleThreaded() {
    std::string status = ReadFile("/proc/self/status").value_or("");
    return LineAfter(status, "Threads:\t") == "1";
  }

  Status Mount() {
    if (cached_.empty() || !std::filesystem::exists(cached_ + "/" + kStamp)) {
      return Status::FailedPrecondition("no complete old root at '" + cached_ +
                                        "': run scripts/bullseye-root.sh DIR (ctest runs it as the test "
                                        "old_userland_root) or set LOOM_TEST_OLD_ROOT");
    }
    if (!std::filesystem::exists(MiniLoom::Binary())) {
      return Status::FailedPrecondition("no loom binary at " + MiniLoom::Binary());
    }
    if (!SingleThreaded()) {
      return Status::FailedPrecondition(
          "the test process already runs threads: make the OldUserland before starting them, or they stay "
          "outside its mount namespace");
    }
    // Private: nothing mounted from here on propagates back to the host's namespace.
    LOOM_RETURN_IF_ERROR(Sys(::unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)"));
    LOOM_RETURN_IF_ERROR(Sys(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), "make / private"));

    std::string tmpl = (std::filesystem::temp_directory_path() / "loom_oldroot_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return Sys(-1, "mkdtemp " + tmpl);
    scratch_ = tmpl;
    // The overlay's writable layer in RAM: the task's writes (/tmp, the copied loom, mount
    // points) vanish with it and never reach the shared root.
    LOOM_RETURN_IF_ERROR(Sys(::mount("tmpfs", scratch_.c_str(), "tmpfs", 0, "mode=0755,size=2g"), "tmpfs"));
    mounted_ = true;
    for (const char* d : {"upper", "work", "root"}) std::filesystem::create_directory(scratch_ / d);
    std::string layers = "lowerdir=" + cached_ + ",upperdir=" + (scratch_ / "upper").string() +
                         ",workdir=" + (scratch_ / "work").string();
    LOOM_RETURN_IF_ERROR(Sys(::mount("overlay", root().c_str(), "overlay", 0, layers.c_str()),
                             "overlay of " + cached_ + " (the kernel needs overlayfs)"));
    std::string proc = root() + "/proc", dev = root() + "/dev";
    std::filesystem::create_directories(proc);
    std::filesystem::create_directories(dev);
    LOOM_RETURN_IF_ERROR(Sys(::mount("proc", proc.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr), "proc"));
    LOOM_RETURN_IF_ERROR(Sys(::mount("/dev", dev.c_str(), nullptr, MS_BIND | MS_REC, nullptr), "bind /dev"));
    // Copies, not binds: a root's own file may be a symlink that would resolve on the host.
    for (const char* f : {"/etc/hosts", "/etc/resolv.conf"}) {
      auto content = ReadFile(f);
      if (!content.ok()) continue;
      std::error_code ec;
      std::filesystem::remove(root() + f, ec);
      LOOM_RETURN_IF_ERROR(WriteFileAtomic(root() + f, *content, 0644));
    }
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(root() + kLoom).parent_path(), ec);
    std::filesystem::copy_file(MiniLoom::Binary(), root() + kLoom, std::filesystem::copy_options::overwrite_existing,
                               ec);
    if (ec) return Status::Internal("copying " + MiniLoom::Binary() + " into the root: " + ec.message());
    std::filesystem::permissions(root() + kLoom, std::filesystem::perms(0755), ec);
    return Status::Ok();
  }

  // Detaches the tmpfs and everything below it (overlay, proc, dev, binds) in one go; processes
  // that still run inside keep their view until they exit.
  void Unmount() {
    if (mounted_) ::umount2(scratch_.c_str(), MNT_DETACH);
    mounted_ = false;
    if (!scratch_.empty()) ::rmdir(scratch_.c_str());
  }

  std::string cached_;
  std::filesystem::path scratch_;
  bool mounted_ = false;
  Status status_;
  int runs_ = 0;
};

}  // namespace loom::testing
