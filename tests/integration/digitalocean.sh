#!/bin/sh
# The DigitalOcean provider end to end against servers on loopback: Prism serving DigitalOcean's
# OpenAPI spec (every request the plugin makes must be accepted, and the spec's examples must
# parse), and the stateful fake do_fake.py (lifecycle, paging, 429 with retry-after, 5xx, capacity
# and droplet-limit refusals, a lost create). Runs the provider's integration program
# (itest_digitalocean) in both modes, then the CLI against the fake: check, offers --live, quota,
# plan, up with failover to the next region, status, down.
set -eu
. "${SKYPOOL_SOURCE_DIR:?}/tests/servers/harness.sh"
. "$SKYPOOL_SOURCE_DIR/tests/servers/do_servers.sh"
build=${SKYPOOL_BUILD_DIR:?}
bin=${SKYPOOL_BIN:?}

work=$SP_SERVERS_DIR/work
mkdir -p "$work/home" "$work/config"
export SKYPOOL_PLUGIN_PATH=$build/providers SKYPOOL_CATALOG_DIR=$SKYPOOL_SOURCE_DIR/catalog
export DIGITALOCEAN_TOKEN=dop_v1_itest0123456789abcdef0123456789abcdef0123456789abcdef01234
export DIGITALOCEAN_MAX_ATTEMPTS=3 SKYPOOL_DO_BACKOFF_MS=5 SKYPOOL_DO_MAX_WAIT_S=5
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
unset DIGITALOCEAN_ACCESS_TOKEN DIGITALOCEAN_CONTEXT DIGITALOCEAN_API_URL

# A second fake allows 20 requests in 2 s: the rate-limit slow-down is tested against it.
start_do_fake --ratelimit 20 --ratelimit-window 2
DOFAKE_RL_URL=$DOFAKE_URL
start_do_fake --droplet-limit 25 --active-after 1 --public-ip 127.0.0.1
export DOFAKE_RL_URL
start_prism
# Only now: npm (in start_prism) keeps its cache under the real home.
export SKYPOOL_STATE_DIR=$work/state XDG_CACHE_HOME=$work/cache XDG_CONFIG_HOME=$work/config
export HOME=$work/home

# 1. Every call of the plugin against the contract (Prism logs each violation it finds).
seen=$(wc -l <"$PRISM_LOG")
itest=$build/tests/itest_digitalocean
if out=$(DIGITALOCEAN_API_URL=$PRISM_URL DO_ITEST_MODE=prism "$itest" 2>&1); then
  ok "itest_digitalocean (Prism): $(printf '%s\n' "$out" | grep -c '^\[       OK') cases"
else
  bad "itest_digitalocean (Prism)" "$out"
fi
violations=$(tail -n "+$((seen + 1))" "$PRISM_LOG" | grep 'Violation' || true)
requests=$(tail -n "+$((seen + 1))" "$PRISM_LOG" | grep -c 'Request received' || true)
if [ -z "$violations" ] && [ "$requests" -ge 15 ]; then
  ok "Prism: all $requests requests the plugin made keep to DigitalOcean's OpenAPI spec"
else
  bad "Prism: requests against the spec ($requests seen)" "$violations"
fi

# 2. The lifecycle against the stateful fake.
if out=$(DIGITALOCEAN_API_URL=$DOFAKE_URL DO_ITEST_MODE=fake "$itest" 2>&1); then
  ok "itest_digitalocean (fake): $(printf '%s\n' "$out" | grep -c '^\[       OK') cases"
else
  bad "itest_digitalocean (fake)" "$out"
fi

# 3. The CLI against the fake.
export DIGITALOCEAN_API_URL=$DOFAKE_URL
dofake_admin POST reset >/dev/null

if out=$("$bin" check 2>&1; true) &&
   printf '%s\n' "$out" | grep -q '^digitalocean  *ok  *environment (DIGITALOCEAN_TOKEN)'; then
  ok "skypool check: the token from the environment, accepted"
else
  bad "skypool check" "$out"
fi
out=$(DIGITALOCEAN_TOKEN=bad-token "$bin" check 2>&1 || true)
if printf '%s\n' "$out" | grep -q '^digitalocean  *missing or refused .*HTTP 401 unauthorized' &&
   ! printf '%s\n' "$out" | grep -q 'bad-token'; then
  ok "skypool check: a refused token is named by its source, never printed"
else
  bad "skypool check with a bad token" "$out"
fi

if out=$("$bin" offers H100:8 --live --provider digitalocean 2>&1) &&
   printf '%s\n' "$out" | grep -q 'live: digitalocean: [0-9]* offers from 3 regions' &&
   printf '%s\n' "$out" | grep -q 'gpu-h100x8-640gb' &&
   "$bin" catalog | grep -q '^digitalocean .*live: digitalocean API for'; then
  ok "offers H100:8 --live: refreshed from /v2/sizes into the cached catalog"
else
  bad "offers --live" "$out"
fi

cat >"$work/do-e2e.yaml" <<Y
name: do-e2e
nodes: 2
resources:
  accelerators: H100:8
providers: [digitalocean]
regions: [nyc2, tor1]
max_hourly_usd: 100
ssh:
  key: $SKYPOOL_SOURCE_DIR/tests/fixtures/digitalocean/id_ed25519
tags:
  team: ml research
Y

rc=0
out=$("$bin" quota "$work/do-e2e.yaml" 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q 'digitalocean .*droplets' &&
   printf '%s\n' "$out" | grep -q ' ok'; then
  ok "quota POOL: the droplet limit (25) has room for 2"
else
  bad "quota (rc $rc)" "$out"
fi

pick='s/^first choice: 2 x gpu-h100x8-640gb (on-demand) in digitalocean \([a-z0-9]*\) .*/\1/p'
if out=$("$bin" plan "$work/do-e2e.yaml" 2>&1) &&
   first=$(printf '%s\n' "$out" | sed -n "$pick") && [ -n "$first" ]; then
  ok "plan POOL: first choice gpu-h100x8-640gb in $first"
else
  bad "plan" "$out"
  first=nyc2
fi
case $first in nyc2) second=tor1 ;; *) second=nyc2 ;; esac

# The first choice has no capacity; the first create is rate limited (retry-after 1) and a
# listing of GPU droplets fails once with a 503: up still gets both nodes, in the other region.
dofake_admin POST capacity "{\"$first\": {\"gpu-h100x8-640gb\": 0}}" >/dev/null
dofake_admin POST faults '[
  {"method": "POST", "path": "/v2/droplets", "status": 429, "times": 1,
   "headers": {"retry-after": "1"}},
  {"method": "GET", "path": "/v2/droplets", "query": {"type": "gpus"}, "status": 503,
   "times": 1}]' >/dev/null
rc=0
out=$("$bin" up "$work/do-e2e.yaml" --yes --no-bootstrap 2>&1) || rc=$?
regions=$("$bin" status do-e2e --json 2>/dev/null |
  json_eval 'sorted({n["region"] for n in d["nodes"]})' || true)
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q 'pool do-e2e: 2 of 2 nodes running' &&
   printf '%s\n' "$out" | grep -q "Size is not available in this region" &&
   [ "$regions" = "[\"$second\"]" ]; then
  ok "up: $first had no capacity, both nodes in $second (through a 429 and a 503)"
else
  bad "up with failover (rc $rc, regions $regions)" "$out"
fi
state=$(dofake_admin GET state)
fake=$(printf '%s' "$state" | json_eval '[sorted(x["name"] for x in d["droplets"]),
  sorted({x["region"]["slug"] for x in d["droplets"]}),
  all({"skypool:pool:do-e2e", "team:ml_research"} <= set(x["tags"]) for x in d["droplets"]),
  sum(1 for e in d["log"]
      if (e["method"], e["path"], e["status"]) == ("POST", "/v2/droplets", 429)),
  len(d["keys"])]')
if [ "$fake" = "[[\"do-e2e-0\", \"do-e2e-1\"], [\"$second\"], true, 1, 1]" ]; then
  ok "the fake has do-e2e-0 and do-e2e-1 in $second, tagged, one SSH key imported"
else
  bad "droplets in the fake" "$fake"
fi
dofake_admin DELETE faults >/dev/null

if out=$("$bin" status do-e2e --refresh 2>&1) &&
   printf '%s\n' "$out" | grep -q 'pool do-e2e (.*): .*2 of 2 nodes up'; then
  ok "status --refresh: both droplets found by tag, up"
else
  bad "status" "$out"
fi

if out=$("$bin" down do-e2e --yes 2>&1) &&
   [ "$(dofake_admin GET state | json_eval 'len(d["droplets"])')" = 0 ] &&
   ! "$bin" ls 2>/dev/null | grep -q '^do-e2e '; then
  ok "down: every droplet deleted, nothing left in the fake"
else
  bad "down" "$out
$(dofake_admin GET state | json_eval '[x["name"] for x in d["droplets"]]')"
fi

# Batching: 7 nodes with 2 workers: each worker takes its share and DigitalOcean gets one create
# per share (4 names, then 3), not 7 calls.
sed -e 's/^name: do-e2e/name: do-batch/' -e 's/^nodes: .*/nodes: 7/' -e 's/^max_hourly_usd: .*/max_hourly_usd: 1000/' "$work/do-e2e.yaml" \
  >"$work/do-batch.yaml"
dofake_admin POST reset >/dev/null
rc=0
out=$("$bin" up "$work/do-batch.yaml" --yes --no-bootstrap --parallel 2 2>&1) || rc=$?
creates=$(dofake_admin GET state | json_eval 'sorted(len(e["body"].get("names", [e["body"].get("name")]))
  for e in d["log"] if (e["method"], e["path"]) == ("POST", "/v2/droplets"))')
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q 'pool do-batch: 7 of 7 nodes running' &&
   [ "$creates" = "[3, 4]" ]; then
  ok "up batches: 7 droplets in 2 create calls ($creates names)"
else
  bad "batched up (rc $rc, creates $creates)" "$out"
fi
"$bin" down do-batch --yes >/dev/null 2>&1 || bad "down do-batch"

sp_summary
