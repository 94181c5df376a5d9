#!/usr/bin/env bash
# Installs what the page (web/) and its browser tests (tests/browser/) need, where missing:
# Node.js with npm (Debian's, only when there is no `node` at all: one from elsewhere, with its
# own npm, is kept), Debian's chromium (the tests drive it with playwright-core; no browser is
# ever downloaded), and each npm project's packages (`npm ci`, when node_modules is missing or
# older than package-lock.json). Safe to run again. scripts/setup.sh calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
missing=()
command -v node >/dev/null || missing+=(nodejs npm)
for p in chromium fonts-dejavu-core; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup-web: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
command -v npm >/dev/null || { echo "setup-web: $(command -v node) has no npm beside it; install npm for it" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
((major >= 18)) || { echo "setup-web: Node.js $(node --version) is too old (18 or later)" >&2; exit 1; }

for dir in web tests/browser; do
  if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    echo "setup-web: npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done
echo "setup-web: node $(node --version), npm $(npm --version), $(/usr/bin/chromium --version 2>/dev/null || echo 'no chromium')"
