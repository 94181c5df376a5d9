#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and runs each for a bounded
# time (FUZZ_SECONDS, default 60). Exits non-zero on the first crash, leak or UB report; the
# reproducer is left in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang++ >/dev/null || { echo "fuzz: clang++ is missing (apt-get install clang)"; exit 2; }
cmake -S . -B build-fuzz -G Ninja -DLOOM_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
TARGETS=(config_fuzzer events_fuzzer control_fuzzer hadoop_wire_fuzzer credentials_fuzzer yarn_logs_fuzzer web_api_fuzzer)
cmake --build build-fuzz -j"$(nproc)" --target "${TARGETS[@]}"
seconds=${FUZZ_SECONDS:-60}
for t in "${TARGETS[@]}"; do
  corpus=build-fuzz/corpus/$t
  mkdir -p "$corpus"
  [ -d "fuzz/seeds/$t" ] && cp -n fuzz/seeds/$t/* "$corpus"/ 2>/dev/null || true
  echo "fuzz: $t for ${seconds}s"
  log=build-fuzz/$t.log
  if ! (cd build-fuzz && ./fuzz/$t -max_total_time="$seconds" -print_final_stats=1 "corpus/$t" >"$t.log" 2>&1); then
    tail -n 60 "$log"
    echo "fuzz: $t FAILED (reproducer under build-fuzz/)"
    exit 1
  fi
  grep -E "^#[0-9]+.*DONE|stat::(number_of_executed_units|average_exec_per_sec|new_units_added)" "$log"
done
