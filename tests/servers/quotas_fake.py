#!/usr/bin/env python3
"""A small stateful fake of AWS Service Quotas (service code ec2) for integration tests.

moto_server has no Service Quotas for ec2, so the AWS provider's quota checks are tested
against this. It speaks the JSON 1.1 protocol the way AWS does (POST /, X-Amz-Target:
ServiceQuotasV20190624.<Operation>, Content-Type: application/x-amz-json-1.1, errors as
{"__type": ..., "Message": ...}); shapes follow botocore's service-quotas/2019-06-24 model.

Quota values live per region (taken from the SigV4 credential scope of each request) and per
quota code, starting from the AWS defaults in docs/aws-quotas.md. Tests change them through
the admin endpoints, which need no signature:

  POST /__admin__/quota     {"region": R, "code": C, "value": V}  (or a list of them)
  POST /__admin__/approve   {"id": ID} or {} for every open request; "status" sets another
                            outcome (DENIED, CASE_OPENED, ...); APPROVED applies DesiredValue
  POST /__admin__/config    {"auto_approve": true}: increase requests are approved at once
  POST /__admin__/reset     back to the defaults, no requests, no recorded calls
  GET  /__admin__/state     {"quotas", "defaults", "requests", "calls", "config"}

Only 127.0.0.1 is served. The first line on stdout is the port (--port 0 picks a free one);
--port-file writes it to a file too. The server stops on SIGTERM/SIGINT, after --lifetime
seconds, after --idle seconds without a request, or when --watch-pid's process is gone.
Standard library only.
"""
import argparse
import base64
import hashlib
import hmac
import http.server
import json
import os
import re
import secrets
import signal
import sys
import threading
import time
import urllib.parse
import uuid

from serving import read_body, run

TARGET_PREFIX = "ServiceQuotasV20190624."
JSON_TYPE = "application/x-amz-json-1.1"
SERVICE_CODE = "ec2"
SERVICE_NAME = "Amazon Elastic Compute Cloud (Amazon EC2)"
ACCOUNT = "123456789012"

# code, name, usage-metric class, AWS default (vCPUs). Sources: docs/aws-quotas.md.
QUOTAS = [
    ("L-417A185B", "Running On-Demand P instances", "P/OnDemand", 0.0),
    ("L-DB2E81BA", "Running On-Demand G and VT instances", "G/OnDemand", 0.0),
    ("L-1945791B", "Running On-Demand Inf instances", "Inf/OnDemand", 0.0),
    ("L-2C3B7624", "Running On-Demand Trn instances", "Trn/OnDemand", 0.0),
    ("L-6E869C2A", "Running On-Demand DL instances", "DL/OnDemand", 0.0),
    ("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances",
     "Standard/OnDemand", 5.0),
    ("L-7212CCBC", "All P4, P3 and P2 Spot Instance Requests", "P/Spot", 0.0),
    ("L-C4BD4855", "All P5 Spot Instance Requests", "P5/Spot", 0.0),
    ("L-3819A6DF", "All G and VT Spot Instance Requests", "G/Spot", 0.0),
    ("L-B5D1601B", "All Inf Spot Instance Requests", "Inf/Spot", 0.0),
    ("L-6B0D517C", "All Trn Spot Instance Requests", "Trn/Spot", 0.0),
    ("L-85EED4F7", "All DL Spot Instance Requests", "DL/Spot", 0.0),
    ("L-34B43A08", "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests",
     "Standard/Spot", 5.0),
]
QUOTA_BY_CODE = {q[0]: q for q in QUOTAS}

STATUSES = ("PENDING", "CASE_OPENED", "APPROVED", "DENIED", "CASE_CLOSED", "NOT_APPROVED",
            "INVALID_REQUEST")
OPEN_STATUSES = ("PENDING", "CASE_OPENED")
CODE_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]{1,128}$")
REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
AMZ_DATE_RE = re.compile(r"^\d{8}T\d{6}Z$")


class ApiError(Exception):
    """An error answered as JSON 1.1: {"__type": kind, "Message": message}."""

    def __init__(self, kind, message, status=400):
        super().__init__(message)
        self.kind, self.message, self.status = kind, message, status


def now():
    return round(time.time(), 3)


class State:
    """Quota values per region, increase requests and a record of API calls; one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.values = {}        # region -> {code: value}
        self.requests = []      # dicts shaped like RequestedServiceQuotaChange, plus Region
        self.calls = []
        self.auto_approve = False

    def region(self, region):
        return self.values.setdefault(region, {q[0]: q[3] for q in QUOTAS})


def quota_arn(region, code, account=ACCOUNT):
    return "arn:aws:servicequotas:%s:%s:%s/%s" % (region, account, SERVICE_CODE, code)


def quota_shape(region, code, value, default=False):
    _, name, klass, _ = QUOTA_BY_CODE[code]
    return {
        "ServiceCode": SERVICE_CODE,
        "ServiceName": SERVICE_NAME,
        "QuotaArn": quota_arn(region, code, "" if default else ACCOUNT),
        "QuotaCode": code,
        "QuotaName": name,
        "Value": float(value),
        "Unit": "None",
        "Adjustable": True,
        "GlobalQuota": False,
        "UsageMetric": {
            "MetricNamespace": "AWS/Usage",
            "MetricName": "ResourceCount",
            "MetricDimensions": {"Class": klass, "Resource": "vCPU", "Service": "EC2",
                                 "Type": "Resource"},
            "MetricStatisticRecommendation": "Maximum",
        },
        "QuotaAppliedAtLevel": "ACCOUNT",
    }


# ---- request validation (botocore's model: required members, patterns, ranges) ----

def check_members(params, required, optional):
    for name in required:
        if name not in params:
            raise ApiError("IllegalArgumentException", "Missing required parameter: %s" % name)
    for name in params:
        if name not in required and name not in optional:
            raise ApiError("SerializationException", "Unknown member '%s' in request" % name)


def check_string(params, name, pattern=None, maxlen=None):
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or (pattern and not pattern.match(value)) or \
            (maxlen and len(value) > maxlen):
        raise ApiError("IllegalArgumentException", "Invalid value for %s: %r" % (name, value))
    return value


def check_service(params):
    code = check_string(params, "ServiceCode", CODE_RE, 63)
    if code is not None and code != SERVICE_CODE:
        raise ApiError("NoSuchResourceException",
                       "The request failed because the specified service does not exist.")
    return code


def check_quota_code(params):
    code = check_string(params, "QuotaCode", CODE_RE, 128)
    if code is not None and code not in QUOTA_BY_CODE:
        raise ApiError("NoSuchResourceException",
                       "The request failed because the specified service quota does not exist.")
    return code


def check_max_results(params):
    value = params.get("MaxResults", 100)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100:
        raise ApiError("IllegalArgumentException",
                       "Invalid value for MaxResults: %r (1 to 100)" % (value,))
    return value


def check_status(params):
    status = params.get("Status")
    if status is not None and status not in STATUSES:
        raise ApiError("IllegalArgumentException", "Invalid value for Status: %r" % (status,))
    return status


def check_level(params, name):
    level = params.get(name)
    if level is not None and level not in ("ACCOUNT", "RESOURCE", "ALL"):
        raise ApiError("IllegalArgumentException", "Invalid value for %s: %r" % (name, level))


# Tokens name the operation and the offset, so a token from one listing is refused by another.
def encode_token(op, offset):
    return base64.b64encode(("%s|%d" % (op, offset)).encode()).decode()


def decode_token(op, token):
    if token is None:
        return 0
    try:
        kind, offset = base64.b64decode(token, validate=True).decode().split("|")
        if kind == op and int(offset) >= 0:
            return int(offset)
    except (ValueError, UnicodeDecodeError):
        pass
    raise ApiError("InvalidPaginationTokenException", "Invalid pagination token.")


def page(op, items, params, key):
    limit = check_max_results(params)
    start = decode_token(op, params.get("NextToken"))
    out = {key: items[start:start + limit]}
    if start + limit < len(items):
        out["NextToken"] = encode_token(op, start + limit)
    return out


# ---- operations ----

def op_get_service_quota(state, region, params):
    check_members(params, ("ServiceCode", "QuotaCode"), ("ContextId",))
    check_service(params)
    code = check_quota_code(params)
    return {"Quota": quota_shape(region, code, state.region(region)[code])}


def op_get_default_quota(state, region, params):
    check_members(params, ("ServiceCode", "QuotaCode"), ())
    check_service(params)
    code = check_quota_code(params)
    return {"Quota": quota_shape(region, code, QUOTA_BY_CODE[code][3], default=True)}


def op_list_service_quotas(state, region, params):
    check_members(params, ("ServiceCode",),
                  ("NextToken", "MaxResults", "QuotaCode", "QuotaAppliedAtLevel"))
    check_service(params)
    check_level(params, "QuotaAppliedAtLevel")
    code = check_quota_code(params)
    values = state.region(region)
    items = [quota_shape(region, c, values[c]) for c in sorted(values) if code in (None, c)]
    return page("ListServiceQuotas", items, params, "Quotas")


def op_list_default_quotas(state, region, params):
    check_members(params, ("ServiceCode",), ("NextToken", "MaxResults"))
    check_service(params)
    items = [quota_shape(region, q[0], q[3], default=True) for q in sorted(QUOTAS)]
    return page("ListAWSDefaultServiceQuotas", items, params, "Quotas")


def public_request(req):
    return {k: v for k, v in req.items() if k != "Region"}


def op_request_increase(state, region, params):
    check_members(params, ("ServiceCode", "QuotaCode", "DesiredValue"),
                  ("ContextId", "SupportCaseAllowed"))
    check_service(params)
    code = check_quota_code(params)
    desired = params["DesiredValue"]
    if isinstance(desired, bool) or not isinstance(desired, (int, float)) or \
            not 0 <= desired <= 1e10:
        raise ApiError("IllegalArgumentException", "Invalid value for DesiredValue: %r" % desired)
    current = state.region(region)[code]
    if desired <= current:
        raise ApiError("IllegalArgumentException",
                       "The desired value %s must be greater than the current value %s."
                       % (float(desired), current))
    for req in state.requests:
        if req["Region"] == region and req["QuotaCode"] == code and \
                req["Status"] in OPEN_STATUSES:
            raise ApiError("ResourceAlreadyExistsException",
                           "A request for this quota is already open: %s" % req["Id"])
    stamp = now()
    req = {
        "Id": secrets.token_hex(20),
        "ServiceCode": SERVICE_CODE,
        "ServiceName": SERVICE_NAME,
        "QuotaCode": code,
        "QuotaName": QUOTA_BY_CODE[code][1],
        "DesiredValue": float(desired),
        "Status": "PENDING",
        "Created": stamp,
        "LastUpdated": stamp,
        "Requester": json.dumps({"accountId": ACCOUNT,
                                 "callerArn": "arn:aws:iam::%s:user/test" % ACCOUNT}),
        "QuotaArn": quota_arn(region, code),
        "GlobalQuota": False,
        "Unit": "None",
        "QuotaRequestedAtLevel": "ACCOUNT",
        "Region": region,
    }
    state.requests.append(req)
    if state.auto_approve:
        settle(state, req, "APPROVED")
    return {"RequestedQuota": public_request(req)}


def op_get_requested_change(state, region, params):
    check_members(params, ("RequestId",), ())
    for req in state.requests:
        if req["Id"] == params["RequestId"] and req["Region"] == region:
            return {"RequestedQuota": public_request(req)}
    raise ApiError("NoSuchResourceException",
                   "The request failed because the specified request does not exist.")


def op_list_history(state, region, params):
    check_members(params, (), ("ServiceCode", "Status", "NextToken", "MaxResults",
                               "QuotaRequestedAtLevel"))
    check_service(params)
    check_level(params, "QuotaRequestedAtLevel")
    status = check_status(params)
    items = [public_request(r) for r in state.requests
             if r["Region"] == region and status in (None, r["Status"])]
    return page("ListRequestedServiceQuotaChangeHistory", items, params, "RequestedQuotas")


def op_list_history_by_quota(state, region, params):
    check_members(params, ("ServiceCode", "QuotaCode"),
                  ("Status", "NextToken", "MaxResults", "QuotaRequestedAtLevel"))
    check_service(params)
    check_level(params, "QuotaRequestedAtLevel")
    code = check_quota_code(params)
    status = check_status(params)
    items = [public_request(r) for r in state.requests
             if r["Region"] == region and r["QuotaCode"] == code and status in (None, r["Status"])]
    return page("ListRequestedServiceQuotaChangeHistoryByQuota", items, params, "RequestedQuotas")


OPERATIONS = {
    "GetServiceQuota": op_get_service_quota,
    "GetAWSDefaultServiceQuota": op_get_default_quota,
    "ListServiceQuotas": op_list_service_quotas,
    "ListAWSDefaultServiceQuotas": op_list_default_quotas,
    "RequestServiceQuotaIncrease": op_request_increase,
    "GetRequestedServiceQuotaChange": op_get_requested_change,
    "ListRequestedServiceQuotaChangeHistory": op_list_history,
    "ListRequestedServiceQuotaChangeHistoryByQuota": op_list_history_by_quota,
}


def settle(state, req, status):
    req["Status"] = status
    req["LastUpdated"] = now()
    if status == "CASE_OPENED" and "CaseId" not in req:
        req["CaseId"] = "%d" % (170000000000 + len(state.requests))
    if status == "APPROVED":
        state.region(req["Region"])[req["QuotaCode"]] = req["DesiredValue"]


# ---- SigV4 ----

def parse_authorization(headers):
    """Returns the credential scope's region; raises ApiError as AWS would on a bad header."""
    auth = headers.get("Authorization")
    if not auth:
        raise ApiError("MissingAuthenticationTokenException", "Missing Authentication Token", 403)
    algorithm, _, rest = auth.partition(" ")
    fields = {}
    for part in rest.split(","):
        key, _, value = part.strip().partition("=")
        fields[key] = value
    scope = fields.get("Credential", "").split("/")
    if algorithm != "AWS4-HMAC-SHA256" or len(scope) != 5 or scope[4] != "aws4_request" or \
            "SignedHeaders" not in fields or not re.fullmatch(r"[0-9a-f]{64}",
                                                              fields.get("Signature", "")):
        raise ApiError("IncompleteSignatureException",
                       "Authorization header requires 'Credential', 'Signature' and "
                       "'SignedHeaders' (AWS4-HMAC-SHA256). Authorization=%s" % auth)
    _, day, region, service, _ = scope
    if service != "servicequotas":
        raise ApiError("InvalidSignatureException",
                       "Credential should be scoped to correct service: 'servicequotas'.", 403)
    if not REGION_RE.match(region):
        raise ApiError("InvalidSignatureException",
                       "Credential should be scoped to a valid region, not '%s'." % region, 403)
    amz_date = headers.get("X-Amz-Date", "")
    if not AMZ_DATE_RE.match(amz_date) or amz_date[:8] != day:
        raise ApiError("IncompleteSignatureException",
                       "X-Amz-Date must be YYYYMMDDTHHMMSSZ on the credential scope's day "
                       "(%s); got %r." % (day, amz_date))
    signed = fields["SignedHeaders"].split(";")
    if "host" not in signed:
        raise ApiError("IncompleteSignatureException", "'Host' must be a signed header.")
    return region, fields, scope


def canonical_query(query):
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    quote = lambda s: urllib.parse.quote(s, safe="-_.~")
    return "&".join("%s=%s" % (quote(k), quote(v)) for k, v in sorted(pairs))


def verify_signature(secret, method, path, headers, body, fields, scope):
    url = urllib.parse.urlsplit(path)
    signed = fields["SignedHeaders"].split(";")
    lines = []
    for name in signed:
        values = headers.get_all(name) or []
        lines.append("%s:%s\n" % (name, ",".join(" ".join(v.split()) for v in values)))
    payload = headers.get("X-Amz-Content-Sha256") or hashlib.sha256(body).hexdigest()
    canonical = "\n".join([method, urllib.parse.quote(url.path or "/", safe="/-_.~"),
                           canonical_query(url.query), "".join(lines), ";".join(signed),
                           payload])
    to_sign = "\n".join(["AWS4-HMAC-SHA256", headers["X-Amz-Date"], "/".join(scope[1:]),
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret).encode()
    for part in scope[1:]:
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, fields["Signature"]):
        raise ApiError("InvalidSignatureException",
                       "The request signature we calculated does not match the signature you "
                       "provided.\n\nThe Canonical String for this request should have been\n"
                       "'%s'\n\nThe String-to-Sign should have been\n'%s'\n" % (canonical, to_sign),
                       403)


# ---- HTTP ----

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "quotas-fake"
    timeout = 120

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("quotas_fake: " + fmt % args + "\n")

    def read_body(self):
        return read_body(self)

    def send(self, status, body, content_type, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, status, obj, content_type="application/json"):
        self.send(status, json.dumps(obj).encode(), content_type)

    def send_api_error(self, err):
        body = json.dumps({"__type": err.kind, "Message": err.message}).encode()
        self.send(err.status, body, JSON_TYPE, [("x-amzn-ErrorType", err.kind + ":")])

    def do_GET(self):
        self.server.touch()
        if urllib.parse.urlsplit(self.path).path == "/__admin__/state":
            self.read_body()
            state = self.server.state
            with state.lock:
                self.send_json(200, {
                    "quotas": state.values,
                    "defaults": {q[0]: {"name": q[1], "value": q[3]} for q in QUOTAS},
                    "requests": state.requests,
                    "calls": state.calls,
                    "config": {"auto_approve": state.auto_approve},
                })
            return
        self.read_body()
        self.send_json(404, {"message": "Not Found"})

    do_HEAD = do_GET

    def do_POST(self):
        self.server.touch()
        body = self.read_body()
        path = urllib.parse.urlsplit(self.path).path
        if path.startswith("/__admin__/"):
            self.admin(path, body)
        else:
            self.api(path, body)

    def do_PUT(self):
        self.server.touch()
        self.read_body()
        self.send_api_error(ApiError("UnknownOperationException", "Unknown operation", 404))

    do_DELETE = do_PATCH = do_PUT

    # -- admin --

    def admin(self, path, body):
        try:
            doc = json.loads(body or b"{}")
        except ValueError as e:
            self.send_json(400, {"error": "body is not JSON: %s" % e})
            return
        state = self.server.state
        try:
            with state.lock:
                if path == "/__admin__/quota":
                    out = self.admin_quota(state, doc)
                elif path == "/__admin__/approve":
                    out = self.admin_approve(state, doc)
                elif path == "/__admin__/config":
                    if not isinstance(doc, dict) or set(doc) - {"auto_approve"}:
                        raise ValueError('config takes {"auto_approve": true|false}')
                    state.auto_approve = bool(doc.get("auto_approve", state.auto_approve))
                    out = {"auto_approve": state.auto_approve}
                elif path == "/__admin__/reset":
                    state.reset()
                    out = {"reset": True}
                else:
                    self.send_json(404, {"error": "no admin endpoint %s" % path})
                    return
        except ValueError as e:
            self.send_json(400, {"error": str(e)})
            return
        self.send_json(200, out)

    @staticmethod
    def admin_quota(state, doc):
        items = doc if isinstance(doc, list) else [doc]
        for item in items:
            if not isinstance(item, dict) or set(item) - {"region", "code", "value"}:
                raise ValueError('quota takes {"region": R, "code": C, "value": V} or a list')
            region, code, value = item.get("region"), item.get("code"), item.get("value")
            if not isinstance(region, str) or not REGION_RE.match(region):
                raise ValueError("bad region %r" % (region,))
            if code not in QUOTA_BY_CODE:
                raise ValueError("unknown quota code %r (known: %s)"
                                 % (code, ", ".join(sorted(QUOTA_BY_CODE))))
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError("bad value %r" % (value,))
        for item in items:
            state.region(item["region"])[item["code"]] = float(item["value"])
        return {"set": len(items)}

    @staticmethod
    def admin_approve(state, doc):
        if not isinstance(doc, dict) or set(doc) - {"id", "status"}:
            raise ValueError('approve takes {"id": ID, "status": S}, both optional')
        status = doc.get("status", "APPROVED")
        if status not in STATUSES:
            raise ValueError("bad status %r" % (status,))
        if "id" in doc:
            chosen = [r for r in state.requests if r["Id"] == doc["id"]]
            if not chosen:
                raise ValueError("no request %r" % (doc["id"],))
        else:
            chosen = [r for r in state.requests if r["Status"] in OPEN_STATUSES]
        for req in chosen:
            settle(state, req, status)
        return {"settled": [r["Id"] for r in chosen], "status": status}

    # -- API --

    def api(self, path, body):
        state = self.server.state
        call = {"time": now(), "op": None, "region": None, "params": None}
        try:
            target = self.headers.get("X-Amz-Target", "")
            if path != "/" or not target.startswith(TARGET_PREFIX):
                raise ApiError("UnknownOperationException", "Unknown operation %r" % target)
            op = call["op"] = target[len(TARGET_PREFIX):]
            region, fields, scope = parse_authorization(self.headers)
            call["region"] = region
            if self.server.secret is not None:
                verify_signature(self.server.secret, self.command, self.path, self.headers, body,
                                 fields, scope)
            content_type = self.headers.get("Content-Type", "").split(";")[0].strip()
            if content_type != JSON_TYPE:
                raise ApiError("SerializationException",
                               "Content-Type must be %s, not %r" % (JSON_TYPE, content_type))
            if op not in OPERATIONS:
                raise ApiError("UnknownOperationException", "Unknown operation %s" % op)
            try:
                params = json.loads(body or b"{}")
            except ValueError:
                raise ApiError("SerializationException", "Request body is not valid JSON")
            if not isinstance(params, dict):
                raise ApiError("SerializationException", "Request body must be a JSON object")
            call["params"] = params
            with state.lock:
                out = OPERATIONS[op](state, region, params)
                call["status"] = 200
                state.calls.append(call)
            self.send(200, json.dumps(out).encode(), JSON_TYPE)
        except ApiError as err:
            call.update(status=err.status, error=err.kind)
            with state.lock:
                state.calls.append(call)
            self.send_api_error(err)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port, secret, verbose):
        super().__init__(("127.0.0.1", port), Handler)
        self.state = State()
        self.secret = secret
        self.verbose = verbose
        self.last_activity = time.monotonic()

    def touch(self):
        self.last_activity = time.monotonic()




def common_args(parser):
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--port-file", help="also write the port to this file")
    parser.add_argument("--lifetime", type=float, default=600, help="stop after N s (0: never)")
    parser.add_argument("--idle", type=float, default=0, help="stop after N s idle (0: never)")
    parser.add_argument("--watch-pid", type=int, help="stop when this process is gone")
    parser.add_argument("--verbose", action="store_true", help="log requests to stderr")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common_args(parser)
    parser.add_argument("--verify-secret",
                        help="also verify SigV4 signatures with this secret access key")
    args = parser.parse_args()
    run(Server(args.port, args.verify_secret, args.verbose), args, "quotas_fake")


if __name__ == "__main__":
    main()
