# shellcheck shell=sh disable=SC2154 # sp_last_pid, sp_last_log, sp_last_port: set by harness.sh
# Test servers for the DigitalOcean provider's integration tests: Prism serving the official
# OpenAPI spec (stateless: checks every request against the contract) and do_fake.py (stateful:
# droplets that boot, limits, capacity, faults). POSIX sh; source it after harness.sh:
#
#   . "$SKYPOOL_SOURCE_DIR/tests/servers/harness.sh"
#   . "$SKYPOOL_SOURCE_DIR/tests/servers/do_servers.sh"
#   start_prism                         # PRISM_URL, PRISM_PID, PRISM_LOG
#   start_do_fake [do_fake.py options]  # DOFAKE_URL, DOFAKE_PID
#   dofake_admin GET state              # the control API (/_fake/...) answer on stdout
#
# Both listen on a free 127.0.0.1 port and obey the harness's lifetime rules (stopped by PID at
# exit, by themselves after SP_SERVERS_LIFETIME seconds or within about a second of the test's
# shell dying). README.md has the fake's API; the Prism notes are below.
#
# Prism (tests/servers/prism, pinned by its package-lock.json) answers, per the spec:
#   - no Authorization header, or not "Bearer ...":   401 {"id":"unauthorized","message":"Unable
#     to authenticate you."} and a header sl-violations naming the failed security scheme;
#   - a body or query that breaks the spec (missing size/image, name not a string, per_page 500,
#     no Content-Type: application/json gives 415 instead): 422 {"id":"example_error", ...}
#     with the violations in the sl-violations header (JSON list of {location, code, message});
#   - otherwise the first example of the operation's first 2xx answer (a create answers the
#     single-droplet example whatever was sent), with ratelimit-* headers.
# A test asks for another answer with the Prefer request header:
#   Prefer: code=404                       that status, with its example (401, 404, 429, 500...)
#   Prefer: example=Multiple Droplet Create Response    a named example of the 2xx answer
#   Prefer: code=200, example=GPU Droplets  both (GET /v2/droplets has "All Droplets",
#                                           "Droplets Filtered By Tag" and "GPU Droplets")
#   Prefer: dynamic=true                   data generated from the schema instead of examples
# Request validation still runs first: a request that breaks the spec gets 401/415/422 whatever
# it prefers.

SP_PRISM_DIR=$SP_SERVERS_SRC/prism
# The spec lives beside the project, never in it (../shared/contracts from the project root).
sp_shared=$(dirname -- "$(dirname -- "$(dirname -- "$SP_SERVERS_SRC")")")/shared
DO_OPENAPI_SPEC=${DO_OPENAPI_SPEC:-$sp_shared/contracts/digitalocean/openapi.yaml}

# Serialises npm ci between tests running at the same time (ctest -j): npm ci deletes
# node_modules first, so the lock lives outside it.
sp_prism_lock() {
  sp_lock=${TMPDIR:-/tmp}/skypool-prism-npm.lock
  sp_i=0
  until mkdir "$sp_lock" 2>/dev/null; do
    sp_owner=$(cat "$sp_lock/pid" 2>/dev/null) || sp_owner=""
    if [ -n "$sp_owner" ] && ! kill -0 "$sp_owner" 2>/dev/null; then
      rm -rf "$sp_lock"
      continue
    fi
    [ "$sp_i" -lt 3000 ] || sp_fail "prism_install: $sp_lock held for 300 s; remove it if stale"
    sleep 0.1
    sp_i=$((sp_i + 1))
  done
  echo "$$" >"$sp_lock/pid"
}

sp_prism_unlock() {
  rm -rf "${TMPDIR:-/tmp}/skypool-prism-npm.lock"
}

# Installs the pinned Prism into tests/servers/prism/node_modules unless the installed tree was
# made from the current package-lock.json (a copy of it is kept as node_modules/.skypool-lock).
prism_install() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    sp_fail "Prism needs Node.js and npm (Node >= 18.20.1); scripts/setup-debian.sh installs them"
  fi
  if cmp -s "$SP_PRISM_DIR/package-lock.json" "$SP_PRISM_DIR/node_modules/.skypool-lock" &&
    [ -f "$SP_PRISM_DIR/node_modules/@stoplight/prism-cli/package.json" ]; then
    return 0
  fi
  sp_prism_lock
  if ! cmp -s "$SP_PRISM_DIR/package-lock.json" "$SP_PRISM_DIR/node_modules/.skypool-lock"; then
    if ! (cd "$SP_PRISM_DIR" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error) \
      >"$SP_SERVERS_DIR/prism-npm.log" 2>&1; then
      sp_prism_unlock
      sp_fail "npm ci in $SP_PRISM_DIR failed: $(tail -n 20 "$SP_SERVERS_DIR/prism-npm.log")"
    fi
    cp "$SP_PRISM_DIR/package-lock.json" "$SP_PRISM_DIR/node_modules/.skypool-lock"
  fi
  sp_prism_unlock
}

# Starts Prism on the DigitalOcean spec: PRISM_URL, PRISM_PID, PRISM_LOG. Loading the spec takes
# 5-20 s; start it once per test.
start_prism() {
  [ -f "$DO_OPENAPI_SPEC" ] ||
    sp_fail "the DigitalOcean OpenAPI spec is not at $DO_OPENAPI_SPEC (set DO_OPENAPI_SPEC)"
  prism_install
  sp_timeout=""
  if command -v timeout >/dev/null 2>&1; then
    sp_timeout="timeout -k 5 $SP_SERVERS_LIFETIME"
  fi
  sp_try=0
  while [ "$sp_try" -lt 3 ]; do
    sp_try=$((sp_try + 1))
    sp_port=$(sp_free_port)
    # shellcheck disable=SC2086 # sp_timeout is a word list on purpose
    sp_spawn prism $sp_timeout node "$SP_PRISM_DIR/node_modules/.bin/prism" mock \
      -h 127.0.0.1 -p "$sp_port" "$DO_OPENAPI_SPEC"
    sp_watch "$sp_last_pid"
    # Prism opens its port only once the spec is loaded; any answer (401 here) means ready.
    if sp_wait_http "http://127.0.0.1:$sp_port/v2/account" "$sp_last_pid" 90; then
      PRISM_URL=http://127.0.0.1:$sp_port
      PRISM_PID=$sp_last_pid
      PRISM_LOG=$sp_last_log
      export PRISM_URL PRISM_PID PRISM_LOG
      return 0
    fi
    sp_stop_pid "$sp_last_pid"
  done
  sp_fail "Prism did not answer within 90 s: $(tail -n 20 "$sp_last_log")"
}

# start_do_fake [do_fake.py options]: DOFAKE_URL, DOFAKE_PID.
start_do_fake() {
  sp_start_python_server dofake do_fake.py "$@"
  DOFAKE_URL=http://127.0.0.1:$sp_last_port
  DOFAKE_PID=$sp_last_pid
  export DOFAKE_URL DOFAKE_PID
}

# dofake_admin METHOD NAME [JSON]: the control API, e.g. dofake_admin GET state,
# dofake_admin POST capacity '{"nyc2": {"gpu-h100x1-80gb": 0}}'. Fails unless 2xx.
dofake_admin() {
  sp_http "$1" "${DOFAKE_URL:?start_do_fake first}/_fake/$2" ${3+"$3"}
}

# do_request METHOD URL [JSON]: one API call with "Authorization: Bearer $DO_TOKEN" (default
# test-token; DO_TOKEN='' sends none). Prints the status, then the headers as "name: value"
# (names in lower case), a blank line and the body; never fails on an HTTP status. Extra
# request headers: DO_HEADERS='Prefer: code=404|X-Other: 1' ('|'-separated).
do_request() {
  "$SP_PYTHON" - "$@" <<'EOF'
import os, sys, urllib.request, urllib.error
method, url = sys.argv[1], sys.argv[2]
body = sys.argv[3].encode() if len(sys.argv) > 3 else None
headers = {"Accept": "application/json"}
if body is not None:
    headers["Content-Type"] = "application/json"
token = os.environ.get("DO_TOKEN", "test-token")
if token:
    headers["Authorization"] = "Bearer " + token
for extra in filter(None, os.environ.get("DO_HEADERS", "").split("|")):
    name, _, value = extra.partition(":")
    headers[name.strip()] = value.strip()
req = urllib.request.Request(url, data=body, method=method, headers=headers)
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    resp = opener.open(req, timeout=30)
except urllib.error.HTTPError as e:
    resp = e
out = ["%d" % resp.status]
out += ["%s: %s" % (k.lower(), v) for k, v in resp.headers.items()]
sys.stdout.write("\n".join(out) + "\n\n" + resp.read().decode())
EOF
}

# Filters for do_request's output (on stdin): the status, one header's value, the body.
do_status() {
  sed -n 1p
}

do_header() {  # NAME (lower case)
  sed -n "2,/^\$/s/^$1: //p" | sed -n 1p
}

do_body() {
  sed '1,/^$/d'
}

# json_eval EXPR: evaluates a Python expression over the JSON document on stdin, bound to d;
# prints strings bare and anything else as JSON. Fails (with the document) on a bad expression.
json_eval() {
  "$SP_PYTHON" -c '
import json, sys
raw = sys.stdin.read()
try:
    d = json.loads(raw)
    v = eval("(%s)" % sys.argv[1], {"d": d})
except Exception as e:
    sys.stderr.write("json_eval %s: %s on %s\n" % (sys.argv[1], e, raw[:400]))
    sys.exit(1)
print(v if isinstance(v, str) else json.dumps(v, sort_keys=True))
' "$1"
}
