#!/bin/sh
# up / down / status against moto_server behind the fault-injecting proxy, with the Service
# Quotas fake: a 16-node pool, resume, chaos (kill -9 at random moments), a throttling storm,
# capacity failover, quota refusal, and bad input of every kind.
set -eu
. "${SKYPOOL_SOURCE_DIR:?}/tests/servers/harness.sh"
build=${SKYPOOL_BUILD_DIR:?}
bin=${SKYPOOL_BIN:?}

aws_test_env
PY_AWS=$(sed -n '1s/^#! *//p' "$(sp_find_pyenv_tool moto_server)")
start_moto
start_quotas
start_proxy "$MOTO_URL"
for r in us-east-1 us-west-2; do
  for code in L-417A185B L-C4BD4855 L-7212CCBC; do quotas_set "$r" "$code" 100000; done
done
export AWS_ENDPOINT_URL_EC2=$PROXY_URL AWS_ENDPOINT_URL_SERVICE_QUOTAS=$QUOTAS_URL
export AWS_MAX_ATTEMPTS=6 SKYPOOL_AWS_BACKOFF_MS=5
export SKYPOOL_PLUGIN_PATH=$build/providers SKYPOOL_CATALOG_DIR=$SKYPOOL_SOURCE_DIR/catalog
export SKYPOOL_STATE_DIR=$SP_SERVERS_DIR/state XDG_CACHE_HOME=$SP_SERVERS_DIR/cache
work=$SP_SERVERS_DIR/work
mkdir -p "$work"

# pool NAME NODES SPOT REGIONS: writes $work/NAME.yaml
pool() {
  cat >"$work/$1.yaml" <<Y
name: $1
nodes: $2
resources:
  accelerators: H100:8
spot: $3
providers: [aws]
regions: [$4]
max_hourly_usd: 100000
Y
}

# alive_count NAME: instances of the pool that are pending or running in moto.
# created_twice NAME: node indices that more than one instance was ever made for.
moto_check() {
  "$PY_AWS" - "$MOTO_URL" "$@" <<'PY'
import sys, collections, boto3
url, what, name = sys.argv[1:4]
counts, alive = collections.Counter(), 0
for region in ("us-east-1", "us-west-2"):
    ec2 = boto3.client("ec2", endpoint_url=url, region_name=region)
    for page in ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "tag:skypool:pool", "Values": [name]}]):
        for res in page["Reservations"]:
            for i in res["Instances"]:
                tags = {t["Key"]: t["Value"] for t in i.get("Tags", [])}
                counts[tags.get("skypool:node")] += 1
                alive += i["State"]["Name"] in ("pending", "running")
print(alive if what == "alive" else sum(1 for n, c in counts.items() if c > 1))
PY
}

# --- 16 nodes up, up again, down -------------------------------------------------------------
pool big 16 on-demand "us-east-1, us-west-2"
if out=$("$bin" up "$work/big.yaml" --yes --no-bootstrap --parallel 16 2>&1) &&
   printf '%s\n' "$out" | grep -q 'pool big: 16 of 16 nodes running'; then
  ok "up: 16 nodes"
else
  bad "up 16" "$out"
fi
if out=$("$bin" up "$work/big.yaml" --yes --no-bootstrap 2>&1) &&
   printf '%s\n' "$out" | grep -q 'pool big is complete: 16 nodes running.*nothing to do'; then
  ok "up again: nothing to do"
else
  bad "up twice" "$out"
fi
if out=$("$bin" status big --refresh 2>&1) && printf '%s\n' "$out" | grep -q '16 of 16 nodes up'; then
  ok "status --refresh agrees with the cloud"
else
  bad "status --refresh" "$out"
fi
if out=$("$bin" down big --yes 2>&1) && [ "$(moto_check alive big)" = 0 ] &&
   ! "$bin" ls | grep -q '^big '; then
  ok "down: 16 terminated, nothing left, pool forgotten"
else
  bad "down 16" "$out"
fi

# --- Chaos: kill -9 at random moments, then resume and tear down ------------------------------
trials=${SKYPOOL_CHAOS_TRIALS:-20}
chaos_bad=""
t=0
while [ "$t" -lt "$trials" ]; do
  pool "chaos$t" 4 spot-then-on-demand "us-east-1"
  "$bin" up "$work/chaos$t.yaml" --yes --no-bootstrap --parallel 4 >"$work/chaos$t.log" 2>&1 &
  pid=$!
  sleep "$("$SP_PYTHON" -c "import random; random.seed($t); print(round(random.uniform(0.05, 0.9), 3))")"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  sleep 1   # what the dead process sent has reached the server
  if ! "$bin" up "$work/chaos$t.yaml" --yes --no-bootstrap >>"$work/chaos$t.log" 2>&1; then
    chaos_bad="$chaos_bad resume$t"
  fi
  "$bin" down "chaos$t" --yes >>"$work/chaos$t.log" 2>&1 || chaos_bad="$chaos_bad down$t"
  [ "$(moto_check alive "chaos$t")" = 0 ] || chaos_bad="$chaos_bad leaked$t"
  [ "$(moto_check twice "chaos$t")" = 0 ] || chaos_bad="$chaos_bad twice$t"
  t=$((t + 1))
done
if [ -z "$chaos_bad" ]; then
  ok "chaos: $trials kill -9 trials, resumed and torn down; nothing leaked, nothing made twice"
else
  bad "chaos:$chaos_bad" "$(cat "$work"/chaos*.log | tail -n 40)"
fi

# --- Throttling storm: 30% of EC2 requests refused --------------------------------------------
proxy_reset
proxy_rules '[{"name": "storm", "probability": 0.3, "seed": 5, "service": "ec2", "effect": "error", "code": "RequestLimitExceeded"}]'
pool storm 8 on-demand "us-east-1"
if out=$("$bin" up "$work/storm.yaml" --yes --no-bootstrap 2>&1) &&
   printf '%s\n' "$out" | grep -q 'pool storm: 8 of 8 nodes running'; then
  stats=$(sp_http GET "$PROXY_URL/__fault__/log" | "$SP_PYTHON" -c '
import json, sys
log = [e for e in json.load(sys.stdin) if e["service"] == "ec2"]
throttled = sum(1 for e in log if e["rule"] == "storm")
# Bounded: no request is retried more than AWS_MAX_ATTEMPTS times, so at most 5 of every 6
# tries may be refused; and a storm of 30% must show as one.
ok = 0.2 < throttled / len(log) < 0.4
print("%d of %d requests throttled%s" % (throttled, len(log), "" if ok else " (not a 30%% storm)"))')
  case "$stats" in
    *"not a 30"*) bad "throttling storm: $stats" ;;
    *) ok "throttling storm (30%): 8 of 8 up; $stats" ;;
  esac
else
  bad "throttling storm" "$out"
fi
proxy_reset
"$bin" down storm --yes >/dev/null 2>&1 || bad "down storm"

# --- Capacity: us-east-1 has none; the nodes go to us-west-2 ---------------------------------
proxy_rules '[{"action": "RunInstances", "region": "us-east-1", "effect": "error", "code": "InsufficientInstanceCapacity"}]'
pool cap 3 on-demand "us-east-1, us-west-2"
if out=$("$bin" up "$work/cap.yaml" --yes --no-bootstrap 2>&1) &&
   printf '%s\n' "$out" | grep -q 'pool cap: 3 of 3 nodes running' &&
   printf '%s\n' "$out" | grep -q 'failover: ec2 RunInstances in us-east-1: InsufficientInstanceCapacity' &&
   [ "$("$bin" status cap --json | "$SP_PYTHON" -c 'import json,sys; print(sorted({n["region"] for n in json.load(sys.stdin)["nodes"]}))')" = "['us-west-2']" ]; then
  ok "capacity failover: us-east-1 refused, all 3 nodes in us-west-2"
else
  bad "capacity failover" "$out"
fi
proxy_reset
"$bin" down cap --yes >/dev/null 2>&1 || bad "down cap"

# --- Quota: none in us-east-1; skipped with the quota named ----------------------------------
quotas_set us-east-1 L-417A185B 0
pool quota 2 on-demand "us-east-1, us-west-2"
if out=$("$bin" up "$work/quota.yaml" --yes --no-bootstrap 2>&1) &&
   printf '%s\n' "$out" | grep -q 'skipping aws us-east-1 (on-demand): quota L-417A185B allows 0 vCPU' &&
   [ "$("$bin" status quota --json | "$SP_PYTHON" -c 'import json,sys; print(sorted({n["region"] for n in json.load(sys.stdin)["nodes"]}))')" = "['us-west-2']" ]; then
  ok "quota refusal: us-east-1 skipped, quota named, nodes in us-west-2"
else
  bad "quota refusal" "$out"
fi
"$bin" down quota --yes >/dev/null 2>&1 || bad "down quota"
quotas_set us-east-1 L-417A185B 100000

# --- Progress: JSON events for scripts, live lines on a terminal -------------------------------
pool events 2 on-demand "us-east-1"
if out=$("$bin" up "$work/events.yaml" --yes --no-bootstrap --json 2>&1) &&
   [ "$(printf '%s\n' "$out" | "$SP_PYTHON" -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin if l.strip().startswith("{")]
launched = sorted(e["node"] for e in lines if e.get("event") == "launched")
done = [e for e in lines if e.get("event") == "done"]
print(launched == [0, 1] and len(done) == 1 and done[0]["running"] == 2)')" = True ]; then
  ok "up --json: one event per line, launched 0 and 1, done with 2 running"
else
  bad "up --json" "$out"
fi
"$bin" down events --yes >/dev/null 2>&1 || bad "down events"
pool tty 2 on-demand "us-east-1"
out=$(script -qec "'$bin' up '$work/tty.yaml' --yes --no-bootstrap" /dev/null 2>&1) || true
if printf '%s' "$out" | grep -q "$(printf '\033')\[2Knode 0 " &&
   printf '%s' "$out" | grep -q 'launched.*aws.*us-east-1.*p5.48xlarge' &&
   printf '%s' "$out" | grep -q 'pool tty: 2 of 2 nodes running'; then
  ok "up on a terminal: one live line per node, redrawn in place"
else
  bad "up on a terminal" "$out"
fi
"$bin" down tty --yes >/dev/null 2>&1 || bad "down tty"

# --- Ctrl-C: launching stops, what exists is kept and tracked ---------------------------------
proxy_reset
proxy_rules '[{"action": "RunInstances", "effect": "delay", "delay_ms": 700}]'
pool intr 6 on-demand "us-east-1"
"$bin" up "$work/intr.yaml" --yes --no-bootstrap --parallel 1 >"$work/intr.log" 2>&1 &
pid=$!
sleep 2
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
proxy_reset
tracked=$("$bin" status intr --json | "$SP_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["running"])')
if grep -q 'kept what was launched' "$work/intr.log" && [ "$rc" -eq 7 ] &&
   [ "$tracked" -ge 1 ] && [ "$tracked" -lt 6 ] && [ "$(moto_check alive intr)" = "$tracked" ]; then
  ok "Ctrl-C: stopped at $tracked of 6, all of them tracked"
else
  bad "Ctrl-C (rc $rc, tracked $tracked, in moto $(moto_check alive intr))" "$(cat "$work/intr.log")"
fi
"$bin" down intr --yes >/dev/null 2>&1 || bad "down intr"

# --- Bad input ------------------------------------------------------------------------------
printf 'name: x\nnodez: 2\nresources: {accelerators: H100:8}\n' >"$work/bad.yaml"
rc=0; out=$("$bin" up "$work/bad.yaml" --yes 2>&1) || rc=$?
if [ "$rc" -eq 3 ] && printf '%s\n' "$out" | grep -q "bad.yaml:2:1: unknown key 'nodez'; did you mean nodes?"; then
  ok "bad pool file: exit 3 with file:line:column"
else
  bad "bad pool file (rc $rc)" "$out"
fi
rc=0; out=$("$bin" down nosuchpool --yes 2>&1) || rc=$?
if [ "$rc" -eq 2 ] && printf '%s\n' "$out" | grep -q "no pool named 'nosuchpool'"; then
  ok "unknown pool: exit 2"
else
  bad "unknown pool (rc $rc)" "$out"
fi
rc=0; out=$("$bin" up "$work/cap.yaml" 2>&1 </dev/null) || rc=$?
if [ "$rc" -eq 2 ] && printf '%s\n' "$out" | grep -q 'pass --yes'; then
  ok "no terminal and no --yes: nothing launched"
else
  bad "unconfirmed up (rc $rc)" "$out"
fi
mkdir -p "$work/damaged"
head -c 4096 /dev/urandom >"$work/damaged/state.db"
sum_before=$(cksum <"$work/damaged/state.db")
rc=0; out=$(SKYPOOL_STATE_DIR=$work/damaged "$bin" ls 2>&1) || rc=$?
if [ "$rc" -eq 1 ] && printf '%s\n' "$out" | grep -q 'is damaged' &&
   [ "$(cksum <"$work/damaged/state.db")" = "$sum_before" ]; then
  ok "damaged state database: clear error, file untouched"
else
  bad "damaged database (rc $rc)" "$out"
fi
"$SP_PYTHON" -c '
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(4)
' "$SKYPOOL_STATE_DIR/state.db" >"$work/lock.out" &
lock_pid=$!
while ! grep -q locked "$work/lock.out" 2>/dev/null; do sleep 0.1; done
rc=0; out=$(SKYPOOL_STATE_BUSY_MS=300 "$bin" up "$work/cap.yaml" --yes --no-bootstrap 2>&1) || rc=$?
wait "$lock_pid" || true
if [ "$rc" -ne 0 ] && printf '%s\n' "$out" | grep -q 'locked by another skypool'; then
  ok "locked state database: clear error"
else
  bad "locked database (rc $rc)" "$out"
fi
[ "$(moto_check alive cap)" = 0 ] || bad "the locked run launched something"

sp_summary
