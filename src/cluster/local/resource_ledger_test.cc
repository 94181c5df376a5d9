#include "cluster/local/resource_ledger.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "core/eventually.h"
#include "core/files.h"
#include "core/testing.h"

namespace loom::cluster::local {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

class ResourceLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("loom_ledger_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++)))
               .string();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::unique_ptr<ResourceLedger> Open() {
    auto ledger = ResourceLedger::Open(dir_);
    EXPECT_TRUE(ledger.ok()) << ledger.status().ToString();
    return ledger.ok() ? std::move(*ledger) : nullptr;
  }

  // A job of `home` on a host with `gpus` GPUs (indices 0..gpus-1) and 4 GiB per home.
  static LedgerRequest Job(const std::string& id, int gpus_wanted, int64_t memory_mib = 1024,
                           const std::string& home = "/home/a/.loom", std::vector<int> host_gpus = {0, 1}) {
    LedgerRequest r;
    r.job_id = id;
    r.home = home;
    r.memory_mib = memory_mib;
    r.vcores = 1;
    r.gpus = gpus_wanted;
    r.memory_capacity_mib = 4096;
    r.gpu_indices = std::move(host_gpus);
    return r;
  }

  static bool Readable(int fd, std::chrono::milliseconds timeout) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
  }

  std::string dir_;
  static inline int counter_ = 0;
};

TEST_F(ResourceLedgerTest, TwoJobsCompeteForOneGpuAndTheReleaseWakesTheWaiter) {
  auto a = Open(), b = Open();
  auto ra = a->Join(Job("job_a", 1, 1024, "/h", {0}));
  ASSERT_OK(ra);
  EXPECT_TRUE(ra->admitted);
  EXPECT_EQ(ra->gpus, std::vector<int>{0});
  auto rb = b->Join(Job("job_b", 1, 1024, "/h2", {0}));  // another home: GPUs are host-wide
  ASSERT_OK(rb);
  EXPECT_FALSE(rb->admitted);
  EXPECT_EQ(rb->position, 1);
  EXPECT_EQ(rb->reason, "waiting for 1 GPU held by job_a");
  b->DrainChanges();
  EXPECT_FALSE(Readable(b->change_fd(), 0ms));

  a->Release();
  EXPECT_FALSE(PathExists(dir_ + "/job_a." + std::to_string(::getpid()) + ".rec"));
  ASSERT_TRUE(Readable(b->change_fd(), 2000ms));  // woken, not polling
  b->DrainChanges();
  rb = b->Retry();
  ASSERT_OK(rb);
  EXPECT_TRUE(rb->admitted);
  EXPECT_EQ(rb->gpus, std::vector<int>{0});
}

TEST_F(ResourceLedgerTest, GrantsExactlyFreeIndicesOfTheJobsOwnInventory) {
  auto a = Open(), b = Open(), c = Open();
  auto ra = a->Join(Job("job_a", 2, 512, "/h", {5, 0, 2}));
  ASSERT_OK(ra);
  EXPECT_EQ(ra->gpus, (std::vector<int>{0, 2}));
  auto rb = b->Join(Job("job_b", 1, 512, "/h", {0, 2, 5}));
  ASSERT_OK(rb);
  EXPECT_EQ(rb->gpus, std::vector<int>{5});
  // Declares GPUs 0 and 1 only (loom.local.gpus=2): 1 is free, whatever others hold elsewhere.
  auto rc = c->Join(Job("job_c", 1, 512, "/other", {0, 1}));
  ASSERT_OK(rc);
  EXPECT_TRUE(rc->admitted);
  EXPECT_EQ(rc->gpus, std::vector<int>{1});
  auto d = Open();
  auto rd = d->Join(Job("job_d", 2, 512, "/other", {0, 1}));
  ASSERT_OK(rd);
  EXPECT_FALSE(rd->admitted);
  EXPECT_EQ(rd->reason, "waiting for 2 GPUs held by job_a, job_c");
}

TEST_F(ResourceLedgerTest, StaleRecordOfADeadHolderIsReclaimed) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    auto ledger = ResourceLedger::Open(dir_);
    bool ok = ledger.ok() && (*ledger)->Join(Job("job_dead", 1, 1024, "/h", {0})).value_or(Admission{}).admitted;
    (void)!::write(ready[1], ok ? "1" : "0", 1);
    ::pause();  // holds the GPU until killed
    ::_exit(0);
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(c, '1');

  auto b = Open();
  auto rb = b->Join(Job("job_b", 1, 1024, "/h", {0}));
  ASSERT_OK(rb);
  EXPECT_FALSE(rb->admitted);
  EXPECT_EQ(rb->reason, "waiting for 1 GPU held by job_dead");
  std::string record = dir_ + "/job_dead." + std::to_string(child) + ".rec";
  EXPECT_TRUE(PathExists(record));

  b->DrainChanges();
  ::kill(child, SIGKILL);  // no clean-up: the kernel drops its descriptors and its flock
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(Readable(b->change_fd(), 2000ms));  // its descriptor closed: the waiter looks
  // The close is reported a moment before the lock is gone: look until it is (the AM's
  // fallback timeout does the same).
  EXPECT_TRUE(loom::testing::Eventually([&] {
    b->DrainChanges();
    rb = b->Retry();
    return rb.ok() && rb->admitted;
  }));
  ASSERT_OK(rb);
  EXPECT_EQ(rb->gpus, std::vector<int>{0});
  EXPECT_FALSE(PathExists(record));  // removed by the one who found it stale
}

TEST_F(ResourceLedgerTest, FirstComeFirstServed) {
  auto a = Open(), b = Open(), c = Open();
  ASSERT_TRUE(a->Join(Job("job_a", 1, 512, "/h", {0})).value().admitted);
  auto rb = b->Join(Job("job_b", 1, 512, "/h", {0}));
  auto rc = c->Join(Job("job_c", 1, 512, "/h", {0}));
  ASSERT_OK(rb);
  ASSERT_OK(rc);
  EXPECT_EQ(rb->position, 1);
  EXPECT_EQ(rc->position, 2);

  a->Release();
  // The GPU is free, but job_b came first: job_c may not take it.
  rc = c->Retry();
  ASSERT_OK(rc);
  EXPECT_FALSE(rc->admitted);
  EXPECT_EQ(rc->position, 2);
  EXPECT_EQ(rc->reason, "behind job_b, which was queued first");
  rb = b->Retry();
  ASSERT_OK(rb);
  EXPECT_TRUE(rb->admitted);
  rc = c->Retry();
  ASSERT_OK(rc);
  EXPECT_FALSE(rc->admitted);
  EXPECT_EQ(rc->position, 1);  // moved up
  EXPECT_EQ(rc->reason, "waiting for 1 GPU held by job_b");
}

TEST_F(ResourceLedgerTest, ASmallJobDoesNotOvertakeABigOneOfTheSameHome) {
  auto a = Open(), b = Open(), c = Open();
  ASSERT_TRUE(a->Join(Job("job_a", 0, 3072)).value().admitted);
  auto rb = b->Join(Job("job_b", 0, 2048));
  ASSERT_OK(rb);
  EXPECT_FALSE(rb->admitted);
  EXPECT_EQ(rb->reason, "waiting for 2.0 GiB of memory (1.0 GiB free) held by job_a");
  auto rc = c->Join(Job("job_c", 0, 1024));  // would fit, but job_b is first
  ASSERT_OK(rc);
  EXPECT_FALSE(rc->admitted);
  EXPECT_EQ(rc->position, 2);
}

TEST_F(ResourceLedgerTest, MemoryIsSharedPerHomeAndGpusHostWide) {
  auto a = Open(), b = Open(), c = Open(), d = Open(), e = Open();
  ASSERT_TRUE(a->Join(Job("job_a", 0, 3072, "/home1", {0})).value().admitted);
  // Another home has its own 4 GiB.
  ASSERT_TRUE(b->Join(Job("job_b", 0, 3072, "/home2", {0})).value().admitted);
  auto rc = c->Join(Job("job_c", 0, 3072, "/home1", {0}));
  ASSERT_OK(rc);
  EXPECT_FALSE(rc->admitted);
  EXPECT_EQ(rc->reason, "waiting for 3.0 GiB of memory (1.0 GiB free) held by job_a");
  // job_c (queued, home1, no GPU) does not compete with a home2 job: it goes first.
  auto rd = d->Join(Job("job_d", 1, 512, "/home2", {0}));
  ASSERT_OK(rd);
  EXPECT_TRUE(rd->admitted);
  // A GPU job of home1 waits for the GPU of home2's job, and behind job_c for memory.
  auto re = e->Join(Job("job_e", 1, 512, "/home1", {0}));
  ASSERT_OK(re);
  EXPECT_FALSE(re->admitted);
  EXPECT_EQ(re->position, 2);
  EXPECT_EQ(re->reason, "waiting for 1 GPU held by job_d");
}

TEST_F(ResourceLedgerTest, AJobThatLeavesTheQueueMovesTheNextUp) {
  auto a = Open(), b = Open(), c = Open();
  ASSERT_TRUE(a->Join(Job("job_a", 1, 512, "/h", {0})).value().admitted);
  ASSERT_OK(b->Join(Job("job_b", 1, 512, "/h", {0})));
  ASSERT_EQ(c->Join(Job("job_c", 1, 512, "/h", {0})).value().position, 2);
  c->DrainChanges();
  b.reset();  // killed while queued
  ASSERT_TRUE(Readable(c->change_fd(), 2000ms));
  auto rc = c->Retry();
  ASSERT_OK(rc);
  EXPECT_FALSE(rc->admitted);
  EXPECT_EQ(rc->position, 1);
}

TEST_F(ResourceLedgerTest, ReleaseIsIdempotentAndJoinOnlyOnce) {
  auto a = Open();
  ASSERT_OK(a->Join(Job("job_a", 0)));
  std::string record = a->record_path();
  EXPECT_TRUE(PathExists(record));
  EXPECT_STATUS(a->Join(Job("job_a", 0)), kFailedPrecondition, HasSubstr("already joined"));
  a->Release();
  a->Release();
  EXPECT_FALSE(PathExists(record));
  EXPECT_EQ(a->record_path(), "");
}

TEST_F(ResourceLedgerTest, DefaultDirHonoursLoomLedgerDir) {
  ::setenv("LOOM_LEDGER_DIR", dir_.c_str(), 1);
  EXPECT_EQ(ResourceLedger::DefaultDir(), dir_);
  ::unsetenv("LOOM_LEDGER_DIR");
  std::string d = ResourceLedger::DefaultDir();
  EXPECT_TRUE(d == "/run/lock/loom" || d == "/tmp/loom-ledger") << d;
  // Host-wide: two $LOOM_HOMEs (two users) meet in the same ledger.
  const char* home = std::getenv("LOOM_HOME");
  std::string saved = home ? home : "";
  ::setenv("LOOM_HOME", "/home/a/.loom", 1);
  std::string for_a = ResourceLedger::DefaultDir();
  ::setenv("LOOM_HOME", "/home/b/.loom", 1);
  EXPECT_EQ(ResourceLedger::DefaultDir(), for_a);
  if (home) {
    ::setenv("LOOM_HOME", saved.c_str(), 1);
  } else {
    ::unsetenv("LOOM_HOME");
  }
}

}  // namespace
}  // namespace loom::cluster::local
