#!/usr/bin/env python3
"""A fault-injecting reverse proxy for the AWS provider's integration tests.

Clients point their endpoint at the proxy; it forwards every request to --upstream (moto_server
or quotas_fake.py) unchanged (method, path, query, headers, body; upstream status, headers and
body come back unchanged, less hop-by-hop headers) unless a fault rule fires. Rules and the log
of every request are driven over HTTP on the proxy itself:

  POST   /__fault__/rules   a JSON list of rules (or {"rules": [...]}): replaces the rules
  GET    /__fault__/rules   the rules with their counters ("matched", "fired")
  DELETE /__fault__/rules   no rules: plain forwarding
  GET    /__fault__/log     every request seen, oldest first
  DELETE /__fault__/log     forget them

A rule (every key optional except that an effect needs its arguments; see README.md):
  {"name": "cap-1a", "action": "RunInstances", "params": {"Placement.AvailabilityZone":
   "us-east-1a"}, "region": "us-east-1", "service": "ec2", "probability": 0.5, "seed": 7,
   "skip": 0, "count": 1, "effect": "error", "code": "InsufficientInstanceCapacity",
   "message": "...", "status": 500, "delay_ms": 0, "forward": false, "mode": "close"}
Effects: "error" (EC2 XML, or a JSON 1.1 error when the request has X-Amz-Target),
"ec2_error", "json_error", "status" (a bare HTTP status, no body), "delay" (sleep delay_ms,
then forward), "drop" (close the connection without an answer; mode "reset" sends a TCP RST).
"forward": true forwards the request first (so moto performs it) and then applies the effect.

Only 127.0.0.1 is served. First stdout line: the port. Stops on SIGTERM/SIGINT, --lifetime,
--idle or when --watch-pid's process is gone. Standard library only.
"""
import argparse
import http.client
import http.server
import json
import os
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse
import uuid
from xml.sax.saxutils import escape

from serving import read_body, run

# Status codes AWS sends with each EC2 error code (docs/aws-quotas.md lists the evidence).
EC2_ERRORS = {
    "InsufficientInstanceCapacity": (
        500, "We currently do not have sufficient {InstanceType} capacity in the Availability "
             "Zone you requested ({AvailabilityZone}). Our system will be working on "
             "provisioning additional capacity. You can currently get {InstanceType} capacity "
             "by not specifying an Availability Zone in your request or choosing other "
             "Availability Zones."),
    "InsufficientHostCapacity": (500, "There is not enough capacity to fulfill your Dedicated "
                                      "Host request."),
    "InsufficientCapacity": (500, "There is not enough capacity to fulfill your request."),
    "InternalError": (500, "An internal error has occurred."),
    "Unavailable": (503, "The server is overloaded and can't handle the request."),
    "RequestLimitExceeded": (503, "Request limit exceeded."),
    "VcpuLimitExceeded": (
        400, "You have requested more vCPU capacity than your current vCPU limit of 0 allows "
             "for the instance bucket that the specified instance type belongs to. Please "
             "visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to "
             "this limit."),
    "MaxSpotInstanceCountExceeded": (400, "Max spot instance count exceeded"),
    "InstanceLimitExceeded": (400, "Your quota allows for 0 more running instance(s). You "
                                   "requested at least 1."),
    "SpotMaxPriceTooLow": (400, "Your Spot request price is lower than the minimum required "
                                "Spot request fulfillment price."),
    "Unsupported": (400, "Your requested instance type ({InstanceType}) is not supported in "
                         "your requested Availability Zone ({AvailabilityZone})."),
    "AuthFailure": (401, "AWS was not able to validate the provided access credentials"),
    "UnauthorizedOperation": (403, "You are not authorized to perform this operation."),
    "InvalidInstanceID.NotFound": (400, "The instance ID '{InstanceId.1}' does not exist"),
    "InvalidParameterValue": (400, "Invalid value for a parameter."),
}
JSON_ERRORS = {
    "TooManyRequestsException": (400, "Rate exceeded"),
    "ThrottlingException": (400, "Rate exceeded"),
    "ServiceException": (500, "Something went wrong."),
    "AccessDeniedException": (400, "You do not have sufficient permission to perform this "
                                   "action."),
    "NoSuchResourceException": (400, "The request failed because the specified service quota "
                                     "does not exist."),
    "IllegalArgumentException": (400, "Invalid input was provided."),
}
EFFECTS = ("error", "ec2_error", "json_error", "status", "delay", "drop")
RULE_KEYS = {"name", "action", "params", "region", "service", "probability", "seed", "skip",
             "count", "effect", "code", "message", "status", "delay_ms", "forward", "mode"}
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailer", "trailers", "transfer-encoding", "upgrade", "proxy-connection"}
LOG_LIMIT = 20000
CREDENTIAL_RE = re.compile(r"Credential=[^/,\s]+/\d{8}/([^/,\s]+)/([^/,\s]+)/aws4_request")


class RuleError(ValueError):
    pass


class Rule:
    """One fault rule, its counters and its own seeded RNG (so runs are reproducible)."""

    def __init__(self, doc, index, seed):
        if not isinstance(doc, dict):
            raise RuleError("rule %d is not an object" % index)
        unknown = set(doc) - RULE_KEYS
        if unknown:
            raise RuleError("rule %d: unknown keys %s" % (index, sorted(unknown)))
        self.doc = doc
        self.name = str(doc.get("name", "rule%d" % index))
        actions = doc.get("action")
        self.actions = None if actions in (None, "*") else \
            set([actions] if isinstance(actions, str) else actions)
        self.params = doc.get("params") or {}
        if not isinstance(self.params, dict):
            raise RuleError("rule %s: params must be an object" % self.name)
        self.region = doc.get("region")
        self.service = doc.get("service")
        self.probability = float(doc.get("probability", 1.0))
        self.skip = int(doc.get("skip", 0))
        self.count = doc.get("count")
        self.effect = doc.get("effect", "error")
        if self.effect not in EFFECTS:
            raise RuleError("rule %s: effect must be one of %s" % (self.name, ", ".join(EFFECTS)))
        if self.effect in ("error", "ec2_error", "json_error") and "code" not in doc:
            raise RuleError("rule %s: effect %s needs a code" % (self.name, self.effect))
        if self.effect == "status" and "status" not in doc:
            raise RuleError("rule %s: effect status needs a status" % self.name)
        if self.effect == "delay" and "delay_ms" not in doc:
            raise RuleError("rule %s: effect delay needs delay_ms" % self.name)
        if doc.get("mode", "close") not in ("close", "reset"):
            raise RuleError("rule %s: mode is close or reset" % self.name)
        self.rng = random.Random(doc["seed"] if "seed" in doc else seed * 1000003 + index)
        self.matched = 0
        self.fired = 0

    def matches(self, req):
        if self.actions is not None and req["action"] not in self.actions:
            return False
        if self.region is not None and req["region"] != self.region:
            return False
        if self.service is not None and req["service"] != self.service:
            return False
        for key, want in self.params.items():
            have = req["params"].get(key) if isinstance(req["params"], dict) else None
            wants = want if isinstance(want, list) else [want]
            if have is None or str(have) not in [str(w) for w in wants]:
                return False
        return True

    def fires(self):
        """Counts a match; says whether the rule fires for it (skip, count, probability)."""
        self.matched += 1
        if self.matched <= self.skip:
            return False
        if self.count is not None and self.fired >= int(self.count):
            return False
        if self.probability < 1.0 and self.rng.random() >= self.probability:
            return False
        self.fired += 1
        return True

    def describe(self):
        return dict(self.doc, name=self.name, matched=self.matched, fired=self.fired)


def parse_request(method, path, headers, body):
    """What a rule can match on: action, service, region, parameters."""
    url = urllib.parse.urlsplit(path)
    target = headers.get("X-Amz-Target")
    params = {}
    content_type = headers.get("Content-Type", "").lower()
    if target:
        try:
            params = json.loads(body or b"{}")
        except ValueError:
            params = {}
    else:
        pairs = urllib.parse.parse_qsl(url.query, keep_blank_values=True)
        if "x-www-form-urlencoded" in content_type or (body and not content_type):
            pairs += urllib.parse.parse_qsl(body.decode("utf-8", "replace"),
                                            keep_blank_values=True)
        for key, value in pairs:
            if key in params:
                old = params[key]
                params[key] = (old if isinstance(old, list) else [old]) + [value]
            else:
                params[key] = value
    match = CREDENTIAL_RE.search(headers.get("Authorization", ""))
    action = target.rpartition(".")[2] if target else \
        (params.get("Action") if isinstance(params, dict) else None)
    return {
        "method": method, "path": url.path, "query": url.query, "target": target,
        "action": action, "service": match.group(2) if match else None,
        "region": match.group(1) if match else None, "params": params,
        "headers": {k.lower(): v for k, v in headers.items()},
    }


def fill(template, req):
    params = req["params"] if isinstance(req["params"], dict) else {}
    values = {"InstanceType": params.get("InstanceType", "instance"),
              "AvailabilityZone": params.get("Placement.AvailabilityZone", "unspecified"),
              "Region": req["region"] or "", "Action": req["action"] or ""}
    values.update({k: v for k, v in params.items() if isinstance(v, str)})
    return re.sub(r"\{([A-Za-z0-9_.]+)\}", lambda m: str(values.get(m.group(1), m.group(0))),
                  template)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fault-proxy"
    timeout = 120

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fault_proxy: " + fmt % args + "\n")

    def read_body(self):
        return read_body(self)

    def answer(self, status, headers, body, reason=None):
        self.send_response(status, reason)
        for name, value in headers:
            if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_response(self, code, message=None):
        # No Server or Date of our own: a forwarded answer carries the upstream's unchanged.
        self.log_request(code)
        self.send_response_only(code, message)

    def handle_any(self):
        self.server.touch()
        body = self.read_body()
        path = urllib.parse.urlsplit(self.path).path
        if path.startswith("/__fault__/"):
            self.control(path, body)
        else:
            self.proxy(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = handle_any

    # -- control endpoints --

    def control(self, path, body):
        srv = self.server
        try:
            if path == "/__fault__/rules" and self.command == "POST":
                doc = json.loads(body or b"[]")
                docs = doc.get("rules") if isinstance(doc, dict) else doc
                if not isinstance(docs, list):
                    raise RuleError("expected a JSON list of rules")
                rules = [Rule(d, i, srv.seed) for i, d in enumerate(docs)]
                with srv.lock:
                    srv.rules = rules
                out = {"rules": len(rules)}
            elif path == "/__fault__/rules" and self.command == "GET":
                with srv.lock:
                    out = [r.describe() for r in srv.rules]
            elif path == "/__fault__/rules" and self.command == "DELETE":
                with srv.lock:
                    srv.rules = []
                out = {"rules": 0}
            elif path == "/__fault__/log" and self.command == "GET":
                with srv.lock:
                    out = list(srv.log)
            elif path == "/__fault__/log" and self.command == "DELETE":
                with srv.lock:
                    srv.log = []
                out = {"log": 0}
            else:
                self.send_json(404, {"error": "no %s %s" % (self.command, path)})
                return
        except (ValueError, TypeError) as e:
            self.send_json(400, {"error": str(e)})
            return
        self.send_json(200, out)

    def send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    # -- proxying --

    def choose_rule(self, req):
        with self.server.lock:
            for rule in self.server.rules:
                if rule.matches(req) and rule.fires():
                    return rule
        return None

    def proxy(self, body):
        started = time.monotonic()
        req = parse_request(self.command, self.path, self.headers, body)
        entry = {"seq": 0, "time": round(time.time(), 3), "method": req["method"],
                 "path": req["path"], "query": req["query"], "target": req["target"],
                 "service": req["service"], "region": req["region"], "action": req["action"],
                 "params": req["params"], "headers": req["headers"], "rule": None,
                 "effect": "forward", "status": None}
        rule = self.choose_rule(req)
        try:
            if rule is None:
                entry["status"] = self.forward(body)
            else:
                entry["rule"], entry["effect"] = rule.name, rule.effect
                entry["status"] = self.apply(rule, req, body)
        finally:
            entry["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
            with self.server.lock:
                self.server.seq += 1
                entry["seq"] = self.server.seq
                self.server.log.append(entry)
                del self.server.log[:-LOG_LIMIT]

    def upstream(self, body):
        """Sends the request on; returns (status, reason, headers, body) or None if unreachable."""
        up = self.server.upstream
        conn = http.client.HTTPConnection(up.hostname, up.port or 80, timeout=300)
        headers = {}
        try:
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                # The proxy answered any Expect: 100-continue itself and sets the length anew.
                if name.lower() not in HOP_BY_HOP and name.lower() not in ("content-length",
                                                                            "expect"):
                    conn.putheader(name, value)
            if body or self.command in ("POST", "PUT", "PATCH"):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body or None)
            resp = conn.getresponse()
            data = resp.read()
            headers = resp.getheaders()
            return resp.status, resp.reason, headers, data
        except OSError as e:
            sys.stderr.write("fault_proxy: upstream %s: %s\n" % (up.geturl(), e))
            return None
        finally:
            conn.close()

    def forward(self, body):
        result = self.upstream(body)
        if result is None:
            self.answer(502, [("Content-Type", "text/plain")], b"fault_proxy: upstream unreachable")
            return 502
        status, reason, headers, data = result
        self.answer(status, headers, data, reason)
        return status

    def apply(self, rule, req, body):
        doc = rule.doc
        if doc.get("delay_ms"):
            time.sleep(float(doc["delay_ms"]) / 1000)
        if rule.effect == "delay":
            return self.forward(body)
        if doc.get("forward"):
            self.upstream(body)
        if rule.effect == "drop":
            self.drop(doc.get("mode", "close"))
            return None
        if rule.effect == "status":
            self.answer(int(doc["status"]), [], b"")
            return int(doc["status"])
        as_json = rule.effect == "json_error" or (rule.effect == "error" and req["target"])
        return self.json_error(doc, req) if as_json else self.ec2_error(doc, req)

    def ec2_error(self, doc, req):
        status, message = EC2_ERRORS.get(doc["code"], (400, "%s" % doc["code"]))
        status = int(doc.get("status", status))
        message = fill(doc.get("message", message), req)
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>%s</Code>'
                "<Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>"
                % (escape(doc["code"]), escape(message), uuid.uuid4())).encode()
        self.answer(status, [("Content-Type", "text/xml;charset=UTF-8"),
                             ("Server", "AmazonEC2")], body)
        return status

    def json_error(self, doc, req):
        status, message = JSON_ERRORS.get(doc["code"], (400, "%s" % doc["code"]))
        status = int(doc.get("status", status))
        body = json.dumps({"__type": doc["code"],
                           "Message": fill(doc.get("message", message), req)}).encode()
        self.answer(status, [("Content-Type", "application/x-amz-json-1.1"),
                             ("x-amzn-RequestId", str(uuid.uuid4())),
                             ("x-amzn-ErrorType", doc["code"] + ":")], body)
        return status

    def drop(self, mode):
        self.close_connection = True
        sock = self.connection
        try:
            if mode == "reset":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
            else:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port, upstream, seed, verbose):
        super().__init__(("127.0.0.1", port), Handler)
        self.upstream = upstream
        self.seed = seed
        self.verbose = verbose
        self.lock = threading.Lock()
        self.rules = []
        self.log = []
        self.seq = 0
        self.last_activity = time.monotonic()

    def touch(self):
        self.last_activity = time.monotonic()

    def shutdown_request(self, request):
        try:
            super().shutdown_request(request)
        except OSError:
            pass




def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--upstream", required=True, help="http://127.0.0.1:PORT to forward to")
    parser.add_argument("--seed", type=int, default=0, help="seeds rules without their own seed")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--port-file", help="also write the port to this file")
    parser.add_argument("--lifetime", type=float, default=600, help="stop after N s (0: never)")
    parser.add_argument("--idle", type=float, default=0, help="stop after N s idle (0: never)")
    parser.add_argument("--watch-pid", type=int, help="stop when this process is gone")
    parser.add_argument("--verbose", action="store_true", help="log requests to stderr")
    args = parser.parse_args()
    upstream = urllib.parse.urlsplit(args.upstream)
    if upstream.scheme != "http" or not upstream.hostname:
        parser.error("--upstream must be http://HOST:PORT")
    run(Server(args.port, upstream, args.seed, args.verbose), args, "fault_proxy")


if __name__ == "__main__":
    main()
