#!/usr/bin/env bash
# make demo: the whole loop on one machine with no AWS account. The built-in
# emulator plays EC2 and IMDS; as root, two pods also start through the plugin
# in network namespaces this script creates (and deletes on exit).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$PWD/bin/vpcctl"
PORT="${DEMO_PORT:-18940}"
TYPE="${DEMO_INSTANCE_TYPE:-t3.small}"
WORK="$(mktemp -d /tmp/vpc-cni-demo.XXXXXX)"
STATE="$WORK/state"
NODE="vpcdemo-node-$$"
PODS=("vpcdemo-a-$$" "vpcdemo-b-$$")
SIM_PID=""

IN_NODE=()                       # prefix that runs a command in the node netns (root only)
ROOT=false
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null 2>&1; then ROOT=true; fi

cleanup() {
  [ -n "$SIM_PID" ] && kill "$SIM_PID" 2>/dev/null && wait "$SIM_PID" 2>/dev/null || true
  if $ROOT; then
    for p in "${PODS[@]}"; do ip netns del "$p" 2>/dev/null || true; done
    ip netns del "$NODE" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
vpcctl() {
  echo "\$ vpcctl $*"
  "${IN_NODE[@]}" "$BIN" --state-dir "$STATE" "$@" && return
  local rc=$?
  $ROOT && return $rc
  # Without root the emulator's ENIs have no link here: their host setup fails and the pass says so (exit 1).
  echo "(exit $rc: without root the secondary ENIs have no link on this machine; run the demo as root for a whole node)"
}

if $ROOT; then
  ip netns add "$NODE"
  ip -n "$NODE" link set lo up
  # A Kubernetes node forwards between pods; a fresh namespace does not.
  ip netns exec "$NODE" sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'
  IN_NODE=(ip netns exec "$NODE")
  LINKS=(--link-netns "/var/run/netns/$NODE")
else
  LINKS=()
fi

say "Start the EC2/IMDS emulator for one $TYPE node (vpcctl sim serve)"
"${IN_NODE[@]}" "$BIN" sim serve --listen "127.0.0.1:$PORT" --instance-type "$TYPE" \
  --env-file "$WORK/sim.env" "${LINKS[@]}" >/dev/null 2>"$WORK/sim.log" &
SIM_PID=$!
for _ in $(seq 50); do [ -s "$WORK/sim.env" ] && break; sleep 0.1; done
[ -s "$WORK/sim.env" ] || { cat "$WORK/sim.log"; exit 1; }
cat "$WORK/sim.env"
# shellcheck disable=SC1091
. "$WORK/sim.env"

# The node's configuration file: the plugin, the timer and this shell all read
# it (on a node, /etc/vpc-cni/config; here VPC_CNI_CONFIG names the demo's).
export VPC_CNI_CONFIG="$WORK/config"
cat >"$VPC_CNI_CONFIG" <<'CONF'
# whole ENIs' worth of free addresses
WARM_ENI_TARGET=1
IP_COOLDOWN_PERIOD=30
CONF
say "The configuration file every process reads ($VPC_CNI_CONFIG)"
cat "$VPC_CNI_CONFIG"

say "First reconcile: learn the node, adopt its primary ENI, fill the pool (WARM_ENI_TARGET=1 from the file)"
vpcctl reconcile
say "Pool status: every knob with its source, and what the last pass used"
vpcctl pool status

say "A shell whose environment differs from the file is told so (dry run: nothing changes)"
echo '$ WARM_IP_TARGET=1 vpcctl reconcile --dry-run'
WARM_IP_TARGET=1 "${IN_NODE[@]}" "$BIN" --state-dir "$STATE" reconcile --dry-run >/dev/null

say "Keep exactly 5 free addresses: persisted, and reconciled at once"
vpcctl pool warm --ip-target 5 >/dev/null
vpcctl pool status

if $ROOT; then
  say "Two pods through the CNI plugin (as kubelet would exec /opt/cni/bin/vpc-cni)"
  CONF='{"cniVersion":"1.1.0","name":"vpc","type":"vpc-cni","stateDir":"'"$STATE"'","logFile":"'"$WORK"'/plugin.log","backgroundReconcile":false}'
  IPS=()
  for i in 0 1; do
    pod="${PODS[$i]}"
    ip netns add "$pod"
    out=$(echo "$CONF" | "${IN_NODE[@]}" env CNI_COMMAND=ADD CNI_CONTAINERID="demo-$i" \
      CNI_NETNS="/var/run/netns/$pod" CNI_IFNAME=eth0 CNI_PATH="$PWD/bin" \
      CNI_ARGS="K8S_POD_NAMESPACE=demo;K8S_POD_NAME=pod-$i" "$PWD/bin/vpc-cni")
    ip4=$(echo "$out" | sed -n 's/.*"address": "\([0-9.]*\)\/32".*/\1/p')
    echo "pod-$i: $ip4"
    IPS+=("$ip4")
  done
  say "pod-0 -> pod-1, and node -> pod-0 (vpcctl sim ping: ICMP without a ping binary)"
  ip netns exec "${PODS[0]}" "$BIN" sim ping -c 2 "${IPS[1]}"
  "${IN_NODE[@]}" "$BIN" sim ping -c 2 "${IPS[0]}"
  say "The pods took 2 of the 5 free addresses; a reconcile (timer, or the plugin itself) refills to 5"
  vpcctl reconcile
  say "Status with the assignments"
  vpcctl pool status -o wide
  say "Delete the pods (CNI DEL): their addresses cool down before reuse"
  for i in 0 1; do
    echo "$CONF" | "${IN_NODE[@]}" env CNI_COMMAND=DEL CNI_CONTAINERID="demo-$i" \
      CNI_NETNS="/var/run/netns/${PODS[$i]}" CNI_IFNAME=eth0 CNI_PATH="$PWD/bin" \
      CNI_ARGS="K8S_POD_NAMESPACE=demo;K8S_POD_NAME=pod-$i" "$PWD/bin/vpc-cni"
  done
  vpcctl pool status
else
  say "Skipping the pods: creating network namespaces needs root (run 'sudo make demo' to see them)"
fi

say "EC2 and IMDS calls the emulator served"
"${IN_NODE[@]}" "$BIN" sim calls --url "$AWS_ENDPOINT_URL_EC2"
say "Done; the emulator stops and everything this demo made is removed"
