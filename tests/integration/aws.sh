#!/bin/sh
# The AWS provider end to end against real servers on loopback: moto_server (EC2) behind the
# fault-injecting proxy, and the Service Quotas fake. Runs the provider's integration program
# (itest_aws: every EC2 call, pagination, filters, tags, and each error class through injected
# faults), the CLI (check, offers --live, quota), and compares our requests with botocore's.
set -eu
. "${SKYPOOL_SOURCE_DIR:?}/tests/servers/harness.sh"
build=${SKYPOOL_BUILD_DIR:?}
bin=${SKYPOOL_BIN:?}


aws_test_env
# botocore lives in the Python that runs moto_server.
SP_PYTHON_AWS=$(sed -n '1s/^#! *//p' "$(sp_find_pyenv_tool moto_server)")
start_moto
start_quotas --verify-secret "$AWS_SECRET_ACCESS_KEY"
start_proxy "$MOTO_URL"
export QUOTAS_URL PROXY_URL
export AWS_ENDPOINT_URL_EC2=$PROXY_URL AWS_ENDPOINT_URL_SERVICE_QUOTAS=$QUOTAS_URL
export AWS_MAX_ATTEMPTS=5 SKYPOOL_AWS_BACKOFF_MS=5
export SKYPOOL_PLUGIN_PATH=$build/providers SKYPOOL_CATALOG_DIR=$SKYPOOL_SOURCE_DIR/catalog
XDG_CACHE_HOME=$SP_SERVERS_DIR/cache
export XDG_CACHE_HOME

# 1. The provider through the ABI (cmocka).
if out=$("$build/tests/itest_aws" 2>&1); then
  ok "itest_aws: $(printf '%s\n' "$out" | grep -c '^\[       OK') cases"
else
  bad "itest_aws" "$out"
fi

# 2. The CLI.
proxy_reset
if out=$("$bin" check 2>&1) && printf '%s\n' "$out" | grep -q '^aws  *ok  *environment (AWS_ACCESS_KEY_ID)'; then
  ok "skypool check: aws credentials from the environment, accepted"
else
  bad "skypool check" "$out"
fi

if out=$("$bin" offers H100:8 --live --provider aws --region us-east-1,us-west-2 --json 2>&1) &&
   [ "$(printf '%s' "$out" | "$SP_PYTHON" -c 'import json,sys; d=json.load(sys.stdin); print(d["live"][0]["ok"], d["live"][0]["rows"] > 100, all(o["region"] in ("us-east-1","us-west-2") for o in d["offers"]), len(d["offers"]) > 0)')" = "True True True True" ] &&
   "$bin" catalog | grep -q '^aws .* live .*live: aws API for us-east-1, us-west-2'; then
  ok "offers --live: refreshed us-east-1 and us-west-2 into the cached catalog"
else
  bad "offers --live" "$out"
fi

quotas_set us-east-1 L-417A185B 0
quotas_set us-west-2 L-417A185B 0
rc=0
out=$("$bin" quota H100:8 --provider aws --region us-east-1,us-west-2 --nodes 2 2>&1) || rc=$?
if [ "$rc" -eq 6 ] && printf '%s\n' "$out" | grep -q 'fix: request quota L-417A185B (Running On-Demand P instances) in us-east-1 to at least 384 vCPUs'; then
  ok "quota: no room anywhere -> exit 6 and the exact increase to ask for"
else
  bad "quota short (rc $rc)" "$out"
fi
quotas_set us-west-2 L-417A185B 384
rc=0
out=$("$bin" quota H100:8 --provider aws --region us-east-1,us-west-2 --nodes 2 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q '^aws  *us-west-2 .* 384  *ok'; then
  ok "quota: room in us-west-2 -> exit 0"
else
  bad "quota ok (rc $rc)" "$out"
fi

# Throttling storm: 30% of EC2 requests refused; the live refresh still completes.
proxy_rules '[{"probability": 0.3, "seed": 11, "service": "ec2", "effect": "error", "code": "RequestLimitExceeded"}]'
if out=$("$bin" offers H100:8 --live --provider aws --region us-east-1,us-west-2,eu-west-1 2>&1) &&
   printf '%s\n' "$out" | grep -q 'live: aws: [0-9]* offers from 3 regions'; then
  ok "offers --live through a 30% throttling storm"
else
  bad "throttling storm" "$out"
fi
proxy_reset

# 3. Our requests and botocore's carry the same parameters.
sp_http DELETE "$PROXY_URL/__fault__/log" >/dev/null
"$SP_PYTHON_AWS" "$SKYPOOL_SOURCE_DIR/tests/integration/botocore_calls.py" "$PROXY_URL" >/dev/null 2>&1 ||
  bad "botocore calls failed"
if out=$("$build/tests/itest_aws_calls" 2>&1); then
  cmp=$(sp_http GET "$PROXY_URL/__fault__/log" | "$SP_PYTHON" -c '
import json, sys
log = json.load(sys.stdin)
def params(e):
    return sorted((k, v) for k, v in e["params"].items())
by = {}
for e in log:
    h = {k.lower(): v for k, v in e["headers"].items()}
    who = "skypool" if h.get("user-agent", "").startswith("skypool/") else "botocore"
    by.setdefault(e["action"], {}).setdefault(who, params(e))  # the first call of each
by = {a: w for a, w in by.items() if "botocore" in w}        # the calls botocore made
bad = [a for a, w in by.items() if w.get("skypool") != w.get("botocore")]
print(len(by), "actions;", "differ: " + ", ".join(bad) if bad else "all equal")
for a in bad:
    print(a, by[a], file=sys.stderr)
')
  case "$cmp" in
    "5 actions; all equal") ok "requests equal botocore's for 5 calls (sorted parameters)" ;;
    *) bad "requests differ from botocore's: $cmp" ;;
  esac
else
  bad "itest_aws_calls" "$out"
fi

sp_summary
