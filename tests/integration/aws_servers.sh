#!/bin/sh
# The AWS test servers behave like the real services, as the AWS CLI (botocore) sees them:
# quotas_fake.py answers Service Quotas for ec2 per region (errors, pagination, increase
# requests, unsigned requests refused), and fault_proxy.py passes moto's EC2 through unchanged
# and injects throttling, capacity errors, dropped connections and delays on request.
set -eu
. "${SKYPOOL_SOURCE_DIR:?}/tests/servers/harness.sh"


# py EXPR JSON: evaluates a Python expression over the JSON document d.
py() {
  "$SP_PYTHON" -c 'import json, sys; d = json.loads(sys.argv[2]); print(eval(sys.argv[1]))' \
    "$1" "$2"
}

# run ENDPOINT ARGS...: the AWS CLI against ENDPOINT; sets out (stdout+stderr) and rc.
run() {
  sp_endpoint=$1
  shift
  rc=0
  out=$("$SP_AWS" --endpoint-url "$sp_endpoint" --output json "$@" 2>&1) || rc=$?
}

aws_test_env
aws_cli
start_moto
start_quotas --verify-secret "$AWS_SECRET_ACCESS_KEY"
start_proxy "$MOTO_URL"
start_proxy "$QUOTAS_URL" QPROXY

# --- Service Quotas ---

run "$QUOTAS_URL" service-quotas get-service-quota --service-code ec2 \
  --quota-code L-417A185B --region us-east-1
if [ "$rc" -eq 0 ] &&
  [ "$(py 'd["Quota"]["QuotaName"], d["Quota"]["Value"], d["Quota"]["QuotaArn"]' "$out")" = \
    "('Running On-Demand P instances', 0.0, 'arn:aws:servicequotas:us-east-1:123456789012:ec2/L-417A185B')" ]; then
  ok "get-service-quota L-417A185B: the AWS default, 0 vCPUs"
else
  bad "get-service-quota L-417A185B" "$out"
fi

quotas_set us-west-2 L-417A185B 192
run "$QUOTAS_URL" service-quotas get-service-quota --service-code ec2 \
  --quota-code L-417A185B --region us-west-2
state=$(quotas_admin GET state)
if [ "$rc" -eq 0 ] && [ "$(py 'd["Quota"]["Value"]' "$out")" = 192.0 ] &&
  [ "$(py 'd["quotas"]["us-east-1"]["L-417A185B"]' "$state")" = 0.0 ]; then
  ok "quotas are per region: us-west-2 set to 192, us-east-1 still 0"
else
  bad "per-region quota" "$out"
fi

quotas_admin POST reset >/dev/null
quotas_set us-west-2 L-DB2E81BA 64
run "$QUOTAS_URL" service-quotas list-service-quotas --service-code ec2 --region us-west-2 \
  --page-size 5
calls=$(quotas_admin GET state)
if [ "$rc" -eq 0 ] && [ "$(py 'len(d["Quotas"])' "$out")" = 13 ] &&
  [ "$(py '[q["Value"] for q in d["Quotas"] if q["QuotaCode"] == "L-DB2E81BA"]' "$out")" = \
    "[64.0]" ] &&
  [ "$(py '[(c["params"].get("MaxResults"), "NextToken" in c["params"]) for c in d["calls"]]' \
    "$calls")" = "[(5, False), (5, True), (5, True)]" ]; then
  ok "list-service-quotas follows NextToken over 3 pages of 5"
else
  bad "list-service-quotas pagination" "$out
$calls"
fi

run "$QUOTAS_URL" service-quotas get-service-quota --service-code ec2 \
  --quota-code L-00000000 --region us-east-1
if [ "$rc" -ne 0 ] && printf '%s' "$out" | grep -q 'NoSuchResourceException'; then
  ok "an unknown quota code is NoSuchResourceException"
else
  bad "unknown quota code" "$out"
fi

run "$QUOTAS_URL" --no-sign-request service-quotas get-service-quota --service-code ec2 \
  --quota-code L-417A185B --region us-east-1
unsigned_rc=$rc
unsigned_out=$out
rc=0
out=$(AWS_SECRET_ACCESS_KEY=not-the-secret "$SP_AWS" --endpoint-url "$QUOTAS_URL" \
  service-quotas get-service-quota --service-code ec2 --quota-code L-417A185B \
  --region us-east-1 2>&1) || rc=$?
if [ "$unsigned_rc" -ne 0 ] &&
  printf '%s' "$unsigned_out" | grep -q 'MissingAuthenticationTokenException' &&
  [ "$rc" -ne 0 ] && printf '%s' "$out" | grep -q 'InvalidSignatureException'; then
  ok "unsigned (MissingAuthenticationTokenException) and badly signed requests are refused"
else
  bad "unsigned or badly signed request" "$unsigned_out
$out"
fi

run "$QUOTAS_URL" service-quotas request-service-quota-increase --service-code ec2 \
  --quota-code L-DB2E81BA --desired-value 96 --region us-west-2
before=$(quotas_admin GET state)
quotas_admin POST approve '{}' >/dev/null
run2_rc=$rc
run2_out=$out
run "$QUOTAS_URL" service-quotas get-service-quota --service-code ec2 \
  --quota-code L-DB2E81BA --region us-west-2
if [ "$run2_rc" -eq 0 ] && [ "$(py 'd["RequestedQuota"]["Status"]' "$run2_out")" = PENDING ] &&
  [ "$(py 'd["quotas"]["us-west-2"]["L-DB2E81BA"]' "$before")" = 64.0 ] &&
  [ "$rc" -eq 0 ] && [ "$(py 'd["Quota"]["Value"]' "$out")" = 96.0 ]; then
  ok "an increase request stays PENDING (64) until approved (96)"
else
  bad "increase request" "$run2_out
$out"
fi

# --- fault proxy in front of moto ---

proxy_rules '[{"name": "throttle", "action": "DescribeInstanceTypes", "count": 1,
               "effect": "error", "code": "RequestLimitExceeded"}]'
run "$PROXY_URL" ec2 describe-instance-types --instance-types p5.48xlarge --region us-east-1
log=$(proxy_log PROXY)
if [ "$rc" -ne 0 ] && printf '%s' "$out" | grep -q 'RequestLimitExceeded' &&
  [ "$(py '[(e["action"], e["status"], e["rule"]) for e in d]' "$log")" = \
    "[('DescribeInstanceTypes', 503, 'throttle')]" ]; then
  ok "a throttling rule: the CLI sees RequestLimitExceeded (503), sent once"
else
  bad "throttling rule" "$out
$log"
fi

proxy_reset PROXY
run "$PROXY_URL" ec2 describe-instance-types --instance-types p5.48xlarge --region us-east-1
via_proxy=$out
via_proxy_rc=$rc
run "$MOTO_URL" ec2 describe-instance-types --instance-types p5.48xlarge --region us-east-1
log=$(proxy_log PROXY)
if [ "$via_proxy_rc" -eq 0 ] && [ "$rc" -eq 0 ] && [ "$via_proxy" = "$out" ] &&
  [ "$(py 'd["InstanceTypes"][0]["VCpuInfo"]["DefaultVCpus"]' "$out")" = 192 ] &&
  [ "$(py '[(e["action"], e["region"], e["service"], e["params"]["InstanceType.1"],
             e["params"]["Version"], e["effect"], e["status"]) for e in d]' "$log")" = \
    "[('DescribeInstanceTypes', 'us-east-1', 'ec2', 'p5.48xlarge', '2016-11-15', 'forward', 200)]" ]
then
  ok "describe-instance-types through the proxy equals moto's answer; the log has the form"
else
  bad "plain forwarding" "$via_proxy
$log"
fi

proxy_rules '[{"name": "no-p5-in-1a", "action": "RunInstances",
               "params": {"Placement.AvailabilityZone": "us-east-1a",
                          "InstanceType": "p5.48xlarge"},
               "region": "us-east-1", "effect": "error", "code": "InsufficientInstanceCapacity"}]'
run "$PROXY_URL" ec2 run-instances --image-id ami-12345678 --instance-type p5.48xlarge \
  --placement AvailabilityZone=us-east-1a --region us-east-1
cap_rc=$rc
cap_out=$out
run "$PROXY_URL" ec2 run-instances --image-id ami-12345678 --instance-type p5.48xlarge \
  --placement AvailabilityZone=us-east-1b --region us-east-1
if [ "$cap_rc" -ne 0 ] &&
  printf '%s' "$cap_out" | grep -q 'InsufficientInstanceCapacity.*p5.48xlarge.*(us-east-1a)' &&
  [ "$rc" -eq 0 ] && [ "$(py 'd["Instances"][0]["Placement"]["AvailabilityZone"]' "$out")" = \
    us-east-1b ]; then
  instance=$(py 'd["Instances"][0]["InstanceId"]' "$out")
  ok "a capacity rule on RunInstances in us-east-1a; us-east-1b launches ($instance)"
else
  instance=""
  bad "capacity rule" "$cap_out
$out"
fi

proxy_rules '[{"name": "drop", "action": "DescribeInstances", "count": 1, "effect": "drop"},
              {"name": "slow", "action": "DescribeInstances", "effect": "delay",
               "delay_ms": 1500}]'
run "$PROXY_URL" ec2 describe-instances --region us-east-1
if [ "$rc" -ne 0 ] && printf '%s' "$out" | grep -qi 'connection'; then
  ok "a dropped connection: the CLI gets no answer"
else
  bad "dropped connection" "$out"
fi

run "$PROXY_URL" ec2 describe-instances --region us-east-1 --instance-ids "${instance:-i-none}"
log=$(proxy_log PROXY)
if [ "$rc" -eq 0 ] &&
  [ "$(py 'd["Reservations"][0]["Instances"][0]["InstanceId"]' "$out")" = "$instance" ] &&
  [ "$(py '[(e["rule"], e["effect"], e["status"], e["duration_ms"] >= 1500) for e in d[-2:]]' \
    "$log")" = "[('drop', 'drop', None, False), ('slow', 'delay', 200, True)]" ]; then
  ok "a delay rule: the answer comes after 1.5 s, unchanged"
else
  bad "delay rule" "$out
$log"
fi

# --- fault proxy in front of the quotas fake: JSON 1.1 errors ---

proxy_rules '[{"action": "GetServiceQuota", "count": 1, "effect": "error",
               "code": "TooManyRequestsException"}]' QPROXY
run "$QPROXY_URL" service-quotas get-service-quota --service-code ec2 \
  --quota-code L-417A185B --region us-east-1
throttled_rc=$rc
throttled_out=$out
run "$QPROXY_URL" service-quotas get-service-quota --service-code ec2 \
  --quota-code L-417A185B --region us-east-1
if [ "$throttled_rc" -ne 0 ] &&
  printf '%s' "$throttled_out" | grep -q 'TooManyRequestsException' &&
  [ "$rc" -eq 0 ] && [ "$(py 'd["Quota"]["Value"]' "$out")" = 0.0 ]; then
  ok "a JSON 1.1 error for a Service Quotas target; then a signed request passes the proxy intact"
else
  bad "JSON 1.1 error rule" "$throttled_out
$out"
fi

# --- the wire, without the CLI: keep-alive, error XML, seeded probability, rule errors ---

wire=$("$SP_PYTHON" - "$PROXY_URL" "${instance:-i-none}" <<'EOF'
import http.client, json, sys, urllib.parse
url = urllib.parse.urlsplit(sys.argv[1])
instance = sys.argv[2]
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
AUTH = ("AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/ec2/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64)

def call(method, path, body=b"", headers=None):
    conn.request(method, path, body, headers or {})
    resp = conn.getresponse()
    return resp.status, resp.read(), resp

def ec2(action, **params):
    form = urllib.parse.urlencode(dict(Action=action, Version="2016-11-15", **params))
    return call("POST", "/", form.encode(), {
        "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
        "Authorization": AUTH, "X-Amz-Date": "20260101T000000Z"})

def rules(doc):
    return call("POST", "/__fault__/rules", json.dumps(doc).encode())

results = []
rules([{"action": "DescribeInstances", "count": 1, "effect": "error",
        "code": "InvalidInstanceID.NotFound"}])
status, body, resp = ec2("DescribeInstances", **{"InstanceId.1": instance})
status2, body2, resp2 = ec2("DescribeInstances", **{"InstanceId.1": instance})
results.append((status, resp.getheader("Content-Type"),
                b"<Code>InvalidInstanceID.NotFound</Code>" in body and
                ("'%s'" % instance).encode() in body,
                status2, instance.encode() in body2 and b"<Errors>" not in body2))
fires = []
for _ in range(2):
    rules([{"action": "DescribeRegions", "probability": 0.5, "seed": 7, "effect": "status",
            "status": 503}])
    fires.append([ec2("DescribeRegions")[0] for _ in range(12)])
results.append((fires[0] == fires[1], sorted(set(fires[0]))))
status, body, _ = rules([{"effect": "explode"}])
results.append((status, "effect must be" in json.loads(body)["error"]))
log = json.loads(call("GET", "/__fault__/log")[1])
results.append(len(set(e["seq"] for e in log)) == len(log))
print(json.dumps(results))
EOF
) || wire="python failed"
if [ "$wire" = '[[400, "text/xml;charset=UTF-8", true, 200, true], [true, [200, 503]], [400, true], true]' ]; then
  ok "on one keep-alive connection: NotFound once after launch, a seeded coin, a bad rule refused"
else
  bad "wire checks" "$wire"
fi

sp_summary
