#!/bin/sh
# The DigitalOcean test servers behave as documented in tests/servers/README.md: do_fake.py
# keeps state like the real API (droplets boot, limits and capacity refuse, faults and rate
# limits answer as DigitalOcean does, the log never holds the token), and Prism, pinned in
# tests/servers/prism, serves the official spec (200 to a valid call, 401 without a token, 422
# to a body that breaks it). The provider's tests rely on both.
# By hand: SKYPOOL_SOURCE_DIR=$PWD sh tests/integration/do_fake_selftest.sh
set -eu
. "${SKYPOOL_SOURCE_DIR:?}/tests/servers/harness.sh"
. "$SKYPOOL_SOURCE_DIR/tests/servers/do_servers.sh"

check() {  # NAME ACTUAL EXPECTED
  if [ "$2" = "$3" ]; then
    ok "$1"
  else
    bad "$1" "expected: $3
got:      $2"
  fi
}

api() {  # METHOD PATH [JSON]: do_request against the fake
  do_request "$1" "$DOFAKE_URL$2" ${3+"$3"}
}

# Pieces of a do_request answer held in a variable.
status() { printf '%s\n' "$1" | do_status; }
header() { printf '%s\n' "$1" | do_header "$2"; }
body() { printf '%s\n' "$1" | do_body | json_eval "$2"; }
state() { dofake_admin GET state | json_eval "$1"; }

KEY1="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHg6clMFvF5CZjMXt9kvnHOm5GCHWbWRxMBr3zsG4Izj test1"
KEY2="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM2Vt/OhAJ6aSbU3vVvxEt6Z4hMtmA0HRm9QcLbHP2eB test2"
H100=gpu-h100x1-80gb
h100() {  # NAME-or-NAMES-JSON-MEMBER REGION [EXTRA-MEMBERS]: a create body for H100 droplets
  printf '{%s, "size": "%s", "region": "%s", "image": "gpu-h100x1-base"%s}' \
    "$1" "$H100" "$2" "${3:+, $3}"
}

start_do_fake --droplet-limit 5 --active-after 1 --public-ip 127.0.0.1

# --- auth, account, sizes, regions ---

r=$(DO_TOKEN='' api GET /v2/account)
check "no token: 401" "$(status "$r")" 401
check "no token: DigitalOcean's error body" \
  "$(body "$r" '[d["id"], d["message"], len(d["request_id"]) > 0]')" \
  '["unauthorized", "Unable to authenticate you.", true]'
check "bad-token: 401" "$(status "$(DO_TOKEN=bad-token api GET /v2/account)")" 401

r=$(api GET /v2/account)
check "account: droplet_limit from --droplet-limit" \
  "$(body "$r" '[d["account"]["droplet_limit"], d["account"]["status"]]')" '[5, "active"]'
check "rate-limit headers on every answer" \
  "$(header "$r" ratelimit-limit) $(header "$r" ratelimit-remaining)" "5000 4997"
case $(header "$r" ratelimit-reset) in
  1[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]) ok "ratelimit-reset: epoch seconds" ;;
  *) bad "ratelimit-reset: epoch seconds" "$r" ;;
esac

sizes=$(api GET '/v2/sizes?per_page=200')
catalog_gpus=$("$SP_PYTHON" -c '
import json, sys
rows = {line.split("\t")[0] for line in open(sys.argv[1]) if line.startswith("gpu-")}
print(json.dumps(sorted(rows)))' "$SKYPOOL_SOURCE_DIR/catalog/digitalocean.tsv")
check "sizes: every GPU size of the catalog, with gpu_info" \
  "$(body "$sizes" 'sorted(s["slug"] for s in d["sizes"] if "gpu_info" in s)')" "$catalog_gpus"
check "sizes: the H100 as the spec shapes it" \
  "$(body "$sizes" '[[s["gpu_info"], s["regions"], s["price_hourly"], s["available"]]
                     for s in d["sizes"] if s["slug"] == "gpu-h100x1-80gb"][0]')" \
  '[{"count": 1, "model": "nvidia_h100", "vram": {"amount": 80, "unit": "gib"}}, ["atl1", "nyc2", "tor1"], 3.39, true]'
check "sizes: CPU sizes too, so clients must filter" \
  "$(body "$sizes" '"s-1vcpu-1gb" in [s["slug"] for s in d["sizes"]]')" true

p1=$(api GET '/v2/sizes?per_page=4')
check "paging: page 1 of 4 has links next/last and meta.total" \
  "$(body "$p1" '[len(d["sizes"]), sorted(d["links"]["pages"]), d["meta"]["total"] > 8]')" \
  '[4, ["last", "next"], true]'
next=$(body "$p1" 'd["links"]["pages"]["next"]')
case $next in
  "$DOFAKE_URL/v2/sizes?"*page=2*) ok "paging: links point back at the fake" ;;
  *) bad "paging: links point back at the fake" "$next" ;;
esac
check "paging: page 2 holds the next four, with links first/prev/next/last" \
  "$(body "$(do_request GET "$next")" '[[s["slug"] for s in d["sizes"]], sorted(d["links"]["pages"])]')" \
  "$(body "$sizes" '[[s["slug"] for s in d["sizes"]][4:8], ["first", "last", "next", "prev"]]')"
check "regions: nyc2 is available and offers the H100" \
  "$(body "$(api GET /v2/regions)" \
    '[[r["available"], "gpu-h100x1-80gb" in r["sizes"]] for r in d["regions"] if r["slug"] == "nyc2"]')" \
  '[[true, true]]'

# --- SSH keys ---

r=$(api POST /v2/account/keys "{\"name\": \"k1\", \"public_key\": \"$KEY1\"}")
check "ssh key: 201" "$(status "$r")" 201
want_fp=$(printf '%s' "$KEY1" | "$SP_PYTHON" -c '
import base64, hashlib, sys
h = hashlib.md5(base64.b64decode(sys.stdin.read().split()[1])).hexdigest()
print(":".join(h[i:i + 2] for i in range(0, 32, 2)))')
check "ssh key: fingerprint is the MD5 of the key blob" \
  "$(body "$r" 'd["ssh_key"]["fingerprint"]')" "$want_fp"
key_id=$(body "$r" 'd["ssh_key"]["id"]')
r=$(api POST /v2/account/keys "{\"name\": \"again\", \"public_key\": \"$KEY1\"}")
check "ssh key: the same key again is a 422" \
  "$(status "$r") $(body "$r" 'd["message"]')" "422 SSH Key is already in use on your account"
check "ssh key: a malformed key is a 422" \
  "$(status "$(api POST /v2/account/keys '{"name": "x", "public_key": "ssh-ed25519 !!"}')")" 422
fp2=$(body "$(api POST /v2/account/keys "{\"name\": \"k2\", \"public_key\": \"$KEY2\"}")" \
  'd["ssh_key"]["fingerprint"]')
check "ssh keys: listed" \
  "$(body "$(api GET /v2/account/keys)" '[[k["name"] for k in d["ssh_keys"]], d["meta"]["total"]]')" \
  '[["k1", "k2"], 2]'
check "ssh key: deleted by fingerprint, then 404" \
  "$(status "$(api DELETE "/v2/account/keys/$fp2")") $(status "$(api GET "/v2/account/keys/$fp2")")" \
  "204 404"

# --- droplets: create, boot, list ---

create_body=$(h100 '"names": ["sp-a", "sp-b"]' nyc2 \
  "\"ssh_keys\": [$key_id], \"tags\": [\"skypool\", \"pool:p1\"], \"user_data\": \"#cloud-config\\n\"")
r=$(api POST /v2/droplets "$create_body")
check "create with names: 202, droplets new without address, links.actions" \
  "$(status "$r") $(body "$r" '[[x["name"], x["status"], x["networks"]["v4"]] for x in d["droplets"]]
                              + [len(d["links"]["actions"])]')" \
  '202 [["sp-a", "new", []], ["sp-b", "new", []], 2]'
id_a=$(body "$r" 'd["droplets"][0]["id"]')
check "first GET: still new" "$(body "$(api GET "/v2/droplets/$id_a")" 'd["droplet"]["status"]')" new
r=$(api GET "/v2/droplets/$id_a")
check "second GET: active, with a private 10.x and the public --public-ip" \
  "$(body "$r" '[d["droplet"]["status"], sorted([n["type"], n["ip_address"].split(".")[0]]
                                              for n in d["droplet"]["networks"]["v4"])]')" \
  '["active", [["private", "10"], ["public", "127"]]]'
check "the public IPv4 is --public-ip" \
  "$(body "$r" '[n["ip_address"] for n in d["droplet"]["networks"]["v4"] if n["type"] == "public"]')" \
  '["127.0.0.1"]'
check "the create's ssh_keys and user_data are kept" \
  "$(state '[d["droplets"][0]["_fake"]["ssh_keys"], d["droplets"][0]["_fake"]["user_data"]]')" \
  "[[$key_id], \"#cloud-config\\n\"]"

r=$(api POST /v2/droplets \
  '{"name": "cpu-1", "size": "s-1vcpu-1gb", "region": "nyc3", "image": "ubuntu-24-04-x64", "tags": ["skypool"]}')
check "create with name: 202 with droplet" "$(status "$r") $(body "$r" 'd["droplet"]["name"]')" \
  "202 cpu-1"
check "list: GPU droplets left out without type=gpus" \
  "$(body "$(api GET /v2/droplets)" '[x["name"] for x in d["droplets"]]')" '["cpu-1"]'
check "list type=gpus: only the GPU droplets" \
  "$(body "$(api GET '/v2/droplets?type=gpus')" '[x["name"] for x in d["droplets"]]')" \
  '["sp-a", "sp-b"]'
check "a list counts as a sighting: sp-b active after two" \
  "$(body "$(api GET '/v2/droplets?type=gpus')" '[x["status"] for x in d["droplets"]]')" \
  '["active", "active"]'
check "list type=gpus, per_page=1, page 2" \
  "$(body "$(api GET '/v2/droplets?type=gpus&per_page=1&page=2')" \
    '[[x["name"] for x in d["droplets"]], d["meta"]["total"], sorted(d["links"]["pages"])]')" \
  '[["sp-b"], 2, ["first", "prev"]]'
check "list tag_name: the tagged droplets, GPU ones left out" \
  "$(body "$(api GET '/v2/droplets?tag_name=skypool')" '[x["name"] for x in d["droplets"]]')" \
  '["cpu-1"]'
check "GET of an unknown droplet: 404 not_found" \
  "$(body "$(api GET /v2/droplets/1)" '[d["id"], d["message"]]')" \
  '["not_found", "The resource you were accessing could not be found."]'

# --- refusals ---

r=$(api POST /v2/droplets "$(h100 '"names": ["x1", "x2", "x3"]' tor1)")
check "droplet limit: 422 with DigitalOcean's message, nothing created" \
  "$(status "$r") $(body "$r" 'd["message"]') $(state 'len(d["droplets"])')" \
  "422 creating this/these droplet(s) will exceed your droplet limit 3"
check "size not offered in the region: 422" \
  "$(body "$(api POST /v2/droplets "$(h100 '"name": "x"' sfo3)")" 'd["message"]')" \
  "Size is not available in this region."
check "unknown size: 422" \
  "$(body "$(api POST /v2/droplets '{"name": "x", "size": "gpu-nope", "region": "nyc2", "image": "u"}')" \
    '[d["id"], d["message"]]')" \
  '["unprocessable_entity", "You specified an invalid size for Droplet creation."]'
check "a tag against the spec's pattern: 422" \
  "$(status "$(api POST /v2/droplets "$(h100 '"name": "x"' nyc2 '"tags": ["no spaces"]')")")" 422
check "more than 10 names: 422" \
  "$(status "$(api POST /v2/droplets \
    "$(h100 '"names": ["a1","a2","a3","a4","a5","a6","a7","a8","a9","a10","a11"]' nyc2)")")" 422

dofake_admin POST capacity "{\"tor1\": {\"$H100\": 1}}" >/dev/null
r=$(api POST /v2/droplets "$(h100 '"names": ["c1", "c2"]' tor1)")
check "capacity 1, a batch of 2: 422 not available, all or nothing" \
  "$(status "$r") $(body "$r" 'd["message"]') $(state 'len(d["droplets"])')" \
  "422 Size is not available in this region. 3"
check "capacity 1, one droplet: 202, then no room left" \
  "$(status "$(api POST /v2/droplets "$(h100 '"name": "c1"' tor1)")") $(state 'd["capacity"]')" \
  '202 {"tor1": {"gpu-h100x1-80gb": 0}}'

# --- faults and the rate limit ---

dofake_admin POST faults '[{"method": "POST", "path": "/v2/droplets", "status": 429, "times": 1,
                            "headers": {"retry-after": "1"}}]' >/dev/null
r=$(api POST /v2/droplets "$(h100 '"name": "f1"' nyc2)")
check "fault: 429 with retry-after and DigitalOcean's body" \
  "$(status "$r") $(header "$r" retry-after) $(body "$r" 'd["id"]')" "429 1 too_many_requests"
check "fault: used once, then the real endpoint answers" \
  "$(status "$(api POST /v2/droplets "$(h100 '"name": "f1"' nyc2)")")" 202

dofake_admin POST reset >/dev/null
dofake_admin POST config '{"ratelimit": 2}' >/dev/null
api GET /v2/account >/dev/null
api GET /v2/account >/dev/null
r=$(api GET /v2/account)
check "rate limit spent: 429, ratelimit-remaining 0" \
  "$(status "$r") $(header "$r" ratelimit-remaining) $(body "$r" 'd["id"]')" "429 0 too_many_requests"
case $(header "$r" retry-after) in
  [1-9] | [1-9][0-9]) ok "rate limit spent: retry-after in seconds" ;;
  *) bad "rate limit spent: retry-after in seconds" "$r" ;;
esac
dofake_admin POST config '{"ratelimit": 5000}' >/dev/null

# --- delete ---

api POST /v2/droplets "$(h100 '"names": ["d1", "d2"]' nyc2 '"tags": ["gone"]')" >/dev/null
api POST /v2/droplets '{"name": "keep", "size": "s-1vcpu-1gb", "region": "nyc2", "image": "u"}' \
  >/dev/null
check "delete by tag: 204" "$(status "$(api DELETE '/v2/droplets?tag_name=gone')")" 204
check "delete by tag: the tagged droplets are gone, GPU ones too" \
  "$(state '[x["name"] for x in d["droplets"]]')" '["keep"]'
check "delete by a tag never used: 404" \
  "$(status "$(api DELETE '/v2/droplets?tag_name=never')")" 404
keep=$(state 'd["droplets"][0]["id"]')
check "delete one: 204, then 404" \
  "$(status "$(api DELETE "/v2/droplets/$keep")") $(status "$(api GET "/v2/droplets/$keep")")" \
  "204 404"

# --- the request log ---

DO_TOKEN=secret-token-xyz api GET '/v2/droplets?type=gpus' >/dev/null
all=$(dofake_admin GET state)
case $all in
  *secret-token-xyz*) bad "the state never holds the token" ;;
  *) ok "the state never holds the token" ;;
esac
check "log: method, path, query, Authorization redacted" \
  "$(printf '%s' "$all" | json_eval \
    '[[e["method"], e["path"], e["query"], e["headers"]["authorization"]] for e in d["log"]][-1]')" \
  '["GET", "/v2/droplets", {"type": "gpus"}, "Bearer <redacted>"]'
check "log: bodies as JSON" \
  "$(printf '%s' "$all" | json_eval '[e["body"].get("tags") for e in d["log"] if e["method"] == "POST"]')" \
  '[["gone"], null]'

# --- Prism on the official spec ---

start_prism
check "Prism: GET /v2/sizes with a token is 200" \
  "$(status "$(do_request GET "$PRISM_URL/v2/sizes")")" 200
check "Prism: no token is 401" "$(status "$(DO_TOKEN='' do_request GET "$PRISM_URL/v2/sizes")")" 401
r=$(do_request POST "$PRISM_URL/v2/droplets" '{"name": 5, "region": "nyc2"}')
check "Prism: a droplet without size and image is 422" "$(status "$r")" 422
case $(header "$r" sl-violations) in
  *"required property 'size'"*) ok "Prism: sl-violations names what is missing" ;;
  *) bad "Prism: sl-violations names what is missing" "$r" ;;
esac
check "Prism: the create body used above passes the spec" \
  "$(status "$(do_request POST "$PRISM_URL/v2/droplets" "$create_body")")" 202

sp_summary
