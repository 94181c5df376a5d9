// stamp: the trivial "training process" of the launch benchmark. Writes the wall-clock time
// (ns since the epoch) at which it started running into <dir>/<name>, then exits.
// Usage: stamp DIR [NAME]   (NAME defaults to $LOOM_TASK_ID, else the pid)

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  long long ns = static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
  if (argc < 2) return 2;
  const char* task = std::getenv("LOOM_TASK_ID");
  std::string name = argc > 2 ? argv[2] : task ? task : std::to_string(getpid());
  std::string path = std::string(argv[1]) + "/" + name;
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return 1;
  std::fprintf(f, "%lld\n", ns);
  std::fclose(f);
  return 0;
}
