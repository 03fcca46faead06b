#!/bin/sh
# Benchmark: `skypool offers H100:8 --live` for 3 regions against moto_server (EC2 on loopback),
# side by side with the same refresh written with boto3 (bench/peer_live_boto3.py: the same
# calls, the same server, one thread per region as skypool does), and the server-side floor:
# skypool's own requests, recorded once, replayed with curl (one curl per region, the regions
# concurrently). Prints the median wall time of each over repeated runs (hyperfine) and the
# ratios.
#
#   sh bench/aws_live.sh [RUNS]          (default 15 runs each, after 2 warm-up runs)
set -eu
cd "$(dirname "$0")/.."
runs=${1:-15}
command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; }
command -v curl >/dev/null || { apt-get update -qq && apt-get install -y -qq curl >/dev/null; }
./scripts/setup-debian.sh
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSKYPOOL_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" >/dev/null

SKYPOOL_SOURCE_DIR=$PWD
. tests/servers/harness.sh
aws_test_env
start_moto
start_proxy "$MOTO_URL"
PY_AWS=$(sed -n '1s/^#! *//p' "$(sp_find_pyenv_tool moto_server)")
bin=$PWD/build-bench/core/skypool
regions=us-east-1,us-west-2,eu-west-1
work=$SP_SERVERS_DIR/bench
mkdir -p "$work"
export XDG_CACHE_HOME=$work/cache SKYPOOL_PLUGIN_PATH=$PWD/build-bench/providers

# Record skypool's requests once, through the proxy, for the replay.
proxy_reset
AWS_ENDPOINT_URL_EC2=$PROXY_URL "$bin" offers H100:8 --live --provider aws --region "$regions" >/dev/null 2>&1
sp_http GET "$PROXY_URL/__fault__/log" | "$SP_PYTHON" -c '
import json, sys, urllib.parse
log = json.load(sys.stdin)
work, url = sys.argv[1], sys.argv[2]
per = {}
for e in log:
    per.setdefault(e["region"], []).append(urllib.parse.urlencode(e["params"]))
for region, bodies in per.items():
    with open("%s/replay-%s.curl" % (work, region), "w") as f:
        auth = "AWS4-HMAC-SHA256 Credential=testing/20261121/%s/ec2/aws4_request, SignedHeaders=host, Signature=0" % region
        for i, body in enumerate(bodies):
            if i:
                f.write("next\n")
            f.write("url = \"%s/\"\nheader = \"Authorization: %s\"\ndata = \"%s\"\noutput = \"/dev/null\"\nsilent\n" % (url, auth, body))
print(sum(len(b) for b in per.values()), "requests over", len(per), "regions")
' "$work" "$MOTO_URL" >"$work/replay.txt"
cat >"$work/replay.sh" <<REPLAY
for f in $work/replay-*.curl; do curl -K "\$f" & done; wait
REPLAY

echo "$(cat "$work/replay.txt") per refresh"
export AWS_ENDPOINT_URL_EC2=$MOTO_URL
hyperfine -N --warmup 2 --runs "$runs" --export-json "$work/h.json" \
  -n skypool "$bin offers H100:8 --live --provider aws --region $regions" \
  -n boto3 "$PY_AWS bench/peer_live_boto3.py $MOTO_URL us-east-1 us-west-2 eu-west-1" \
  -n curl-floor "sh $work/replay.sh" >/dev/null

"$SP_PYTHON" - "$work/h.json" "$runs" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
ms = lambda k: r[k]["median"] * 1000
for k, label in (("skypool", "skypool offers --live (3 regions)"), ("boto3", "boto3, same calls"),
                 ("curl-floor", "curl replay (server floor)")):
    print(f"{label:36} median {ms(k):8.1f} ms  (min {r[k]['min']*1000:.1f}, max {r[k]['max']*1000:.1f}, {sys.argv[2]} runs)")
print(f"{'boto3 / skypool':36} {ms('boto3') / ms('skypool'):.1f}x")
print(f"{'skypool / floor':36} {ms('skypool') / ms('curl-floor'):.2f}x")
PY
