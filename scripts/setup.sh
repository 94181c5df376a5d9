#!/usr/bin/env bash
# Installs every package Loom needs to build, test and run its examples (Debian 12), then
# builds it. Safe to run again: it installs only what is missing and rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  # build
  build-essential cmake ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libcli11-dev nlohmann-json3-dev libpugixml-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev
  # the static `loom`: static archives of c-ares, zlib and OpenSSL (WebHDFS, DIGEST-MD5); libcurl
  # is built from Debian's source package (cmake/StaticCurl.cmake; dpkg-dev unpacks it)
  libc-ares-dev zlib1g-dev libssl-dev libcurl4-openssl-dev dpkg-dev
  # the old-userland tests: a Debian 11 root (scripts/bullseye-root.sh)
  debootstrap
  # Kerberos (SASL GSSAPI, libgssapi_krb5 loaded on demand) and the tests' private MIT KDC
  libkrb5-dev krb5-kdc krb5-admin-server krb5-user
  # cpp-httplib: its -dev package names the version whose source package cmake/HttpLib.cmake
  # unpacks (the header-only library of the dashboard, `loom portal` and the double's NodeManagers)
  libcpp-httplib-dev binutils
  # fuzzing (scripts/fuzz.sh, label slow): clang with libFuzzer, ASan and UBSan runtimes
  clang libclang-rt-14-dev
  # runtime: unzipping --python_venv archives, the PyTorch examples and tests
  unzip zip python3 python3-torch python3-sklearn procps
  # frameworks: Open MPI with mpi4py (framework=mpi), the Python API (python/) and its tests
  openmpi-bin libopenmpi-dev python3-mpi4py python3-cloudpickle python3-pytest python3-pip python3-venv
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The page (web/, built into `loom` with npm) and its browser tests: Node.js, Chromium, npm ci.
./scripts/setup-web.sh

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo} >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
echo "setup: built $BUILD_DIR/src/cli/loom"
