#!/bin/sh
# Benchmark: `skypool up` then `skypool down` of a 64-node pool against moto_server on loopback,
# against the same 64 launches and terminations made one by one with the AWS CLI (a loop of
# `aws ec2 run-instances`, then of `aws ec2 terminate-instances`), in the same run. Prints the
# median wall time of each (hyperfine) and their ratio.
#
#   sh bench/up_down.sh [RUNS]          (default 3 runs each; the CLI loop takes minutes)
set -eu
cd "$(dirname "$0")/.."
runs=${1:-3}
command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; }
./scripts/setup-debian.sh
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSKYPOOL_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" >/dev/null

SKYPOOL_SOURCE_DIR=$PWD
. tests/servers/harness.sh
aws_test_env
aws_cli
start_moto
start_quotas
for code in L-417A185B L-C4BD4855; do quotas_set us-east-1 "$code" 1000000; done
work=$SP_SERVERS_DIR/bench
mkdir -p "$work"
export AWS_ENDPOINT_URL_EC2=$MOTO_URL AWS_ENDPOINT_URL_SERVICE_QUOTAS=$QUOTAS_URL
export SKYPOOL_PLUGIN_PATH=$PWD/build-bench/providers SKYPOOL_STATE_DIR=$work/state
bin=$PWD/build-bench/core/skypool
cat >"$work/pool.yaml" <<Y
name: bench
nodes: 64
resources:
  accelerators: H100-SXM:8
providers: [aws]
regions: [us-east-1]
Y
ami=$("$SP_AWS" --endpoint-url "$MOTO_URL" ec2 describe-images --owners amazon \
      --query 'Images[0].ImageId' --output text)
cat >"$work/cli.sh" <<CLI
ids=""
i=0
while [ \$i -lt 64 ]; do
  id=\$("$SP_AWS" --endpoint-url "$MOTO_URL" ec2 run-instances --image-id "$ami" \
       --instance-type p5.48xlarge --count 1 --client-token "bench-\$\$-\$i" \
       --placement AvailabilityZone=us-east-1a \
       --tag-specifications 'ResourceType=instance,Tags=[{Key=skypool:pool,Value=cli}]' \
       --query 'Instances[0].InstanceId' --output text)
  ids="\$ids \$id"
  i=\$((i + 1))
done
for id in \$ids; do
  "$SP_AWS" --endpoint-url "$MOTO_URL" ec2 terminate-instances --instance-ids "\$id" >/dev/null
done
CLI

hyperfine -N --runs "$runs" --export-json "$work/h.json" \
  -n skypool "sh -c '$bin up $work/pool.yaml --yes --no-bootstrap >/dev/null && $bin down bench --yes >/dev/null'" \
  -n aws-cli "sh $work/cli.sh" >/dev/null
"$SP_PYTHON" - "$work/h.json" "$runs" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
s, c = r["skypool"]["median"], r["aws-cli"]["median"]
print(f"skypool up + down, 64 nodes         median {s:7.2f} s  ({sys.argv[2]} runs)")
print(f"AWS CLI, 64 launches + 64 terminates median {c:7.2f} s  ({sys.argv[2]} runs)")
print(f"ratio CLI / skypool                 {c / s:.1f}x")
PY
