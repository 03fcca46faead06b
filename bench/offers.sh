#!/bin/sh
# Benchmark: `skypool offers H100:8` as a whole process (exec, loading three provider plugins,
# reading three catalogs, ranking, printing), against the same query in a Python CLI
# (bench/peer_offers.py), in the same run. Prints the median wall time of each over repeated
# runs (hyperfine), their ratio, and skypool's peak RSS.
#
#   sh bench/offers.sh [RUNS]          (default 200 runs each, after 20 warm-up runs)
set -eu
cd "$(dirname "$0")/.."
runs=${1:-200}
command -v hyperfine >/dev/null && command -v /usr/bin/time >/dev/null || {
  apt-get update -qq && apt-get install -y -qq hyperfine time >/dev/null; }
./scripts/setup-debian.sh
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSKYPOOL_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" >/dev/null

bin=build-bench/core/skypool
# The interpreter itself, not a version-manager shim in front of it.
py=$(python3 -c "import sys; print(sys.executable)")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Same answer first: the peer must agree on the cheapest offer, or the comparison is void.
sk_first=$("$bin" offers H100:8 --json | "$py" -c 'import json,sys; o=json.load(sys.stdin)["offers"][0]; print(o["instance_type"], "%.2f" % o["node_price"])')
py_first=$("$py" bench/peer_offers.py catalog | awk 'NR==1 {print $5, $8}')
[ "$sk_first" = "$py_first" ] || { echo "peer disagrees: '$sk_first' vs '$py_first'"; exit 1; }

hyperfine -N --warmup 20 --runs "$runs" --export-json "$out/h.json" \
  -n skypool "$bin offers H100:8" \
  -n python-peer "$py bench/peer_offers.py catalog" >/dev/null

rss_kib=$( /usr/bin/time -f %M "$bin" offers H100:8 2>&1 >/dev/null | tail -n 1)

"$py" - "$out/h.json" "$rss_kib" "$runs" <<'PY'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
sk, peer = res["skypool"], res["python-peer"]
ms = lambda r: r["median"] * 1000
print(f"skypool offers H100:8      median {ms(sk):6.2f} ms  (min {sk['min']*1000:.2f}, max {sk['max']*1000:.2f}, {sys.argv[3]} runs)")
print(f"python peer, same query    median {ms(peer):6.2f} ms  (min {peer['min']*1000:.2f}, max {peer['max']*1000:.2f})")
print(f"ratio peer/skypool         {peer['median']/sk['median']:.1f}x")
print(f"skypool peak RSS           {int(sys.argv[2])/1024:.1f} MiB")
PY
