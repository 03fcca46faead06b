#!/usr/bin/env python3
"""A stateful fake of the DigitalOcean API v2 (droplets, sizes, regions, account, SSH keys).

Prism serves the official OpenAPI spec but keeps no state; this fake keeps it, so that a
lifecycle (create, poll until active, list by tag, delete) can be tested, along with the
failures the real API gives: droplet limit, size not available in a region, rate limiting.
Answers follow the shapes of the official spec (../shared/contracts/digitalocean/openapi.yaml):
errors are {"id", "message", "request_id"}, lists page with page/per_page and carry
links.pages and meta.total, and every answer has ratelimit-limit/-remaining/-reset.

Sizes are the GPU sizes of catalog/digitalocean.tsv plus two CPU sizes. A new droplet is
"new" with no address; from its (--active-after + 1)-th sighting (GET of it, or a list page
holding it) on, it is "active" with the public IPv4 --public-ip and a private 10.x address.
As on DigitalOcean, GET /v2/droplets leaves GPU droplets out unless type=gpus.

A control API outside /v2 drives it (JSON in and out; 400 {"error": ...} on bad input):
  GET  /_fake/state      {"droplets", "keys", "tags", "log", "capacity", "faults", "config",
                          "ratelimit"}; the log has every /v2 request, Authorization redacted
  POST /_fake/reset      forget droplets, keys, tags, log, faults, capacity; config as started
  GET|POST|DELETE /_fake/faults    canned answers for matching requests (README.md)
  GET|POST /_fake/capacity         {"nyc2": {"gpu-h100x1-80gb": 0}}: droplets that still fit
  GET|POST /_fake/config           droplet_limit, active_after, public_ip, ratelimit, ...

Only 127.0.0.1 is served. The first line on stdout is the port (--port 0 picks a free one);
--port-file writes it to a file too. The server stops on SIGTERM/SIGINT, after --lifetime
seconds, after --idle seconds without a request, or when --watch-pid's process is gone.
Standard library only.
"""
import argparse
import base64
import binascii
import copy
import datetime
import hashlib
import http.server
import json
import math
import os
import re
import socket
import sys
import threading
import time
import urllib.parse
import uuid
import zlib

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from serving import read_body, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CATALOG = os.path.join(HERE, "..", "..", "catalog", "digitalocean.tsv")
CATALOG_COLUMNS = ["instance_type", "accelerator", "count", "accel_mem_mib", "vcpus", "mem_mib",
                   "price", "spot_price", "region", "zone", "arch"]

# DigitalOcean prices a month as 672 hours (4 weeks): 6.74/h -> 4529.28/month in the spec.
HOURS_PER_MONTH = 672
MAX_NAMES = 10           # "Up to ten Droplets may be created this way at a time." (the spec)
USER_DATA_MAX = 64 * 1024
NAME_RE = re.compile(r"^[a-zA-Z0-9]?[a-z0-9A-Z.\-]*[a-z0-9A-Z]$")   # droplet_single_create
TAG_RE = re.compile(r"^[a-zA-Z0-9_\-:]+$")                           # tag names, max 255
KEY_TYPES = ("ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
             "ecdsa-sha2-nistp521", "ssh-ed25519")
LOG_LIMIT = 20000
FIRST_DROPLET_ID = 100000001

# Error answers. Texts marked "real" were seen from api.digitalocean.com (README.md cites where);
# the others follow the spec's examples or are ours, in DigitalOcean's style.
MSG = {
    "unauthorized": "Unable to authenticate you.",                                   # spec, real
    "not_found": "The resource you were accessing could not be found.",             # spec, real
    "too_many_requests": "API rate limit exceeded.",                                # spec
    "server_error": "Unexpected server-side error",                                 # spec
    "droplet_limit": "creating this/these droplet(s) will exceed your droplet limit",  # real
    "size_unavailable": "Size is not available in this region.",                    # real
    "invalid_size": "You specified an invalid size for Droplet creation.",          # real
    "invalid_region": "You specified an invalid region for Droplet creation.",      # real
    "invalid_image": "You specified an invalid image for Droplet creation.",        # real
    "invalid_keys": "%s are invalid key identifiers for Droplet creation.",         # real
    "hostname": "Only valid hostname characters are allowed. (a-z, A-Z, 0-9, . and -)",  # real
    "key_in_use": "SSH Key is already in use on your account",                      # real
    "key_type": "Key invalid type, we support 'ssh-rsa', 'ssh-dss', 'ecdsa-sha2-nistp256', "
                "'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521', or 'ssh-ed25519'",    # real
    "key_invalid": "Fingerprint could not be generated, please make sure your key is valid",  # real
    "too_many_names": "You can only create up to %d Droplets at a time." % MAX_NAMES,  # ours
    "no_name": "Name is required.",                                                 # ours
    "name_and_names": "Send either name or names, not both.",                       # ours
    "tag_name": "Tag names may only contain letters, numbers, colons, dashes and underscores, "
                "up to 255 characters.",                                            # ours (spec)
    "user_data": "user_data must be plain text of at most 64 KiB.",                 # ours
    "tag_combined": "tag_name can not be combined with name or type.",              # ours (spec)
    "tag_required": "tag_name is required.",                                        # ours
}

REGION_NAMES = {
    "nyc1": "New York 1", "nyc2": "New York 2", "nyc3": "New York 3",
    "sfo2": "San Francisco 2", "sfo3": "San Francisco 3", "tor1": "Toronto 1",
    "atl1": "Atlanta 1", "ams3": "Amsterdam 3", "fra1": "Frankfurt 1", "lon1": "London 1",
    "sgp1": "Singapore 1", "blr1": "Bangalore 1", "syd1": "Sydney 1",
}
REGION_FEATURES = ["backups", "ipv6", "metadata", "install_agent", "storage", "image_transfer"]

# Ordinary sizes, so that clients must filter GPU sizes out of /v2/sizes (s-1vcpu-1gb as in the
# spec's example, s-2vcpu-4gb at $24 a month).
CPU_SIZES = [
    {"slug": "s-1vcpu-1gb", "memory": 1024, "vcpus": 1, "disk": 25, "transfer": 1.0,
     "price_monthly": 5.0, "price_hourly": 0.00743999984115362, "description": "Basic"},
    {"slug": "s-2vcpu-4gb", "memory": 4096, "vcpus": 2, "disk": 80, "transfer": 4.0,
     "price_monthly": 24.0, "price_hourly": 0.03571, "description": "Basic"},
]

# GPU model names as gpu_info.model spells them: nvidia_h100 is in the spec; the others follow
# its pattern (unverified).
GPU_MODELS = {
    "H100-SXM": ("nvidia_h100", "H100"), "H100": ("nvidia_h100", "H100"),
    "H200": ("nvidia_h200", "H200"), "L40S": ("nvidia_l40s", "L40S"),
    "MI300X": ("amd_mi300x", "MI300X"), "MI325X": ("amd_mi325x", "MI325X"),
    "RTX4000-Ada": ("nvidia_rtx_4000_ada", "RTX 4000 Ada"),
    "RTX6000-Ada": ("nvidia_rtx_6000_ada", "RTX 6000 Ada"),
}

KNOWN_IMAGES = {
    "ubuntu-22-04-x64": ("22.04 (LTS) x64", "Ubuntu"),
    "ubuntu-24-04-x64": ("24.04 (LTS) x64", "Ubuntu"),
    "gpu-h100x1-base": ("AI/ML Ready H100x1", "Ubuntu"),
    "gpu-h100x8-base": ("AI/ML Ready H100x8", "Ubuntu"),
    "gpu-amd-base": ("AI/ML Ready AMD", "Ubuntu"),
}


class ApiError(Exception):
    """An API error: HTTP status, DigitalOcean's error id and message."""

    def __init__(self, status, ident, message, headers=()):
        super().__init__(message)
        self.status, self.ident, self.message, self.headers = status, ident, message, headers


def unprocessable(message):
    return ApiError(422, "unprocessable_entity", message)


def not_found():
    return ApiError(404, "not_found", MSG["not_found"])


def dump(obj):
    """JSON as the API sends it: compact, UTF-8."""
    return json.dumps(obj, separators=(",", ":")).encode()


def iso_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---- the catalog: GPU sizes ----

def read_catalog(path):
    """{slug: {"accelerator", "count", "accel_mem_mib", "vcpus", "mem_mib", "price",
    "regions"}} from a skypool catalog file (catalog/README.md)."""
    sizes = {}
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\r\n") for line in f]
    if not lines or lines[0] != "# skypool-catalog 1":
        raise SystemExit("do_fake: %s is not a skypool catalog (version 1)" % path)
    header = None
    for line in lines[1:]:
        if not line or line.startswith("#"):
            continue
        cols = line.split("\t")
        if header is None:
            if cols != CATALOG_COLUMNS:
                raise SystemExit("do_fake: %s: unexpected columns %s" % (path, cols))
            header = cols
            continue
        row = dict(zip(header, cols))
        size = sizes.setdefault(row["instance_type"], {
            "accelerator": row["accelerator"], "count": int(row["count"]),
            "accel_mem_mib": int(row["accel_mem_mib"]), "vcpus": int(row["vcpus"]),
            "mem_mib": int(row["mem_mib"]),
            "price": float(row["price"]) if row["price"] != "-" else 0.0, "regions": []})
        if row["region"] != "-" and row["region"] not in size["regions"]:
            size["regions"].append(row["region"])
    return sizes


def gpu_size(slug, info, unlisted_regions):
    """A size object (the spec's size schema) for one catalog size. Unknown vCPUs, memory and
    disk (0 in the catalog) get placeholders that scale with the GPU count."""
    count = info["count"]
    model, label = GPU_MODELS.get(info["accelerator"], (
        ("amd_" if info["accelerator"].upper().startswith("MI") else "nvidia_") +
        re.sub(r"[^a-z0-9]+", "_", info["accelerator"].lower()).strip("_"),
        info["accelerator"]))
    disk = 720 * count
    price = info["price"]
    return {
        "slug": slug,
        "memory": info["mem_mib"] or 245760 * count,
        "vcpus": info["vcpus"] or 20 * count,
        "disk": disk,
        "transfer": 15.0,
        "price_monthly": round(price * HOURS_PER_MONTH, 2),
        "price_hourly": price,
        "regions": sorted(info["regions"] or unlisted_regions),
        "available": True,
        "description": "%s GPU - %dX" % (label, count),
        "disk_info": [{"type": "local", "size": {"amount": disk, "unit": "gib"}},
                      {"type": "scratch", "size": {"amount": 5120 * count, "unit": "gib"}}],
        "gpu_info": {"count": count,
                     "vram": {"amount": info["accel_mem_mib"] // 1024, "unit": "gib"},
                     "model": model},
    }


def build_offer(catalog_path, unlisted_regions):
    """(sizes in listing order, {slug: size}, regions in listing order, {slug: region})."""
    catalog = read_catalog(catalog_path)
    gpu_regions = sorted({r for info in catalog.values() for r in info["regions"]})
    unlisted = unlisted_regions if unlisted_regions is not None else gpu_regions
    region_slugs = sorted(set(REGION_NAMES) | set(gpu_regions) | set(unlisted))
    sizes = []
    for cpu in CPU_SIZES:
        size = dict(cpu, regions=list(region_slugs), available=True,
                    disk_info=[{"type": "local", "size": {"amount": cpu["disk"], "unit": "gib"}}])
        sizes.append(size)
    sizes += [gpu_size(slug, info, unlisted) for slug, info in catalog.items()]
    regions = []
    for slug in region_slugs:
        regions.append({"name": REGION_NAMES.get(slug, slug.upper()), "slug": slug,
                        "features": list(REGION_FEATURES), "available": True,
                        "sizes": [s["slug"] for s in sizes if slug in s["regions"]]})
    return sizes, {s["slug"]: s for s in sizes}, regions, {r["slug"]: r for r in regions}


# ---- SSH keys ----

def key_fingerprint(public_key):
    """DigitalOcean's fingerprint: MD5 of the key blob, colon-separated hex. Raises ApiError."""
    parts = public_key.strip().split()
    if len(parts) < 2:
        raise unprocessable(MSG["key_invalid"])
    if parts[0] not in KEY_TYPES:
        raise unprocessable(MSG["key_type"])
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        raise unprocessable(MSG["key_invalid"])
    # The blob starts with its own type as an SSH string: it must agree with the text.
    if len(blob) < 4 or blob[4:4 + int.from_bytes(blob[:4], "big")] != parts[0].encode():
        raise unprocessable(MSG["key_invalid"])
    digest = hashlib.md5(blob).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, 32, 2))


# ---- state ----

class Config:
    """What the command line sets; /_fake/config changes it, /_fake/reset restores it."""

    KEYS = {"droplet_limit": int, "active_after": int, "public_ip": str, "ratelimit": int,
            "ratelimit_window": float, "per_page_max": int, "tag_lists_gpus": bool,
            "token": str, "images": list}

    def __init__(self, args):
        self.droplet_limit = args.droplet_limit
        self.active_after = args.active_after
        self.public_ip = args.public_ip
        self.ratelimit = args.ratelimit
        self.ratelimit_window = args.ratelimit_window
        self.per_page_max = args.per_page_max
        self.tag_lists_gpus = args.tag_lists_gpus
        self.token = args.token
        self.images = [i for i in (args.images or "").split(",") if i]

    def as_dict(self):
        return {k: getattr(self, k) for k in self.KEYS}

    def update(self, doc):
        if not isinstance(doc, dict):
            raise ValueError("config takes an object with some of: %s" % ", ".join(self.KEYS))
        for key, value in doc.items():
            kind = self.KEYS.get(key)
            if kind is None:
                raise ValueError("unknown config key %r (known: %s)" % (key, ", ".join(self.KEYS)))
            ok = value is None and key == "token" or \
                (kind is float and isinstance(value, (int, float)) and
                 not isinstance(value, bool)) or \
                (kind is not float and isinstance(value, kind) and
                 (kind is bool or not isinstance(value, bool)))
            if not ok:
                raise ValueError("config %s: bad value %r" % (key, value))
        for key, value in doc.items():
            setattr(self, key, value)


class State:
    """Everything the fake remembers, under one lock."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.next_droplet = FIRST_DROPLET_ID
        self.next_action = 200000001
        self.next_key = 512189
        self.reset()

    def reset(self):
        self.config = Config(self.args)
        self.droplets = {}       # id -> droplet object, plus "_fake" (internal bookkeeping)
        self.keys = []
        self.tags = set()        # tags ever used: DELETE by an unknown tag is a 404
        self.actions = {}        # id -> {"droplet": id, "started_at"}
        self.log = []
        self.seq = 0
        self.faults = []
        self.capacity = {}       # region -> {size: droplets that still fit}
        self.window_end = 0.0
        self.window_count = 0

    # -- rate limit: a fixed window of ratelimit_window seconds from its first request --

    def count_request(self):
        now = time.time()
        if now >= self.window_end:
            self.window_end = now + self.config.ratelimit_window
            self.window_count = 0
        self.window_count += 1
        return self.window_count > self.config.ratelimit

    def ratelimit_headers(self):
        end = self.window_end or time.time() + self.config.ratelimit_window
        return [("ratelimit-limit", str(self.config.ratelimit)),
                ("ratelimit-remaining", str(max(0, self.config.ratelimit - self.window_count))),
                ("ratelimit-reset", str(int(math.ceil(end))))]

    # -- droplets --

    def observe(self, droplet):
        """A client saw this droplet: count the sighting and boot it when its time has come."""
        fake = droplet["_fake"]
        if droplet["status"] == "new" and fake["sightings"] >= self.config.active_after:
            ips = [ip.strip() for ip in self.config.public_ip.split(",") if ip.strip()]
            index = fake["index"]
            public = ips[index % len(ips)] if ips else "127.0.0.1"
            private = "10.108.%d.%d" % (index // 254 % 256, index % 254 + 1)
            droplet["status"] = "active"
            droplet["networks"]["v4"] = [
                {"ip_address": private, "netmask": "255.255.0.0", "gateway": "nil",
                 "type": "private"},
                {"ip_address": public, "netmask": "255.255.255.0",
                 "gateway": public.rsplit(".", 1)[0] + ".1", "type": "public"},
            ]
            fake["active_at"] = iso_now()
        fake["sightings"] += 1

    def public_droplet(self, droplet):
        return {k: v for k, v in droplet.items() if k != "_fake"}


def image_object(image, regions):
    if isinstance(image, int):
        return {"id": image, "name": "image-%d" % image, "distribution": "Unknown", "slug": None,
                "public": False, "regions": regions, "created_at": "2026-01-01T00:00:00Z",
                "min_disk_size": 20, "type": "snapshot", "size_gigabytes": 2.36,
                "description": "", "tags": [], "status": "available", "error_message": ""}
    name, distribution = KNOWN_IMAGES.get(image, (image, "Ubuntu"))
    return {"id": zlib.crc32(image.encode()) % 100000000 + 1, "name": name,
            "distribution": distribution, "slug": image, "public": True, "regions": regions,
            "created_at": "2026-01-01T00:00:00Z", "min_disk_size": 20, "type": "base",
            "size_gigabytes": 2.36, "description": name, "tags": [], "status": "available",
            "error_message": ""}


# ---- request handling ----

class Request:
    """What a handler needs: method, path, query (first value of each key), JSON body."""

    def __init__(self, method, path, query, body, base_url):
        self.method, self.path, self.query, self.body = method, path, query, body
        self.base_url = base_url

    def json(self):
        if not self.body:
            raise ApiError(400, "bad_request", "The request body is empty; send a JSON object.")
        try:
            doc = json.loads(self.body)
        except ValueError:
            raise ApiError(400, "bad_request", "Unable to parse the request body as JSON.")
        if not isinstance(doc, dict):
            raise ApiError(400, "bad_request", "The request body must be a JSON object.")
        return doc


def page_params(req, config):
    def number(name, default):
        raw = req.query.get(name)
        if raw is None:
            return default
        try:
            return int(raw)
        except ValueError:
            raise ApiError(400, "bad_request", "%s must be an integer" % name)
    page = max(1, number("page", 1))
    per_page = min(max(1, number("per_page", 20)), config.per_page_max)
    return page, per_page


def paginate(req, config, key, items, on_page=None):
    """The spec's list answer: {key: page of items, "links": {"pages": ...}, "meta":
    {"total"}}; links point back at this server and keep the other query parameters."""
    page, per_page = page_params(req, config)
    total = len(items)
    last = max(1, (total + per_page - 1) // per_page)
    chosen = items[(page - 1) * per_page:page * per_page]
    if on_page:
        chosen = [on_page(item) for item in chosen]

    def link(number):
        query = dict(req.query, page=str(number), per_page=str(per_page))
        return "%s%s?%s" % (req.base_url, req.path, urllib.parse.urlencode(query))
    pages = {}
    if page > 1:
        pages["first"] = link(1)
        pages["prev"] = link(min(page - 1, last))
    if page < last:
        pages["next"] = link(page + 1)
        pages["last"] = link(last)
    return {key: chosen, "links": {"pages": pages} if pages else {}, "meta": {"total": total}}


class Api:
    """The /v2 endpoints. Every method runs under the state lock."""

    def __init__(self, state, offer):
        self.state = state
        self.sizes, self.size_by_slug, self.regions, self.region_by_slug = offer

    ROUTES = [  # (method, path pattern, handler name); groups are the handler's arguments
        ("GET", r"/v2/account", "account"),
        ("GET", r"/v2/account/keys", "list_keys"),
        ("POST", r"/v2/account/keys", "create_key"),
        ("GET", r"/v2/account/keys/([^/]+)", "get_key"),
        ("DELETE", r"/v2/account/keys/([^/]+)", "delete_key"),
        ("GET", r"/v2/sizes", "list_sizes"),
        ("GET", r"/v2/regions", "list_regions"),
        ("GET", r"/v2/droplets", "list_droplets"),
        ("POST", r"/v2/droplets", "create_droplets"),
        ("DELETE", r"/v2/droplets", "delete_by_tag"),
        ("GET", r"/v2/droplets/([^/]+)", "get_droplet"),
        ("DELETE", r"/v2/droplets/([^/]+)", "delete_droplet"),
        ("GET", r"/v2/actions/([^/]+)", "get_action"),
    ]

    def route(self, req):
        """(status, JSON object or None): the endpoint's answer, or raises ApiError."""
        path = req.path.rstrip("/") or "/"
        allowed = False
        for method, pattern, name in self.ROUTES:
            match = re.fullmatch(pattern, path)
            if match:
                allowed = True
                if method == req.method:
                    return getattr(self, name)(req, *match.groups())
        if allowed:
            raise ApiError(405, "method_not_allowed",
                           "%s is not allowed on %s." % (req.method, req.path))
        raise not_found()

    # -- account, sizes, regions --

    def account(self, req):
        return 200, {"account": {
            "droplet_limit": self.state.config.droplet_limit, "floating_ip_limit": 3,
            "email": "sammy@example.com", "name": "Sammy the Shark",
            "uuid": "b6fr89dbf6d9156cace5f3c78dc9851d957381ef", "email_verified": True,
            "status": "active", "status_message": "",
            "team": {"uuid": "5df3e3004a17e242b7c20ca6c9fc25b701a47ece", "name": "skypool tests"}}}

    def list_sizes(self, req):
        return 200, paginate(req, self.state.config, "sizes", copy.deepcopy(self.sizes))

    def list_regions(self, req):
        return 200, paginate(req, self.state.config, "regions", copy.deepcopy(self.regions))

    # -- SSH keys --

    def list_keys(self, req):
        return 200, paginate(req, self.state.config, "ssh_keys", copy.deepcopy(self.state.keys))

    def find_key(self, ident):
        for key in self.state.keys:
            if str(key["id"]) == str(ident) or key["fingerprint"] == ident:
                return key
        return None

    def create_key(self, req):
        doc = req.json()
        name, public_key = doc.get("name"), doc.get("public_key")
        if not isinstance(name, str) or not name.strip():
            raise unprocessable(MSG["no_name"])
        if not isinstance(public_key, str):
            raise unprocessable(MSG["key_invalid"])
        fingerprint = key_fingerprint(public_key)
        if self.find_key(fingerprint):
            raise unprocessable(MSG["key_in_use"])
        key = {"id": self.state.next_key, "fingerprint": fingerprint,
               "public_key": public_key.strip(), "name": name}
        self.state.next_key += 1
        self.state.keys.append(key)
        return 201, {"ssh_key": copy.deepcopy(key)}

    def get_key(self, req, ident):
        key = self.find_key(urllib.parse.unquote(ident))
        if key is None:
            raise not_found()
        return 200, {"ssh_key": copy.deepcopy(key)}

    def delete_key(self, req, ident):
        key = self.find_key(urllib.parse.unquote(ident))
        if key is None:
            raise not_found()
        self.state.keys.remove(key)
        return 204, None

    # -- droplets --

    def is_gpu(self, droplet):
        return "gpu_info" in droplet

    def list_droplets(self, req):
        tag, name, kind = req.query.get("tag_name"), req.query.get("name"), req.query.get("type")
        if tag is not None and (name is not None or kind is not None):
            raise unprocessable(MSG["tag_combined"])
        if kind not in (None, "droplets", "gpus"):
            raise ApiError(400, "bad_request", "type must be one of droplets, gpus")
        items = sorted(self.state.droplets.values(), key=lambda d: d["id"])
        if tag is not None:
            items = [d for d in items if tag in d["tags"] and
                     (self.state.config.tag_lists_gpus or not self.is_gpu(d))]
        else:
            want_gpus = kind == "gpus"
            items = [d for d in items if self.is_gpu(d) == want_gpus]
        if name is not None:
            items = [d for d in items if d["name"].lower() == name.lower()]

        def seen(droplet):
            self.state.observe(droplet)
            return self.state.public_droplet(copy.deepcopy(droplet))
        return 200, paginate(req, self.state.config, "droplets", items, seen)

    def droplet_by_id(self, ident):
        droplet = self.state.droplets.get(int(ident)) if ident.isdigit() else None
        if droplet is None:
            raise not_found()
        return droplet

    def get_droplet(self, req, ident):
        droplet = self.droplet_by_id(ident)
        self.state.observe(droplet)
        return 200, {"droplet": self.state.public_droplet(copy.deepcopy(droplet))}

    def remove(self, droplet):
        del self.state.droplets[droplet["id"]]
        room = self.state.capacity.get(droplet["region"]["slug"], {})
        if droplet["size_slug"] in room:
            room[droplet["size_slug"]] += 1

    def delete_droplet(self, req, ident):
        self.remove(self.droplet_by_id(ident))
        return 204, None

    def delete_by_tag(self, req):
        tag = req.query.get("tag_name")
        if not tag:
            raise unprocessable(MSG["tag_required"])
        if tag not in self.state.tags:
            raise not_found()
        for droplet in [d for d in self.state.droplets.values() if tag in d["tags"]]:
            self.remove(droplet)
        return 204, None

    def get_action(self, req, ident):
        action = self.state.actions.get(int(ident)) if ident.isdigit() else None
        if action is None:
            raise not_found()
        droplet = self.state.droplets.get(action["droplet"])
        done = droplet is None or droplet["status"] == "active"
        return 200, {"action": {
            "id": int(ident), "status": "completed" if done else "in-progress", "type": "create",
            "started_at": action["started_at"],
            "completed_at": (droplet or {}).get("_fake", {}).get("active_at") if done else None,
            "resource_id": action["droplet"], "resource_type": "droplet",
            "region": copy.deepcopy(self.region_by_slug[action["region"]]),
            "region_slug": action["region"]}}

    # -- create --

    def check_names(self, doc):
        if "names" in doc:
            names = doc["names"]
            if "name" in doc:
                raise unprocessable(MSG["name_and_names"])
            if not isinstance(names, list) or not names:
                raise unprocessable(MSG["no_name"])
            if len(names) > MAX_NAMES:
                raise unprocessable(MSG["too_many_names"])
        else:
            names = [doc.get("name")]
            if names[0] is None:
                raise unprocessable(MSG["no_name"])
        for name in names:
            if not isinstance(name, str) or len(name) > 255 or not NAME_RE.match(name):
                raise unprocessable(MSG["hostname"])
        return names

    def check_region(self, doc, size):
        """The region slug: as given, or a slug prefix (nyc) or none, as DigitalOcean allows;
        then the first region of that kind offering the size and with room left."""
        region = doc.get("region")
        if region is not None and not isinstance(region, str):
            raise unprocessable(MSG["invalid_region"])
        if region in self.region_by_slug:
            return region
        candidates = [r for r in self.region_by_slug
                      if region is None or (region and r.startswith(region) and
                                            not region[-1].isdigit())]
        if not candidates:
            raise unprocessable(MSG["invalid_region"])
        for slug in candidates:
            if slug in size["regions"] and self.state.capacity.get(slug, {}).get(
                    size["slug"], 1) > 0:
                return slug
        raise unprocessable(MSG["size_unavailable"])

    def check_image(self, doc):
        image = doc.get("image")
        images = self.state.config.images
        if isinstance(image, bool) or not isinstance(image, (str, int)) or image in ("", 0) or \
                (isinstance(image, int) and image < 0) or \
                (images and isinstance(image, str) and image not in images):
            raise unprocessable(MSG["invalid_image"])
        return image

    def check_keys(self, doc):
        keys = doc.get("ssh_keys") or []
        if not isinstance(keys, list):
            raise unprocessable(MSG["invalid_keys"] % keys)
        resolved, bad = [], []
        for ident in keys:
            key = self.find_key(ident) if isinstance(ident, (str, int)) and \
                not isinstance(ident, bool) else None
            (resolved if key else bad).append(key["id"] if key else str(ident))
        if bad:
            raise unprocessable(MSG["invalid_keys"] % ", ".join(bad))
        return resolved

    def check_tags(self, doc):
        tags = doc.get("tags") or []
        if not isinstance(tags, list) or not all(
                isinstance(t, str) and len(t) <= 255 and TAG_RE.match(t) for t in tags):
            raise unprocessable(MSG["tag_name"])
        return list(dict.fromkeys(tags))

    def create_droplets(self, req):
        doc = req.json()
        names = self.check_names(doc)
        size = self.size_by_slug.get(doc.get("size")) if isinstance(doc.get("size"), str) \
            else None
        if size is None:
            raise unprocessable(MSG["invalid_size"])
        region = self.check_region(doc, size)
        image = self.check_image(doc)
        keys = self.check_keys(doc)
        tags = self.check_tags(doc)
        user_data = doc.get("user_data")
        if user_data is not None and (not isinstance(user_data, str) or
                                      len(user_data.encode()) > USER_DATA_MAX):
            raise unprocessable(MSG["user_data"])
        if region not in size["regions"]:
            raise unprocessable(MSG["size_unavailable"])
        room = self.state.capacity.get(region, {}).get(size["slug"])
        if room is not None and room < len(names):
            raise unprocessable(MSG["size_unavailable"])
        if len(self.state.droplets) + len(names) > self.state.config.droplet_limit:
            raise unprocessable(MSG["droplet_limit"])
        if room is not None:
            self.state.capacity[region][size["slug"]] = room - len(names)
        self.state.tags.update(tags)
        request = {k: v for k, v in doc.items() if k not in ("name", "names")}
        created, actions = [], []
        for name in names:
            droplet = self.new_droplet(name, size, region, image, tags, keys, user_data, doc,
                                       request)
            created.append(self.state.public_droplet(copy.deepcopy(droplet)))
            action = self.state.next_action
            self.state.next_action += 1
            self.state.actions[action] = {"droplet": droplet["id"], "region": region,
                                          "started_at": droplet["created_at"]}
            actions.append({"id": action, "rel": "create",
                            "href": "%s/v2/actions/%d" % (req.base_url, action)})
        links = {"actions": actions}
        if "names" in doc:
            return 202, {"droplets": created, "links": links}
        return 202, {"droplet": created[0], "links": links}

    def new_droplet(self, name, size, region, image, tags, keys, user_data, doc, request):
        ident = self.state.next_droplet
        self.state.next_droplet += 1
        features = ["private_networking"] + [f for f in ("backups", "ipv6", "monitoring")
                                             if doc.get(f) is True]
        if doc.get("with_droplet_agent") is not False:
            features.append("droplet_agent")
        droplet = {
            "id": ident, "name": name, "memory": size["memory"], "vcpus": size["vcpus"],
            "disk": size["disk"], "disk_info": copy.deepcopy(size["disk_info"]),
            "locked": False, "status": "new", "kernel": None, "created_at": iso_now(),
            "features": features, "backup_ids": [], "next_backup_window": None,
            "snapshot_ids": [], "image": image_object(image, list(size["regions"])),
            "volume_ids": list(doc.get("volumes") or []), "size": copy.deepcopy(size),
            "size_slug": size["slug"], "networks": {"v4": [], "v6": []},
            "region": copy.deepcopy(self.region_by_slug[region]), "tags": list(tags),
            "vpc_uuid": doc.get("vpc_uuid") or str(uuid.uuid5(uuid.NAMESPACE_URL,
                                                              "skypool-do-fake/" + region)),
        }
        if "gpu_info" in size:
            droplet["gpu_info"] = copy.deepcopy(size["gpu_info"])
        droplet["_fake"] = {"index": ident - FIRST_DROPLET_ID, "sightings": 0, "ssh_keys": keys,
                            "user_data": user_data, "request": request, "active_at": None}
        self.state.droplets[ident] = droplet
        return droplet


# ---- faults ----

FAULT_KEYS = {"name", "method", "path", "query", "skip", "times", "status", "headers", "body",
              "delay_ms", "drop", "forward"}
ERROR_IDS = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
             409: "conflict", 422: "unprocessable_entity", 429: "too_many_requests",
             500: "server_error", 502: "bad_gateway", 503: "service_unavailable",
             504: "gateway_timeout"}


class Fault:
    """One canned answer: which requests it takes, how often, and what they get instead."""

    def __init__(self, doc, index):
        if not isinstance(doc, dict):
            raise ValueError("fault %d is not an object" % index)
        unknown = set(doc) - FAULT_KEYS
        if unknown:
            raise ValueError("fault %d: unknown keys %s (known: %s)"
                             % (index, sorted(unknown), ", ".join(sorted(FAULT_KEYS))))
        self.doc = doc
        self.name = str(doc.get("name", "fault%d" % index))
        self.method = str(doc.get("method", "*")).upper()
        self.path = doc.get("path", "*")
        self.query = doc.get("query") or {}
        self.skip = doc.get("skip", 0)
        self.times = doc.get("times", 1)
        self.status = doc.get("status")
        self.headers = doc.get("headers") or {}
        self.delay_ms = doc.get("delay_ms", 0)
        self.drop = bool(doc.get("drop", False))
        self.forward = bool(doc.get("forward", False))
        if not isinstance(self.path, str) or not isinstance(self.query, dict) or \
                not isinstance(self.headers, dict):
            raise ValueError("fault %s: path is a string, query and headers objects" % self.name)
        for key in ("skip", "times", "delay_ms"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or \
                    value < (-1 if key == "times" else 0):
                raise ValueError("fault %s: %s must be a whole number%s"
                                 % (self.name, key, " (-1: always)" if key == "times" else ""))
        if self.status is not None and (not isinstance(self.status, int) or
                                        not 100 <= self.status <= 599):
            raise ValueError("fault %s: status must be an HTTP status" % self.name)
        if self.status is None and not self.drop and not self.delay_ms:
            raise ValueError("fault %s: give a status, drop or delay_ms" % self.name)
        self.matched = 0
        self.fired = 0

    def matches(self, method, path, query):
        if self.method not in ("*", method):
            return False
        if self.path.endswith("*"):
            if not path.startswith(self.path[:-1]):
                return False
        elif path != self.path:
            return False
        return all(query.get(k) == str(v) for k, v in self.query.items())

    def take(self):
        """Counts a matching request; True when this one gets the fault."""
        self.matched += 1
        if self.matched <= self.skip or (self.times != -1 and self.fired >= self.times):
            return False
        self.fired += 1
        return True

    def body(self):
        if "body" in self.doc:
            body = self.doc["body"]
            return body.encode() if isinstance(body, str) else dump(body)
        if self.status is None or self.status < 400:
            return b""
        ident = ERROR_IDS.get(self.status, "error")
        message = MSG.get(ident, http.server.BaseHTTPRequestHandler.responses.get(
            self.status, ("Error",))[0])
        return dump({"id": ident, "message": message, "request_id": str(uuid.uuid4())})

    def report(self):
        return dict(self.doc, name=self.name, matched=self.matched, fired=self.fired)


# ---- HTTP ----

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "do-fake"
    timeout = 120

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("do_fake: " + fmt % args + "\n")

    def send(self, status, body, headers=()):
        """body: bytes (sent as JSON), or None for an empty answer (204)."""
        self.send_response(status)
        if not any(name.lower() == "content-type" for name, _ in headers):
            self.send_header("Content-Type", "application/json; charset=utf-8")
        if status != 204:
            self.send_header("Content-Length", str(len(body or b"")))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, status, obj, headers=()):
        self.send(status, None if obj is None else dump(obj), headers)

    def handle_any(self):
        self.server.touch()
        body = read_body(self)
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        if url.path.startswith("/_fake/"):
            self.control(url.path[len("/_fake/"):], body)
        else:
            self.api(url.path, url.query, query, body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_any

    # -- control API --

    def control(self, name, body):
        state = self.server.state
        try:
            doc = json.loads(body) if body.strip() else None
        except ValueError as e:
            self.send_json(400, {"error": "body is not JSON: %s" % e})
            return
        try:
            with state.lock:
                out = self.control_locked(state, self.command, name, doc)
                text = None if out is None else dump(out)
        except ValueError as e:
            self.send_json(400, {"error": str(e)})
            return
        if text is None:
            self.send_json(404, {"error": "no control endpoint %s /_fake/%s"
                                          % (self.command, name)})
        else:
            self.send(200, text)

    @staticmethod
    def control_locked(state, method, name, doc):
        if (method, name) == ("GET", "state"):
            return {
                "droplets": [dict(state.public_droplet(d), _fake=d["_fake"])
                             for d in sorted(state.droplets.values(), key=lambda d: d["id"])],
                "keys": state.keys, "tags": sorted(state.tags), "log": state.log,
                "capacity": state.capacity, "faults": [f.report() for f in state.faults],
                "config": state.config.as_dict(),
                "ratelimit": dict((k[len("ratelimit-"):], int(v))
                                  for k, v in state.ratelimit_headers()),
            }
        if (method, name) == ("POST", "reset"):
            state.reset()
            return {"reset": True}
        if name == "faults" and method in ("GET", "POST", "DELETE"):
            if method == "POST":
                rules = doc.get("rules") if isinstance(doc, dict) else doc
                if not isinstance(rules, list):
                    raise ValueError('faults takes a JSON list of rules (or {"rules": [...]})')
                state.faults = [Fault(rule, i) for i, rule in enumerate(rules)]
            elif method == "DELETE":
                state.faults = []
            return [f.report() for f in state.faults]
        if name == "capacity" and method in ("GET", "POST"):
            if method == "POST":
                set_capacity(state, doc)
            return state.capacity
        if name == "config" and method in ("GET", "POST"):
            if method == "POST":
                state.config.update(doc)
            return state.config.as_dict()
        return None

    # -- /v2 --

    def log_entry(self, path, raw_query, body):
        headers = {}
        for name, value in self.headers.items():
            name = name.lower()
            if name == "authorization":
                scheme = value.split(" ", 1)[0] if " " in value else ""
                value = (scheme + " <redacted>").strip()
            headers[name] = value
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = body.decode("utf-8", "replace")
        query = {}
        for key, value in urllib.parse.parse_qsl(raw_query, keep_blank_values=True):
            query.setdefault(key, []).append(value)
        return {"time": round(time.time(), 3), "method": self.command, "path": path,
                "query": {k: v[0] if len(v) == 1 else v for k, v in query.items()},
                "headers": headers, "body": parsed, "status": None, "fault": None}

    def check_auth(self, config):
        auth = self.headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or token == "bad-token" or \
                (config.token is not None and token != config.token):
            raise ApiError(401, "unauthorized", MSG["unauthorized"])

    def api(self, path, raw_query, query, body):
        state = self.server.state
        base_url = "http://%s" % (self.headers.get("Host") or
                                  "127.0.0.1:%d" % self.server.server_address[1])
        with state.lock:
            entry = self.log_entry(path, raw_query, body)
            state.seq += 1
            entry["seq"] = state.seq
            state.log.append(entry)
            del state.log[:-LOG_LIMIT]
            limited = state.count_request()
            headers = state.ratelimit_headers()
            fault = next((f for f in state.faults if f.matches(self.command, path, query) and
                          f.take()), None)
            entry["fault"] = fault.name if fault else None
        if fault is not None and fault.delay_ms:
            time.sleep(fault.delay_ms / 1000.0)
        answered = fault is None or fault.forward or (fault.status is None and not fault.drop)
        if answered:
            with state.lock:
                status, out, extra = self.answer(state, path, query, body, base_url, limited)
                entry["status"] = status
        if fault is not None and fault.drop:
            entry["status"] = None
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        elif fault is not None and fault.status is not None:
            names = {k.lower() for k in fault.headers}
            merged = [(k, v) for k, v in headers if k not in names]
            merged += [(k.lower(), str(v)) for k, v in fault.headers.items()]
            entry["status"] = fault.status
            self.send(fault.status, fault.body() or None, merged)
        else:
            self.send(status, out, headers + extra)

    def answer(self, state, path, query, body, base_url, limited):
        """(status, JSON bytes or None, extra headers), as the real API would answer; runs
        under the state lock (the JSON is made there, so later changes cannot tear it)."""
        request_id = str(uuid.uuid4())
        try:
            self.check_auth(state.config)
            if limited:
                retry = max(1, int(math.ceil(state.window_end - time.time())))
                raise ApiError(429, "too_many_requests", MSG["too_many_requests"],
                               [("retry-after", str(retry))])
            if self.command in ("POST", "PUT", "PATCH") and body:
                ctype = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
                if ctype != "application/json":
                    raise ApiError(415, "unsupported_media_type",
                                   "Content-Type must be application/json.")
            req = Request(self.command, path, query, body, base_url)
            status, out = self.server.api.route(req)
            return status, None if out is None else dump(out), [("x-request-id", request_id)]
        except ApiError as err:
            out = {"id": err.ident, "message": err.message, "request_id": request_id}
            return err.status, dump(out), \
                [("x-request-id", request_id)] + list(err.headers)


def set_capacity(state, doc):
    if not isinstance(doc, dict):
        raise ValueError('capacity takes {"REGION": {"SIZE": COUNT or null}}')
    api = state.api
    for region, sizes in doc.items():
        if region not in api.region_by_slug:
            raise ValueError("unknown region %r" % region)
        if not isinstance(sizes, dict):
            raise ValueError("capacity[%r] must be an object {SIZE: COUNT}" % region)
        for size, count in sizes.items():
            if size not in api.size_by_slug:
                raise ValueError("unknown size %r" % size)
            if count is not None and (isinstance(count, bool) or not isinstance(count, int) or
                                      count < 0):
                raise ValueError("capacity %s/%s: a count >= 0, or null for no limit"
                                 % (region, size))
    for region, sizes in doc.items():
        room = state.capacity.setdefault(region, {})
        for size, count in sizes.items():
            if count is None:
                room.pop(size, None)
            else:
                room[size] = count
        if not room:
            del state.capacity[region]


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, args):
        super().__init__(("127.0.0.1", args.port), Handler)
        self.verbose = args.verbose
        unlisted = None if args.unlisted_regions is None else \
            [r for r in args.unlisted_regions.split(",") if r]
        self.state = State(args)
        self.api = Api(self.state, build_offer(args.catalog, unlisted))
        self.state.api = self.api
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
    parser.add_argument("--catalog", default=DEFAULT_CATALOG,
                        help="skypool catalog whose sizes to offer (default: the project's "
                             "catalog/digitalocean.tsv)")
    parser.add_argument("--unlisted-regions",
                        help="comma-separated regions for catalog sizes whose region is '-' "
                             "(default: every region the catalog names)")
    parser.add_argument("--public-ip", default="127.0.0.1",
                        help="public IPv4 of active droplets; a comma-separated list is dealt "
                             "out by droplet id (default 127.0.0.1)")
    parser.add_argument("--droplet-limit", type=int, default=25,
                        help="the account's droplet limit (default 25)")
    parser.add_argument("--active-after", type=int, default=1,
                        help="sightings a droplet stays 'new' for (default 1)")
    parser.add_argument("--per-page-max", type=int, default=200,
                        help="largest per_page honoured (default 200)")
    parser.add_argument("--ratelimit", type=int, default=5000,
                        help="requests per rate-limit window (default 5000)")
    parser.add_argument("--ratelimit-window", type=float, default=60,
                        help="rate-limit window in seconds (default 60)")
    parser.add_argument("--tag-lists-gpus", action="store_true",
                        help="GET /v2/droplets?tag_name=T includes GPU droplets (default: not)")
    parser.add_argument("--token", help="the only bearer token accepted (default: any but "
                                        "'bad-token')")
    parser.add_argument("--images", help="comma-separated image slugs accepted (default: any)")
    args = parser.parse_args()
    if not os.path.isfile(args.catalog):
        parser.error("no catalog at %s" % args.catalog)
    run(Server(args), args, "do_fake")


if __name__ == "__main__":
    main()
