#!/bin/sh
# Benchmark, on a machine with an NVIDIA GPU: skypool-nodecheck as a whole process (CUDA start-up,
# tests, report), run RUNS times; its median wall time; and its device-to-device bandwidth on GPU
# 0 against a plain cudaMemcpy loop of the same size (bench/memcpy_loop.cu, built with nvcc) and
# against the card's theoretical memory bandwidth. Prints the figures and their ratios.
#
#   sh bench/nodecheck_gpu.sh [RUNS]          (default 5)
#
# Needs a GPU, its driver, and nvcc (the CUDA toolkit) for the kernels and the peer loop.
set -eu
cd "$(dirname "$0")/.."
runs=${1:-5}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "bench/nodecheck_gpu.sh: no NVIDIA GPU on this machine (nvidia-smi is missing or finds" \
         "none): nothing to measure. Run it on a GPU node." >&2
    exit 1
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || { echo "bench/nodecheck_gpu.sh: needs nvcc (the CUDA toolkit)" >&2; exit 1; }

cmake -S . -B build-bench-nc -DCMAKE_BUILD_TYPE=Release -DSKYPOOL_TESTS=OFF >/dev/null
cmake --build build-bench-nc --target skypool-nodecheck -j"$(nproc)" >/dev/null
bin=$(ls build-bench-nc/nodecheck/*/skypool-nodecheck | head -n 1)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$nvcc" -O2 -o "$out/memcpy_loop" bench/memcpy_loop.cu

i=1
while [ "$i" -le "$runs" ]; do
    t0=$(date +%s%N)
    "$bin" >"$out/run$i.json" || echo "run $i: exit $? (see the report's mismatches)" >&2
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000)) >>"$out/wall_ms"
    "$out/memcpy_loop" 256 10 0 >>"$out/peer_gbps"
    i=$((i + 1))
done

python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
reports = [json.load(open("%s/run%d.json" % (out, i))) for i in range(1, runs + 1)]
wall = [int(x) for x in open(out + "/wall_ms")]
peer = [float(x) for x in open(out + "/peer_gbps")]
dev0 = [r["devices"][0] for r in reports]
d2d = [d["tests"]["d2d_gbps"] for d in dev0 if d["tests"]["d2d_gbps"] is not None]
h2d = [d["tests"]["h2d_gbps"] for d in dev0 if d["tests"]["h2d_gbps"] is not None]
name = dev0[0]["name"]
# Theoretical memory bandwidth (NVIDIA datasheets), TB/s.
peaks = [("H100 NVL", 3.9), ("H100 PCIe", 2.0), ("H100 80GB HBM2e", 2.0), ("H100", 3.35),
         ("H200", 4.8)]
peak = next((p for key, p in peaks if key in name), None)
print("GPU 0: %s, %d GPU(s), driver %s, kernels %s" % (
    name, len(reports[0]["devices"]), reports[0]["driver"]["version"],
    "built in" if reports[0]["kernels"]["built"] else "not built"))
print("skypool-nodecheck   median wall %6d ms over %d runs (min %d, max %d; report's own "
      "elapsed_ms median %d)" % (statistics.median(wall), runs, min(wall), max(wall),
                                 statistics.median(r["elapsed_ms"] for r in reports)))
if d2d:
    print("  d2d (GPU 0)       median %8.1f GB/s   (2 x bytes/s, 256 MiB x 10 copies)"
          % statistics.median(d2d))
if h2d:
    print("  h2d (GPU 0)       median %8.1f GB/s   (pinned host memory)" % statistics.median(h2d))
print("cudaMemcpy loop     median %8.1f GB/s   (same size, copies and convention)"
      % statistics.median(peer))
if d2d:
    print("ratio nodecheck / cudaMemcpy loop: %.3f" % (statistics.median(d2d) /
                                                     statistics.median(peer)))
if peak:
    print("theoretical peak of this card: %.2f TB/s; nodecheck d2d reaches %.0f%%, the loop %.0f%%"
          % (peak, 100 * statistics.median(d2d) / (peak * 1000) if d2d else 0,
             100 * statistics.median(peer) / (peak * 1000)))
else:
    print("theoretical peak: not listed for %s (H100 SXM 3.35, H100 PCIe 2.0, H200 4.8 TB/s)"
          % name)
statuses = sorted({r["status"] for r in reports})
print("statuses: %s" % ", ".join(statuses))
PY
