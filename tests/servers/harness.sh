# shellcheck shell=sh
# Test servers for the AWS provider's integration tests: moto_server (EC2), quotas_fake.py
# (Service Quotas) and fault_proxy.py in front of either. POSIX sh; source it from a test:
#
#   . "$SKYPOOL_SOURCE_DIR/tests/servers/harness.sh"
#   aws_test_env                        # dummy credentials, no retries, no ~/.aws
#   start_moto                          # MOTO_URL, MOTO_PID
#   start_quotas                        # QUOTAS_URL, QUOTAS_PID
#   start_proxy "$MOTO_URL"             # PROXY_URL, PROXY_PID
#   start_proxy "$QUOTAS_URL" QPROXY    # QPROXY_URL, QPROXY_PID
#
# Every server listens on a free 127.0.0.1 port and is stopped by PID when the test exits (the
# harness owns the EXIT trap: add your own cleanup with sp_on_exit 'command', do not replace the
# trap). A server also stops by itself after SP_SERVERS_LIFETIME seconds (default 600) or within
# about a second of the test's shell dying, so a killed test leaves nothing behind.
# Logs: $SP_SERVERS_DIR/<name>.log.

SP_SERVERS_SRC=$(CDPATH='' cd -- "${SKYPOOL_SOURCE_DIR:-.}/tests/servers" 2>/dev/null && pwd) ||
  { echo "FAIL: harness.sh: set SKYPOOL_SOURCE_DIR to the source tree" >&2; exit 1; }
SP_SERVERS_LIFETIME=${SP_SERVERS_LIFETIME:-600}
SP_SERVERS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/skypool-servers-XXXXXX") ||
  { echo "FAIL: harness.sh: mktemp failed" >&2; exit 1; }
SP_SERVERS_PIDS=""
SP_SERVERS_WATCHERS=""
SP_SERVERS_HOOKS=":"
SP_SERVERS_SEQ=0

sp_fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Adds a command to run at exit, before the servers are stopped.
sp_on_exit() {
  SP_SERVERS_HOOKS="$SP_SERVERS_HOOKS; $1"
}

sp_stop_pid() {
  kill "$1" 2>/dev/null || return 0
  sp_i=0
  while kill -0 "$1" 2>/dev/null && [ "$sp_i" -lt 50 ]; do
    sleep 0.1
    sp_i=$((sp_i + 1))
  done
  kill -9 "$1" 2>/dev/null || :
  wait "$1" 2>/dev/null || :
  return 0
}

sp_servers_cleanup() {
  set +e
  eval "$SP_SERVERS_HOOKS"
  for sp_pid in $SP_SERVERS_WATCHERS; do
    kill "$sp_pid" 2>/dev/null
  done
  for sp_pid in $SP_SERVERS_PIDS; do
    sp_stop_pid "$sp_pid"
  done
  for sp_pid in $SP_SERVERS_WATCHERS; do
    wait "$sp_pid" 2>/dev/null
  done
  if [ -n "${SP_SERVERS_KEEP_LOGS:-}" ]; then
    echo "server logs kept in $SP_SERVERS_DIR" >&2
  else
    rm -rf "$SP_SERVERS_DIR"
  fi
}
trap 'sp_servers_cleanup' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# A Python 3 for our own servers and helpers: standard library only, so any will do.
if [ -z "${SP_PYTHON:-}" ]; then
  if [ -x /usr/bin/python3 ]; then
    SP_PYTHON=/usr/bin/python3
  else
    SP_PYTHON=$(command -v python3) || sp_fail "harness.sh: no python3 found"
  fi
fi

# Finds a command that lives in the image's pyenv Python (moto_server, aws): on PATH (a pyenv
# shim is resolved to the real file, which starts faster), else under $(pyenv root)/versions.
sp_find_pyenv_tool() {
  sp_tool=$(command -v "$1" 2>/dev/null) || sp_tool=""
  case $sp_tool in
    */shims/*) sp_tool=$(pyenv which "$1" 2>/dev/null) || sp_tool="" ;;
  esac
  if [ -z "$sp_tool" ] || [ ! -x "$sp_tool" ]; then
    sp_root=$(pyenv root 2>/dev/null) || sp_root=${PYENV_ROOT:-$HOME/.pyenv}
    sp_tool=""
    for sp_candidate in "$sp_root"/versions/*/bin/"$1"; do
      if [ -x "$sp_candidate" ]; then
        sp_tool=$sp_candidate
        break
      fi
    done
  fi
  [ -n "$sp_tool" ] && printf '%s\n' "$sp_tool"
}

# Dummy credentials and a client that never retries and never reads ~/.aws: only in tests.
aws_test_env() {
  : >"$SP_SERVERS_DIR/aws-config"
  : >"$SP_SERVERS_DIR/aws-credentials"
  AWS_ACCESS_KEY_ID=testing
  AWS_SECRET_ACCESS_KEY=testing
  AWS_DEFAULT_REGION=us-east-1
  AWS_REGION=us-east-1
  AWS_CONFIG_FILE=$SP_SERVERS_DIR/aws-config
  AWS_SHARED_CREDENTIALS_FILE=$SP_SERVERS_DIR/aws-credentials
  AWS_EC2_METADATA_DISABLED=true
  AWS_MAX_ATTEMPTS=1
  AWS_RETRY_MODE=standard
  AWS_PAGER=""
  NO_PROXY=127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}
  no_proxy=$NO_PROXY
  export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_DEFAULT_REGION AWS_REGION AWS_CONFIG_FILE \
    AWS_SHARED_CREDENTIALS_FILE AWS_EC2_METADATA_DISABLED AWS_MAX_ATTEMPTS AWS_RETRY_MODE \
    AWS_PAGER NO_PROXY no_proxy
  unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL
}

# Sets SP_AWS to the AWS CLI, or fails the test.
aws_cli() {
  SP_AWS=$(sp_find_pyenv_tool aws) ||
    sp_fail "the AWS CLI (aws) is not on PATH nor under \$(pyenv root)/versions/*/bin"
  export SP_AWS
}

# sp_http METHOD URL [BODY]: prints the response body; fails unless the status is 2xx.
sp_http() {
  "$SP_PYTHON" - "$@" <<'EOF'
import sys, urllib.request, urllib.error
method, url = sys.argv[1], sys.argv[2]
body = sys.argv[3].encode() if len(sys.argv) > 3 else None
req = urllib.request.Request(url, data=body, method=method,
                             headers={"Content-Type": "application/json"})
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    sys.stdout.write(opener.open(req, timeout=30).read().decode())
except urllib.error.HTTPError as e:
    sys.stderr.write("%s %s: HTTP %d %s\n" % (method, url, e.code, e.read().decode()))
    sys.exit(1)
EOF
}

sp_free_port() {
  "$SP_PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# sp_spawn NAME COMMAND...: starts a server in the background, output to its log; sets
# sp_last_pid and sp_last_log.
sp_spawn() {
  SP_SERVERS_SEQ=$((SP_SERVERS_SEQ + 1))
  sp_last_log="$SP_SERVERS_DIR/$1.$SP_SERVERS_SEQ.log"
  shift
  "$@" </dev/null >"$sp_last_log" 2>&1 &
  sp_last_pid=$!
  SP_SERVERS_PIDS="$SP_SERVERS_PIDS $sp_last_pid"
}

# For servers without --watch-pid (moto): stop PID within a second of this shell dying.
sp_watch() {
  (
    while kill -0 "$SP_SHELL_PID" 2>/dev/null && kill -0 "$1" 2>/dev/null; do
      sleep 1
    done
    kill -0 "$SP_SHELL_PID" 2>/dev/null || kill "$1" 2>/dev/null
  ) </dev/null >/dev/null 2>&1 &
  SP_SERVERS_WATCHERS="$SP_SERVERS_WATCHERS $!"
}
SP_SHELL_PID=$$

# sp_wait_http URL PID SECONDS: waits until URL answers anything over HTTP.
sp_wait_http() {
  "$SP_PYTHON" - "$@" <<'EOF'
import os, sys, time, urllib.request, urllib.error
url, pid, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
deadline = time.monotonic() + limit
while time.monotonic() < deadline:
    try:
        opener.open(url, timeout=2).read()
        sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(2)
    time.sleep(0.05)
sys.exit(1)
EOF
}

# sp_wait_port_file FILE PID SECONDS: prints the port our Python servers write once listening.
sp_wait_port_file() {
  sp_i=0
  while [ ! -s "$1" ]; do
    kill -0 "$2" 2>/dev/null || return 1
    [ "$sp_i" -lt "$(($3 * 20))" ] || return 1
    sleep 0.05
    sp_i=$((sp_i + 1))
  done
  cat "$1"
}

sp_start_python_server() {  # NAME SCRIPT ARGS...: sets sp_last_port
  sp_name=$1
  sp_script=$2
  shift 2
  sp_port_file="$SP_SERVERS_DIR/$sp_name.$((SP_SERVERS_SEQ + 1)).port"
  sp_spawn "$sp_name" "$SP_PYTHON" "$SP_SERVERS_SRC/$sp_script" --port 0 \
    --port-file "$sp_port_file" --lifetime "$SP_SERVERS_LIFETIME" --watch-pid "$SP_SHELL_PID" "$@"
  sp_last_port=$(sp_wait_port_file "$sp_port_file" "$sp_last_pid" 15) ||
    sp_fail "$sp_script did not start: $(tail -n 20 "$sp_last_log")"
}

# Starts moto_server on a free port: MOTO_URL, MOTO_PID.
start_moto() {
  sp_moto=$(sp_find_pyenv_tool moto_server) ||
    sp_fail "moto_server not found (not on PATH, nor under \$(pyenv root)/versions/*/bin);" \
      "the AWS integration tests need moto 5.2.1: pip install 'moto[server]==5.2.1'"
  sp_timeout=""
  if command -v timeout >/dev/null 2>&1; then
    sp_timeout="timeout -k 5 $SP_SERVERS_LIFETIME"
  fi
  sp_try=0
  while [ "$sp_try" -lt 3 ]; do
    sp_try=$((sp_try + 1))
    sp_port=$(sp_free_port)
    # shellcheck disable=SC2086 # sp_timeout is a word list on purpose
    sp_spawn moto $sp_timeout "$sp_moto" -H 127.0.0.1 -p "$sp_port"
    sp_watch "$sp_last_pid"
    if sp_wait_http "http://127.0.0.1:$sp_port/moto-api/" "$sp_last_pid" 60; then
      MOTO_URL=http://127.0.0.1:$sp_port
      MOTO_PID=$sp_last_pid
      export MOTO_URL MOTO_PID
      return 0
    fi
    sp_stop_pid "$sp_last_pid"
  done
  sp_fail "moto_server ($sp_moto) did not answer: $(tail -n 20 "$sp_last_log")"
}

# start_quotas [quotas_fake.py options]: QUOTAS_URL, QUOTAS_PID.
start_quotas() {
  sp_start_python_server quotas quotas_fake.py "$@"
  QUOTAS_URL=http://127.0.0.1:$sp_last_port
  QUOTAS_PID=$sp_last_pid
  export QUOTAS_URL QUOTAS_PID
}

# start_proxy UPSTREAM_URL [PREFIX [fault_proxy.py options]]: ${PREFIX}_URL and ${PREFIX}_PID,
# PREFIX defaulting to PROXY.
start_proxy() {
  [ -n "${1:-}" ] || sp_fail "start_proxy needs the upstream URL"
  sp_upstream=$1
  sp_prefix=${2:-PROXY}
  case $sp_prefix in
    [A-Z_]*) ;;
    *) sp_fail "start_proxy: bad variable prefix '$sp_prefix'" ;;
  esac
  case $sp_prefix in
    *[!A-Z0-9_]*) sp_fail "start_proxy: bad variable prefix '$sp_prefix'" ;;
  esac
  shift
  [ $# -gt 0 ] && shift
  sp_start_python_server proxy fault_proxy.py --upstream "$sp_upstream" "$@"
  eval "${sp_prefix}_URL=http://127.0.0.1:$sp_last_port; ${sp_prefix}_PID=$sp_last_pid"
  eval "export ${sp_prefix}_URL ${sp_prefix}_PID"
}

# Test helpers for the admin and fault APIs (README.md has the formats).
quotas_set() {  # REGION CODE VALUE
  sp_http POST "$QUOTAS_URL/__admin__/quota" \
    "{\"region\": \"$1\", \"code\": \"$2\", \"value\": $3}" >/dev/null
}

quotas_admin() {  # METHOD NAME [JSON], e.g. quotas_admin GET state
  sp_http "$1" "$QUOTAS_URL/__admin__/$2" ${3+"$3"}
}

proxy_url() {  # [PREFIX]
  eval "printf '%s' \"\${${1:-PROXY}_URL:?start_proxy first}\""
}

proxy_rules() {  # JSON [PREFIX]: replaces the rules
  sp_http POST "$(proxy_url "${2:-PROXY}")/__fault__/rules" "$1" >/dev/null
}

proxy_log() {  # [PREFIX]: the request log as JSON on stdout
  sp_http GET "$(proxy_url "${1:-PROXY}")/__fault__/log"
}

proxy_reset() {  # [PREFIX]: no rules, empty log
  sp_http DELETE "$(proxy_url "${1:-PROXY}")/__fault__/rules" >/dev/null &&
    sp_http DELETE "$(proxy_url "${1:-PROXY}")/__fault__/log" >/dev/null
}

# Test results: ok NAME, bad NAME [DETAIL], then sp_summary prints the closing line
# "N passed, N failed" and fails when anything did.
passed=0
failed=0
ok() {
  passed=$((passed + 1))
  echo "ok - $1"
}
bad() {
  failed=$((failed + 1))
  echo "FAIL - $1" >&2
  [ $# -lt 2 ] || printf '%s\n' "$2" | sed 's/^/    /' >&2
}
sp_summary() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
