#!/usr/bin/env bash
# scripts/prereqs.sh TARGET: what the make target needs of this machine,
# checked before it starts. Each rule is one line below, naming the targets
# that stop without the thing (hard) and those that only skip a part (soft).
# A hard miss stops the target at once (exit 1) with the command that
# installs every missing package; a soft one is said and the target goes on:
# `go test ./...` prints a passing package's skips only with -v, so without
# this a missing runtime would go unnoticed. Prints nothing when all is there.
set -u
target="${1:-test}"
missing_pkgs=()
stop=false

say() { echo "make $target: $*" >&2; }

# has LIST: the space-separated LIST names this target.
has() { [[ " $1 " == *" $target "* ]]; }

# need HARD SOFT COMMAND PACKAGE WHY: COMMAND (on PATH) from PACKAGE.
need() {
  local hard="$1" soft="$2" cmd="$3" pkg="$4" why="$5"
  has "$hard" || has "$soft" || return 0
  command -v "$cmd" >/dev/null 2>&1 && return 0
  [[ " ${missing_pkgs[*]-} " == *" $pkg "* ]] && return 0 # said once per package
  missing_pkgs+=("$pkg")
  if has "$hard"; then
    say "no $cmd: $why"
    stop=true
  else
    say "no $cmd: $why; apt-get install $pkg"
  fi
}

cluster="cluster test-cluster"
if [ "$(id -u)" != 0 ]; then
  if has "$cluster conformance chaos"; then
    say "not root: it makes network and mount namespaces; run it as root"
    stop=true
  elif has "test"; then
    say "not root: the end-to-end tests (e2e/, real network namespaces) and the CRI test skip; run as root to run them"
  fi
fi
# CLUSTER_POLICY=1 adds the network policy agent, whose eBPF objects are compiled here.
policy=""
[ "${CLUSTER_POLICY:-}" = 1 ] && policy="$cluster"
#    hard                          soft   command                 package          why
need "$cluster"                    "test" runc                    runc             "containerd runs pods' containers with it (the cluster's nodes; e2e TestPrivilegedContainerdCRI skips)"
need ""                            "test" containerd              containerd       "e2e TestPrivilegedContainerdCRI (the shipped conflist under containerd and runc) skips"
need ""                            "test" containerd-shim-runc-v2 containerd       "e2e TestPrivilegedContainerdCRI skips"
need ""                            "test" ctr                     containerd       "e2e TestPrivilegedContainerdCRI skips"
need ""                            "test" iptables                iptables         "the tests that chain portmap skip or fail"
need ""                            "test" systemd-analyze         systemd          "the shipped units are not verified"
need "$cluster"                    ""     nft                     nftables         "kube-proxy (nftables mode) and the tier's checks run the node's nft"
need "$cluster"                    "demo" ip                      iproute2         "the tier's checks run ip in the nodes (make demo skips its pods)"
need "$cluster conformance"        ""     nsenter                 util-linux       "every command in a node runs through nsenter"
need "$cluster"                    ""     unshare                 util-linux       "the nodes' namespaces are held by unshare"
need "conformance"                 ""     busybox                 busybox-static   "agnhost's image carries a static busybox as its tools"
need "conformance"                 ""     dash                    dash             "agnhost's image carries dash as its shell"
need "conformance"                 ""     nc.openbsd              netcat-openbsd   "the checks run OpenBSD's nc in agnhost pods"
need "conformance"                 ""     curl                    curl             "the checks run curl in agnhost pods"
need "conformance"                 ""     dig                     bind9-dnsutils   "the DNS specs run dig in agnhost pods"
need "conformance"                 ""     ldd                     libc-bin         "ldd names the libraries nc and curl load"
need "$policy"                     ""     clang                   clang            "CLUSTER_POLICY=1 compiles the agent's eBPF objects (with libbpf-dev's headers)"
need "$policy"                     ""     bpftool                 bpftool          "CLUSTER_POLICY=1 writes the agent's vmlinux.h from the kernel's BTF"
if $stop; then
  [ ${#missing_pkgs[@]} -gt 0 ] && say "install: apt-get install -y ${missing_pkgs[*]}"
  exit 1
fi
exit 0
