#!/bin/sh
# skypool-nodecheck end to end, on a machine without a GPU: first exactly as CI runs it (no
# driver at all: a valid report, exit 3), then against the fake NVIDIA driver of
# tests/fixtures/gpu (libcuda.so.1 and libnvidia-ml.so.1 with the real sonames, a fake
# nvidia-smi over the same state) and a fake neuron-ls. Checks the contract the core relies on:
# exit codes, their precedence, the JSON report and the mismatches it names.
set -u
src=${SKYPOOL_SOURCE_DIR:?}
build=${SKYPOOL_BUILD_DIR:?}
nc=${SKYPOOL_NODECHECK:-$(ls "$build"/nodecheck/*/skypool-nodecheck 2>/dev/null | head -n 1)}
fakelib=${SKYPOOL_FAKE_GPU_LIB:-$build/tests/fake-gpu/lib}
fakebin=${SKYPOOL_FAKE_GPU_BIN:-$src/tests/fixtures/gpu}
smi=$fakebin/nvidia-smi
[ -x "$nc" ] || { echo "FAIL: no skypool-nodecheck binary under $build/nodecheck" >&2; exit 1; }
[ -f "$fakelib/libcuda.so.1" ] && [ -f "$fakelib/libnvidia-ml.so.1" ] ||
    { echo "FAIL: fake driver libraries missing from $fakelib" >&2; exit 1; }
work=$(mktemp -d /tmp/skypool-nodecheck-XXXXXX)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
base_path=$PATH

fail() { echo "FAIL: $*" >&2; failed=$((failed + 1)); }

# The report checker: every report must follow schema skypool-nodecheck/1, and then the given
# Python expression over it (d; mm(what) lists the mismatches of one kind) must hold.
cat >"$work/check.py" <<'PY'
import json, sys

def validate(d):
    top = ["schema", "version", "hostname", "arch", "elapsed_ms", "status", "exit_code",
           "driver", "devices", "workers", "neuron", "kernels", "expected", "mismatches"]
    for k in top:
        assert k in d, "missing key " + k
    assert d["schema"] == "skypool-nodecheck/1"
    assert d["status"] in ("ok", "no_driver", "no_device", "driver_too_old",
                           "hardware_mismatch", "mig_mismatch", "test_failed", "error")
    assert isinstance(d["elapsed_ms"], int) and d["elapsed_ms"] >= 0
    for k in ("loaded", "version", "cuda_max", "error"):
        assert k in d["driver"], "driver." + k
    dev_keys = ["index", "name", "model", "uuid", "memory_mib", "sm_count",
                "compute_capability", "pci_bus_id", "form_factor", "board_part_number", "mig",
                "ecc", "throttle_reasons", "clocks", "tests"]
    for dev in d["devices"]:
        for k in dev_keys:
            assert k in dev, "device key " + k
        assert dev["form_factor"] in ("sxm", "pcie", "nvl", "unknown")
        assert dev["mig"]["mode"] in ("enabled", "disabled", "unsupported")
        for k in ("arith", "memory"):
            assert dev["tests"][k] in ("pass", "fail", "skipped")
        for k in ("memory_errors", "d2d_gbps", "h2d_gbps"):
            assert k in dev["tests"]
        for k in ("sm_mhz", "mem_mhz", "sm_max_mhz", "mem_max_mhz"):
            assert k in dev["clocks"]
    for w in d["workers"]:
        assert set(w) >= {"uuid", "device", "profile"}
    assert set(d["kernels"]) >= {"built", "why"}
    for m in d["mismatches"]:
        assert set(m) >= {"what", "expected", "found", "message"}
        assert m["what"] in ("count", "model", "memory", "form_factor", "mig", "cuda", "test")

raw = open(sys.argv[1], "rb").read()
d = json.loads(raw.decode("utf-8"))  # strict: the report must be UTF-8
validate(d)
mm = lambda what: [m for m in d["mismatches"] if m["what"] == what]
if not eval("(" + sys.argv[2] + "\n)", {"d": d, "mm": mm, "raw": raw}):
    sys.exit("false: " + sys.argv[2])
PY

# run NAME WANT_EXIT ARGS...: runs nodecheck, report in $work/NAME.json, stderr in NAME.err.
run() {
    name=$1 want=$2
    shift 2
    "$nc" "$@" >"$work/$name.json" 2>"$work/$name.err"
    rc=$?
    if [ "$rc" != "$want" ]; then
        fail "$name: exit $rc, expected $want ($*)"
        sed 's/^/    stderr: /' "$work/$name.err" >&2
        head -c 3000 "$work/$name.json" | sed 's/^/    stdout: /' >&2
        return 1
    fi
    passed=$((passed + 1))
}

# expect NAME PYTHON-EXPRESSION: checks the report of run NAME.
expect() {
    if ! out=$(python3 "$work/check.py" "$work/$1.json" "$2" 2>&1); then
        fail "$1: $(echo "$out" | tail -n 1)"
        return 1
    fi
    passed=$((passed + 1))
}

gpu_env() {
    export FAKE_GPU_MODEL="NVIDIA H100 80GB HBM3" FAKE_GPU_COUNT=2 FAKE_GPU_MEM_MIB=81559 \
        FAKE_GPU_DRIVER=550.54.15 FAKE_GPU_CUDA=12040 FAKE_GPU_FAULT=none \
        FAKE_GPU_STATE="$work/state" LD_LIBRARY_PATH="$fakelib" PATH="$base_path"
    rm -f "$work/state"
}

# ---- 1. No driver, exactly as on CI ----------------------------------------------------------
if [ -e /proc/driver/nvidia/version ] || { command -v ldconfig >/dev/null &&
    ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; }; then
    echo "SKIP no-driver checks: this machine has an NVIDIA driver"
else
    unset LD_LIBRARY_PATH
    run nodriver 3
    run nodriver_expect 3 --expect-count 8 --expect-model H100-SXM
    python3 -m json.tool "$work/nodriver.json" >/dev/null || fail "nodriver: not JSON"
    expect nodriver 'd["status"] == "no_driver" and d["exit_code"] == 3 and
        not d["driver"]["loaded"] and "libcuda.so.1" in d["driver"]["error"] and
        d["devices"] == [] and d["workers"] == [] and d["neuron"] is None'
    expect nodriver_expect 'd["status"] == "no_driver" and d["expected"]["count"] == 8'
fi

# ---- 2. The fake driver ----------------------------------------------------------------------
gpu_env
run match 0 --expect-count 2 --expect-model H100-SXM --expect-mem-mib 81920 \
    --expect-form-factor sxm --min-cuda 12.2 --mem-test-mib 4
if "$nc" --version | grep -q 'kernels built in'; then
    echo "kernels: built in; the fake driver emulates nc_arith and the memory kernels"
    arith=pass method=kernel
    expect match 'd["kernels"] == {"built": True, "why": None}'
else
    echo "kernels: not built (no CUDA toolkit); checking the driver-API memory test path"
    arith=skipped method=driver_api
    expect match 'd["kernels"] == {"built": False, "why": "built without a CUDA toolkit"}'
fi
expect match 'd["status"] == "ok" and d["exit_code"] == 0 and d["mismatches"] == [] and
    [x["model"] for x in d["devices"]] == ["H100-SXM"] * 2 and
    all(x["form_factor"] == "sxm" and x["memory_mib"] == 81559 and x["sm_count"] == 132 and
        x["compute_capability"] == "9.0" and x["uuid"].startswith("GPU-") for x in d["devices"])
    and d["driver"] == {"loaded": True, "version": "550.54.15", "cuda_max": "12.4",
        "error": None, "nvml_loaded": True, "nvml_error": None}
    and [w["uuid"] for w in d["workers"]] == [x["uuid"] for x in d["devices"]]
    and all(w["profile"] is None for w in d["workers"])
    and d["expected"] == {"count": 2, "models": ["H100-SXM"], "memory_mib": 81920,
        "form_factor": "sxm", "min_cuda": "12.2"}'
expect match "all(x['tests']['arith'] == '$arith' and x['tests']['memory'] == 'pass' and
    x['tests']['memory_method'] == '$method' and x['tests']['memory_errors'] == 0 and
    x['tests']['memory_tested_mib'] == 4 and x['tests']['d2d_gbps'] > 0 and
    x['tests']['h2d_gbps'] > 0 for x in d['devices'])"
run anyof 0 --expect-model A100-80GB,h100-sxm --no-tests

run count 6 --expect-count 4 --no-tests
expect count 'd["status"] == "hardware_mismatch" and
    [(m["expected"], m["found"]) for m in mm("count")] == [("4", "2")]'
run model 6 --expect-model A100-80GB --no-tests
expect model 'len(mm("model")) == 2 and mm("model")[0]["found"] == "H100-SXM" and
    "A100-80GB" in mm("model")[0]["message"]'
run ff 6 --expect-form-factor pcie --no-tests
expect ff 'len(mm("form_factor")) == 2 and mm("form_factor")[0]["found"] == "sxm"'
FAKE_GPU_MODEL="NVIDIA H100 PCIe"
run ff_pcie 6 --expect-model H100-SXM,H100-PCIe --expect-form-factor sxm --no-tests
expect ff_pcie 'd["devices"][0]["model"] == "H100-PCIe" and len(mm("form_factor")) == 2 and
    mm("model") == []'
gpu_env

# Memory: at least 92% of the catalog figure (T4: 15360 of 16384 MiB passes, ECC's share).
FAKE_GPU_MEM_MIB=70000
run memory_low 6 --expect-mem-mib 81920 --no-tests
expect memory_low '[(m["expected"], m["found"]) for m in mm("memory")] == [("81920", "70000")] * 2'
FAKE_GPU_MODEL="Tesla T4" FAKE_GPU_MEM_MIB=15360 FAKE_GPU_COUNT=1
run t4 0 --expect-model T4 --expect-mem-mib 16384 --expect-form-factor pcie --mem-test-mib 4
FAKE_GPU_MEM_MIB=15000
run t4_short 6 --expect-mem-mib 16384 --no-tests
gpu_env

run cuda_new 5 --min-cuda 12.5 --no-tests
expect cuda_new 'd["status"] == "driver_too_old" and
    [(m["expected"], m["found"]) for m in mm("cuda")] == [("12.5", "12.4")]'
run cuda_minor 5 --min-cuda 12.10 --no-tests # 12.10 > 12.4: numbers, not decimals
run cuda_old 0 --min-cuda 11.8 --no-tests

FAKE_GPU_FAULT=memory
run fault_memory 8 --mem-test-mib 4
expect fault_memory 'd["status"] == "test_failed" and len(mm("test")) == 2 and
    all(x["tests"]["memory"] == "fail" and x["tests"]["memory_errors"] > 0
        for x in d["devices"])'
FAKE_GPU_FAULT=arith
if [ "$arith" = pass ]; then
    run fault_arith 8 --mem-test-mib 4
    expect fault_arith 'all(x["tests"]["arith"] == "fail" and x["tests"]["memory"] == "pass"
        and "1 of 16384" in x["tests"]["why"] for x in d["devices"])'
else
    run fault_arith 0 --mem-test-mib 4
    expect fault_arith 'all(x["tests"]["arith"] == "skipped" for x in d["devices"])'
fi
FAKE_GPU_FAULT=nodevice
run nodevice 4
expect nodevice 'd["status"] == "no_device" and d["driver"]["loaded"] and d["devices"] == []'
run nodevice_count 4 --expect-count 2
expect nodevice_count '[(m["expected"], m["found"]) for m in mm("count")] == [("2", "0")]'
FAKE_GPU_FAULT=initfail
run initfail 3
expect initfail 'd["status"] == "no_driver" and "cuInit" in d["driver"]["error"]'
gpu_env

# Precedence: 3, 4, 5, 6, 7, 8; every broken expectation is still named.
FAKE_GPU_FAULT=memory
run prec_hw_test 6 --expect-model A100-80GB --mem-test-mib 4
expect prec_hw_test 'len(mm("model")) == 2 and len(mm("test")) == 2'
run prec_cuda_hw 5 --min-cuda 99.0 --expect-count 3 --mem-test-mib 4
expect prec_cuda_hw 'mm("cuda") and mm("count") and mm("test")'
run prec_mig_test 7 --expect-mig 3g.40gb,3g.40gb --mem-test-mib 4
FAKE_GPU_FAULT=nodevice
run prec_nodevice 4 --min-cuda 99.0 --expect-model A100-80GB
FAKE_GPU_FAULT=initfail
run prec_nodriver 3 --min-cuda 99.0 --expect-count 9
gpu_env

if [ "$arith" = pass ]; then
    # A driver from R450 (CUDA 11.0) reads PTX ISA 7.0 at most: the embedded PTX must load.
    FAKE_GPU_CUDA=11000
    run old_driver 0 --min-cuda 11.0 --mem-test-mib 4
    expect old_driver 'all(x["tests"]["arith"] == "pass" for x in d["devices"])'
    gpu_env
fi
# compute_75 PTX cannot run on a V100 (sm_70): no kernels there, the driver-API test instead.
FAKE_GPU_MODEL="Tesla V100-SXM2-32GB" FAKE_GPU_MEM_MIB=32510 FAKE_GPU_COUNT=1
run v100 0 --expect-model V100-32GB --expect-form-factor sxm --mem-test-mib 4
expect v100 'd["devices"][0]["tests"]["arith"] == "skipped" and
    d["devices"][0]["tests"]["memory"] == "pass" and
    d["devices"][0]["tests"]["memory_method"] == "driver_api"'
gpu_env

# Half a driver: libcuda without NVML (the device list then comes from CUDA), and NVML without
# libcuda (no driver to run anything on, but the GPUs are still listed).
mkdir -p "$work/cuda-only" "$work/nvml-only"
ln -sf "$fakelib/libcuda.so.1" "$work/cuda-only/libcuda.so.1"
ln -sf "$fakelib/libnvidia-ml.so.1" "$work/nvml-only/libnvidia-ml.so.1"
LD_LIBRARY_PATH="$work/cuda-only"
run cuda_only 0 --expect-count 2 --expect-model H100-SXM --expect-form-factor sxm --mem-test-mib 4
expect cuda_only 'not d["driver"]["nvml_loaded"] and d["driver"]["loaded"] and
    [x["uuid"] for x in d["devices"]] == ["GPU-5ca1ab1e-0000-4000-8000-00000000000%d" % i
                                          for i in range(2)] and
    [x["pci_bus_id"] for x in d["devices"]] == ["00000000:10:00.0", "00000000:18:00.0"] and
    all(x["mig"]["mode"] == "unsupported" and x["tests"]["memory"] == "pass"
        for x in d["devices"])'
LD_LIBRARY_PATH="$work/nvml-only"
run nvml_only 3 --expect-count 2
expect nvml_only 'd["status"] == "no_driver" and d["driver"]["nvml_loaded"] and
    d["driver"]["version"] == "550.54.15" and len(d["devices"]) == 2 and
    all(x["cuda_ordinal"] is None for x in d["devices"])'
gpu_env

run notests 0 --no-tests
expect notests 'all(x["tests"]["arith"] == "skipped" and x["tests"]["memory"] == "skipped" and
    x["tests"]["d2d_gbps"] is None for x in d["devices"])'

# ---- MIG through the fake nvidia-smi -------------------------------------------------------
"$smi" -mig 1 >"$work/smi.out" 2>&1 || fail "nvidia-smi -mig 1: $(cat "$work/smi.out")"
"$smi" mig -cgi 3g.40gb,3g.40gb -C >"$work/smi.out" 2>&1 ||
    fail "nvidia-smi mig -cgi: $(cat "$work/smi.out")"
grep -c '^Successfully created compute instance' "$work/smi.out" | grep -qx 4 ||
    fail "nvidia-smi mig -cgi did not create 4 instances: $(cat "$work/smi.out")"
if "$smi" mig -cgi 1g.10gb -C -i 0 >"$work/smi.out" 2>&1 ||
    ! grep -q 'Insufficient Resources' "$work/smi.out"; then
    fail "a ninth memory slice was granted: $(cat "$work/smi.out")"
fi
if "$smi" mig -cgi 3g.20gb -i 1 >"$work/smi.out" 2>&1 || ! grep -q 'Not Found' "$work/smi.out"
then
    fail "an A100-40GB profile was accepted on an H100: $(cat "$work/smi.out")"
fi
"$smi" -L >"$work/smi_l.out"
grep -Eq '^  MIG 3g\.40gb     Device  1: \(UUID: MIG-[0-9a-f-]+\)$' "$work/smi_l.out" ||
    fail "nvidia-smi -L format: $(cat "$work/smi_l.out")"
run mig 0 --expect-mig 3g.40gb,3g.40gb --expect-count 2 --mem-test-mib 4
expect mig 'len(d["workers"]) == 4 and all(w["uuid"].startswith("MIG-") and
    w["profile"] == "3g.40gb" for w in d["workers"]) and
    [w["device"] for w in d["workers"]] == [0, 0, 1, 1] and
    all(x["mig"]["mode"] == "enabled" and len(x["mig"]["instances"]) == 2 for x in d["devices"])'
python3 - "$work/mig.json" "$work/smi_l.out" <<'PY' || fail "workers differ from nvidia-smi -L"
import json, re, sys
workers = [w["uuid"] for w in json.load(open(sys.argv[1]))["workers"]]
listed = re.findall(r"\(UUID: (MIG-[^)]+)\)", open(sys.argv[2]).read())
sys.exit(workers != listed)
PY
run mig_wrong 7 --expect-mig 1g.10gb --no-tests
expect mig_wrong 'd["status"] == "mig_mismatch" and len(mm("mig")) == 2 and
    mm("mig")[0]["found"] == "3g.40gb,3g.40gb"'
run mig_order 0 --expect-mig 3g.40gb,3g.40gb --expect-model H100-SXM --no-tests
"$smi" mig -dci >/dev/null && "$smi" mig -dgi >/dev/null || fail "nvidia-smi mig -dci/-dgi"
run mig_none 7 --expect-mig 3g.40gb,3g.40gb --no-tests
expect mig_none 'mm("mig")[0]["found"] == "no MIG instances" and d["workers"] == []'
gpu_env
run mig_off 7 --expect-mig 7g.80gb --no-tests
expect mig_off 'mm("mig")[0]["found"] == "MIG disabled"'
FAKE_GPU_MODEL="Tesla T4" FAKE_GPU_MEM_MIB=15360
"$smi" -mig 1 >/dev/null 2>&1 && fail "MIG was enabled on a T4"
run mig_t4 7 --expect-mig 1g.5gb --no-tests
expect mig_t4 'mm("mig")[0]["found"] == "no MIG support" and
    d["devices"][0]["mig"]["mode"] == "unsupported"'
gpu_env

# The core's nvidia-smi fallback reads exactly this query.
"$smi" --query-gpu=name,uuid,memory.total,driver_version,pci.bus_id \
    --format=csv,noheader,nounits >"$work/query.out"
[ "$(cat "$work/query.out")" = "NVIDIA H100 80GB HBM3, GPU-5ca1ab1e-0000-4000-8000-000000000000, 81559, 550.54.15, 00000000:10:00.0
NVIDIA H100 80GB HBM3, GPU-5ca1ab1e-0000-4000-8000-000000000001, 81559, 550.54.15, 00000000:18:00.0" ] ||
    fail "nvidia-smi --query-gpu: $(cat "$work/query.out")"

# ---- Neuron through the fake neuron-ls (and no NVIDIA driver) ------------------------------
unset LD_LIBRARY_PATH
export PATH="$fakebin:$base_path"
run neuron 0
run neuron_match 0 --expect-model Trainium --expect-count 1 --expect-mem-mib 32768
run neuron_count 6 --expect-model Trainium --expect-count 16
export FAKE_NEURON_MEM_BYTES=8589934592 FAKE_NEURON_CORES=4 FAKE_NEURON_COUNT=4
run neuron_inf1 6 --expect-model Trainium,Trainium2
run neuron_inf1_ok 0 --expect-model Inferentia --expect-count 4
unset FAKE_NEURON_MEM_BYTES FAKE_NEURON_CORES FAKE_NEURON_COUNT
export FAKE_NEURON_JSON=0
run neuron_table 0 --expect-model Inferentia2 --expect-count 1
unset FAKE_NEURON_JSON
export FAKE_NEURON_FAIL=1
run neuron_fail 3 --expect-model Trainium
unset FAKE_NEURON_FAIL
export PATH="$base_path"
run neuron_absent 3 --expect-model Trainium2
gpu_env
expect neuron 'd["status"] == "ok" and d["neuron"]["device_count"] == 1 and
    d["neuron"]["core_count"] == 2 and
    d["neuron"]["devices"][0]["model_candidates"] == ["Inferentia2", "Trainium"]'
expect neuron_count '[(m["expected"], m["found"]) for m in mm("count")] == [("16", "1")]'
expect neuron_inf1 'd["neuron"]["devices"][0]["model"] == "Inferentia" and len(mm("model")) == 4'
expect neuron_table 'd["neuron"]["devices"][0]["memory_mib"] == 32768'
expect neuron_fail 'd["status"] == "no_driver" and "Neuron" in d["driver"]["error"]'
expect neuron_absent 'd["status"] == "no_driver" and d["neuron"] is None'

# ---- Locale: numbers must not become 12,5 --------------------------------------------------
if locale -a 2>/dev/null | grep -qi '^de_DE\.utf-\?8$'; then
    export LC_ALL=de_DE.UTF-8
    run locale 0 --min-cuda 12.4 --mem-test-mib 4
    unset LC_ALL
    expect locale '__import__("re").search(rb"_gbps\":[0-9]+\.[0-9]", raw) and
        not __import__("re").search(rb"\":-?[0-9]+,[0-9]", raw)'
else
    echo "SKIP locale check: de_DE.UTF-8 not installed (scripts/setup-debian.sh makes it)"
fi

# ---- Strings: escaped, and always valid UTF-8 ----------------------------------------------
FAKE_GPU_MODEL=$(printf 'Odd "GPU"\\\t\377x') FAKE_GPU_COUNT=1
run strings 0 --no-tests --pretty
expect strings 'd["devices"][0]["name"] == "Odd \"GPU\"\\\t\ufffdx" and
    d["devices"][0]["model"] is None'
gpu_env

# ---- Command line ----------------------------------------------------------------------------
"$nc" --help >"$work/help.out" 2>&1 && grep -q '^usage: skypool-nodecheck' "$work/help.out" &&
    grep -q 'Exit status' "$work/help.out" || fail "--help"
"$nc" --version >"$work/version.out" 2>&1 &&
    grep -q '^skypool-nodecheck [0-9]*\.[0-9]*\.[0-9]* (report schema skypool-nodecheck/1' \
        "$work/version.out" || fail "--version: $(cat "$work/version.out")"
usage() { # usage FLAG-NAMED-IN-MESSAGE ARGS...
    named=$1
    shift
    "$nc" "$@" >"$work/usage.out" 2>"$work/usage.err"
    rc=$?
    if [ "$rc" != 2 ] || [ -s "$work/usage.out" ] || ! grep -qF -- "$named" "$work/usage.err"; then
        fail "usage error for '$*': exit $rc, stderr: $(cat "$work/usage.err")"
        return
    fi
    passed=$((passed + 1))
}
usage "'--frob'" --frob
usage "--expect-count" --expect-count abc
usage "--expect-count" --expect-count 0
usage "--expect-count" --expect-count
usage "--expect-model" --expect-model H100
usage "--expect-form-factor" --expect-form-factor oam
usage "--min-cuda" --min-cuda 12
usage "--min-cuda" --min-cuda 12.x
usage "--expect-mig" --expect-mig 3g40gb
usage "--mem-test-mib" --mem-test-mib 0
usage "'stray'" stray
run equals_form 0 --expect-count=2 --expect-model=H100-SXM --no-tests

# ---- The binary itself ----------------------------------------------------------------------
# It is copied to nodes with a driver and libc only: glibc (and the sanitizer runtimes in a
# sanitized build) is all it may need.
if command -v readelf >/dev/null; then
    needed=$(readelf -d "$nc" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    for lib in $needed; do
        case $lib in
        libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | ld-linux*) ;;
        libasan.so.* | libubsan.so.* | libgcc_s.so.*) ;;
        *) fail "skypool-nodecheck needs $lib" ;;
        esac
    done
fi
# The glibc floor: versioned symbols above GLIBC_2.34 (Debian 12 builds need 2.34 through
# the libpthread/libdl merge) would mean a newer API crept in.
if command -v objdump >/dev/null; then
    floor=$(objdump -T "$nc" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n |
        tail -n 1)
    echo "glibc floor of this build: $floor"
    case $floor in
    2.[0-9] | 2.[12][0-9] | 2.3[0-4]) ;;
    *) fail "skypool-nodecheck needs glibc $floor (more than 2.34)" ;;
    esac
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
