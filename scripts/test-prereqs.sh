#!/usr/bin/env bash
# Says, before `make test` runs, which tests this machine will skip and why:
# `go test ./...` prints a passing package's skips only with -v, so without
# this a missing runtime would go unnoticed. Prints nothing when all is there.
missing() { ! command -v "$1" >/dev/null 2>&1; }
say() { echo "make test: $*" >&2; }
if [ "${EUID:-0}" != 0 ]; then
  say "not root: the end-to-end tests (e2e/, real network namespaces) and the CRI test skip; run as root to run them"
fi
for tool in containerd containerd-shim-runc-v2 ctr runc; do
  if missing "$tool"; then
    say "no $tool: e2e TestContainerdCRI (the shipped conflist under containerd and runc) skips; apt-get install containerd runc"
    break
  fi
done
if missing iptables; then
  say "no iptables: the tests that chain portmap skip or fail; apt-get install iptables"
fi
if missing systemd-analyze; then
  say "no systemd-analyze: the shipped units are not verified; apt-get install systemd"
fi
exit 0
