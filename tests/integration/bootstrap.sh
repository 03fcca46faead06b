#!/bin/sh
# The node check end to end. `skypool check-node` on this machine (no GPU: the path CI takes),
# then with a fake NVIDIA driver; then `skypool up` against the DigitalOcean fake, whose
# droplets get loopback addresses, each served by a real sshd (Debian's openssh-server) that
# plays the node with a fake driver and a fake nvidia-smi. The bootstrap copies
# skypool-nodecheck over SSH, runs it, and the verdicts land in the state; the pool's on_fail
# policy decides what a failing node gets.
set -eu
. "${SKYPOOL_SOURCE_DIR:?}/tests/servers/harness.sh"
. "$SKYPOOL_SOURCE_DIR/tests/servers/do_servers.sh"
. "$SKYPOOL_SOURCE_DIR/tests/servers/sshd.sh"
build=${SKYPOOL_BUILD_DIR:?}
bin=${SKYPOOL_BIN:?}
fakes=$build/tests/fake-gpu/lib
smi=$SKYPOOL_SOURCE_DIR/tests/fixtures/gpu
work=$SP_SERVERS_DIR/work
mkdir -p "$work"
export SKYPOOL_PLUGIN_PATH=$build/providers SKYPOOL_CATALOG_DIR=$SKYPOOL_SOURCE_DIR/catalog
export SKYPOOL_STATE_DIR=$SP_SERVERS_DIR/state XDG_CACHE_HOME=$SP_SERVERS_DIR/cache
export DIGITALOCEAN_TOKEN=test-token DIGITALOCEAN_MAX_ATTEMPTS=3
# The fake driver's "device memory" is host memory: test 16 MiB per GPU, not 256.
export SKYPOOL_CHECK_MEM_TEST_MIB=16
unset LD_LIBRARY_PATH FAKE_GPU_MODEL FAKE_GPU_COUNT FAKE_GPU_STATE FAKE_GPU_FAULT || true

# json_get FILE EXPR: a Python expression over the JSON document d.
json_get() {
  "$SP_PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"
}

# --- check-node here: no driver, as on CI --------------------------------------------------------
rc=0
"$bin" check-node --expect H100-SXM:8 >"$work/nd.out" 2>&1 || rc=$?
if [ "$rc" -eq 8 ] && grep -q '^no_driver: ' "$work/nd.out"; then
  ok "check-node without a driver: verdict no_driver, exit 8"
else
  bad "check-node without a driver (exit $rc)" "$(cat "$work/nd.out")"
fi
rc=0
"$bin" check-node --json >"$work/nd.json" 2>"$work/nd.err" || rc=$?
if [ "$rc" -eq 8 ] && [ "$(json_get "$work/nd.json" 'd["status"], d["driver"]["loaded"], len(d["devices"])')" = "('no_driver', False, 0)" ]; then
  ok "check-node --json without a driver: the whole report, valid JSON"
else
  bad "check-node --json without a driver (exit $rc)" "$(cat "$work/nd.json" "$work/nd.err")"
fi

# --- check-node here with a fake driver -------------------------------------------------------
h100="NVIDIA H100 80GB HBM3"
rc=0
env LD_LIBRARY_PATH="$fakes" FAKE_GPU_MODEL="$h100" FAKE_GPU_COUNT=8 FAKE_GPU_DRIVER=550.54.15 \
  FAKE_GPU_CUDA=12040 "$bin" check-node --expect H100-SXM:8 --min-cuda 12.4 \
  >"$work/fk.out" 2>&1 || rc=$?
if [ "$rc" -eq 0 ] && grep -q "^ok: 8 x $h100, driver 550.54.15 (CUDA 12.4)" "$work/fk.out"; then
  ok "check-node with 8 (fake) H100s against H100-SXM:8: ok"
else
  bad "check-node with a fake driver (exit $rc)" "$(cat "$work/fk.out")"
fi
rc=0
env LD_LIBRARY_PATH="$fakes" FAKE_GPU_MODEL="$h100" FAKE_GPU_COUNT=8 FAKE_GPU_CUDA=12040 \
  "$bin" check-node --expect H100-SXM:8 --min-cuda 12.8 >"$work/old.out" 2>&1 || rc=$?
if [ "$rc" -eq 8 ] && grep -q '^driver_too_old: ' "$work/old.out"; then
  ok "check-node: a driver for CUDA 12.4 where 12.8 is needed is driver_too_old"
else
  bad "check-node --min-cuda 12.8 (exit $rc)" "$(cat "$work/old.out")"
fi
rc=0
"$bin" check-node --expect H100-SXM:8 --mig 5g.80gb >"$work/mig.out" 2>&1 || rc=$?
if [ "$rc" -eq 3 ] && grep -q 'mig 5g.80gb' "$work/mig.out"; then
  ok "check-node --mig with a profile the H100 lacks: exit 3, named"
else
  bad "check-node --mig 5g.80gb (exit $rc)" "$(cat "$work/mig.out")"
fi

# --- nodes over SSH ----------------------------------------------------------------------------
# node_env NAME COUNT [MODEL]: the session environment of a "node" with COUNT fake GPUs.
node_env() {
  mkdir -p "$work/$1"
  printf '%s\n' "LD_LIBRARY_PATH=$fakes" "PATH=$smi:/usr/local/bin:/usr/bin:/bin" \
    "FAKE_GPU_MODEL=${3:-$h100}" "FAKE_GPU_COUNT=$2" "FAKE_GPU_DRIVER=550.54.15" \
    "FAKE_GPU_CUDA=12040" "FAKE_GPU_STATE=$work/$1/gpu-state" "XDG_CACHE_HOME=$work/$1/cache"
}
# Node "good": 8 H100s. Node "half": only 4. Each is a real sshd on its own port.
# shellcheck disable=SC2046
IFS='
'
start_sshd $(node_env good 8)
good_port=$SSHD_PORT good_cfg=$SSHD_CLIENT_CONFIG key=$SSHD_KEY user=$SSHD_USER
# shellcheck disable=SC2046
SSHD_LISTEN=127.0.0.2 start_sshd $(node_env half 4)
half_port=$SSHD_PORT
unset IFS
closed_port=$(sp_free_port)
# One ssh config for all: droplets at 127.0.0.1 reach "good", at 127.0.0.2 "half", and at
# 127.0.0.3 nothing listens.
cfg=$work/ssh_config
{
  echo "Host 127.0.0.1"
  echo "  Port $good_port"
  echo "Host 127.0.0.2"
  echo "  Port $half_port"
  echo "Host 127.0.0.3"
  echo "  Port $closed_port"
  echo "Host *"
  echo "  User $user"
  sed -n 's/^  \(IdentityFile\|IdentitiesOnly\|UserKnownHostsFile\|StrictHostKeyChecking\)/  \1/p' "$good_cfg"
} >"$cfg"
export SKYPOOL_SSH_CONFIG=$cfg

start_do_fake --public-ip 127.0.0.1
export DIGITALOCEAN_API_URL=$DOFAKE_URL

# dopool NAME ON_FAIL [EXTRA CHECK YAML]: a one-node H100:8 DigitalOcean pool.
dopool() {
  cat >"$work/$1.yaml" <<Y
name: $1
resources:
  accelerators: H100:8
providers: [digitalocean]
regions: [nyc2, tor1, atl1]
max_hourly_usd: 100
ssh:
  user: $user
  key: $key
check:
  min_cuda: "12.4"
  on_fail: $2
${3:-}
Y
}
# ips LIST: the addresses the fake hands out next, in order.
ips() {
  dofake_admin POST config "{\"public_ip\": \"$1\"}" >/dev/null
}
alive_droplets() {
  dofake_admin GET state | "$SP_PYTHON" -c 'import json,sys; print(len(json.load(sys.stdin)["droplets"]))'
}
up() {  # POOL [ARGS]: runs up; rc in $rc, output in $work/POOL.up
  rc=0
  up_pool=$1
  shift
  "$bin" up "$work/$up_pool.yaml" --yes --wait 20 "$@" >"$work/$up_pool.up" 2>&1 || rc=$?
}
down() {
  "$bin" down "$1" --yes >"$work/$1.down" 2>&1 || bad "down $1" "$(cat "$work/$1.down")"
}

# A good node: checked over SSH, verdict ok in the state, its workers (GPU UUIDs) listed.
dopool good fail
ips 127.0.0.1
up good
"$bin" status good --json >"$work/good.status" 2>&1 || true
if [ "$rc" -eq 0 ] && grep -q '^node check: 1 passed, 0 failed, 0 unreachable' "$work/good.up" &&
   [ "$(json_get "$work/good.status" 'd["nodes"][0]["check"], len(d["nodes"][0]["workers"])')" = "('ok', 8)" ]; then
  ok "up: the node check ran over SSH and passed; status has the verdict and 8 workers"
else
  bad "up with a good node (exit $rc)" "$(cat "$work/good.up" "$work/good.status")"
fi
"$bin" status good >"$work/good.text" 2>&1
grep -q "^node 0: ok: 8 x $h100" "$work/good.text" &&
  ok "status prints each node's check summary" ||
  bad "status text" "$(cat "$work/good.text")"
[ -x "$work/good/cache/skypool/skypool-nodecheck" ] &&
  ok "the check program was copied to the node's cache" ||
  bad "no check program on the node" "$(ls -la "$work/good/cache/skypool" 2>&1)"
down good

# A node with half its GPUs, on_fail: fail: exit 8, the verdict says why, the node is kept.
dopool half fail
ips 127.0.0.2
up half
"$bin" status half >"$work/half.status" 2>&1 || true
if [ "$rc" -eq 8 ] && grep -q 'hardware_mismatch' "$work/half.status" &&
   grep -q 'failing nodes: the pool fails' "$work/half.up"; then
  ok "on_fail: fail: a node with 4 of 8 GPUs fails the pool (exit 8), verdict hardware_mismatch"
else
  bad "on_fail: fail (exit $rc)" "$(cat "$work/half.up" "$work/half.status")"
fi
[ "$(alive_droplets)" -eq 1 ] && ok "on_fail: fail keeps the node for inspection" ||
  bad "on_fail: fail should keep the node"
down half
[ "$(alive_droplets)" -eq 0 ] && ok "down after a failed check leaves no droplet" ||
  bad "droplets left after down: $(alive_droplets)"

# on_fail: replace: the bad node (127.0.0.2) is terminated and a new one (127.0.0.1) passes.
dopool repl replace
ips 127.0.0.2,127.0.0.1
up repl
"$bin" status repl --json >"$work/repl.status" 2>&1 || true
if [ "$rc" -eq 0 ] && grep -q 'node 0: replacing' "$work/repl.up" &&
   grep -q '1 node replaced' "$work/repl.up" &&
   [ "$(json_get "$work/repl.status" 'd["nodes"][0]["check"], d["nodes"][0]["region"]')" = "('ok', 'tor1')" ]; then
  ok "on_fail: replace: the failing node is replaced, in the next region, and the new one passes"
else
  bad "on_fail: replace (exit $rc)" "$(cat "$work/repl.up" "$work/repl.status")"
fi
[ "$(alive_droplets)" -eq 1 ] && ok "the replaced droplet is gone" ||
  bad "droplets after replace: $(alive_droplets)"
down repl

# on_fail: warn: kept, exit 0, the verdict recorded.
dopool warn warn
ips 127.0.0.2
up warn
if [ "$rc" -eq 0 ] && grep -q 'kept (on_fail: warn)' "$work/warn.up"; then
  ok "on_fail: warn: the failing node is kept, exit 0, with a warning"
else
  bad "on_fail: warn (exit $rc)" "$(cat "$work/warn.up")"
fi
down warn

# MIG: the bootstrap enables MIG and makes the layout with nvidia-smi; the check verifies it
# and lists each partition as a worker (MIG UUIDs, what CUDA_VISIBLE_DEVICES takes).
dopool mig fail '  mig: 3g.40gb'
ips 127.0.0.1
rm -f "$work/good/gpu-state"
up mig
"$bin" status mig --json >"$work/mig.status" 2>&1 || true
if [ "$rc" -eq 0 ] &&
   [ "$(json_get "$work/mig.status" 'len(d["nodes"][0]["workers"]), all(w["uuid"].startswith("MIG-") and w["profile"] == "3g.40gb" for w in d["nodes"][0]["workers"])')" = "(16, True)" ]; then
  ok "MIG: 3g.40gb set up on 8 GPUs over SSH, verified, 16 MIG workers recorded"
else
  bad "MIG bootstrap (exit $rc)" "$(cat "$work/mig.up" "$work/mig.status")"
fi
down mig
rm -f "$work/good/gpu-state"

# No usable check program for the node: nvidia-smi's names and counts, verdict partial.
dopool part fail
ips 127.0.0.1
mkdir -p "$work/no-nodecheck"
SKYPOOL_NODECHECK_DIR=$work/no-nodecheck up part
"$bin" status part >"$work/part.status" 2>&1 || true
if [ "$rc" -eq 0 ] && grep -q 'node 0: partial: 8 x NVIDIA H100 80GB HBM3, driver 550.54.15' "$work/part.status"; then
  ok "no check program for the node's architecture: nvidia-smi fallback, verdict partial"
else
  bad "nvidia-smi fallback (exit $rc)" "$(cat "$work/part.up" "$work/part.status")"
fi
down part

# A node nobody answers for: unreachable, up exits 7 (partial), the node is kept.
dopool gone fail
ips 127.0.0.3
up gone --wait 5
if [ "$rc" -eq 7 ] && grep -q '0 passed, 0 failed, 1 unreachable' "$work/gone.up"; then
  ok "a node that never answers on SSH: unreachable, exit 7"
else
  bad "unreachable node (exit $rc)" "$(cat "$work/gone.up")"
fi
down gone
[ "$(alive_droplets)" -eq 0 ] && ok "nothing left in the fake" ||
  bad "droplets left at the end: $(alive_droplets)"

sp_summary
