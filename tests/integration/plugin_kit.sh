#!/bin/sh
# The third-party plugin kit end to end: install skypool's headers, pkg-config file and CMake
# package to a scratch prefix, build plugins/example out of tree against them (with CMake and
# with pkg-config alone), and load the result into skypool.
set -eu
src=${SKYPOOL_SOURCE_DIR:?}
build=${SKYPOOL_BUILD_DIR:?}
bin=${SKYPOOL_BIN:?}
work=$(mktemp -d /tmp/skypool-kit-XXXXXX)
chmod 700 "$work"
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/skypool/provider.h"

# CMake package config.
cmake -S "$src/plugins/example" -B "$work/example" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DCMAKE_C_COMPILER=gcc >/dev/null
cmake --build "$work/example" >/dev/null
test -f "$work/example/labcluster.so"

# pkg-config alone.
mkdir "$work/pc"
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig" \
  sh -c 'cc -shared -fPIC -Wall -Wextra -Werror $(pkg-config --cflags skypool-provider) \
         "$1" -o "$2"' sh "$src/plugins/example/labcluster.c" "$work/pc/labcluster.so"

fail() { echo "FAIL: $*" >&2; exit 1; }

for dir in "$work/example" "$work/pc"; do
  out=$(SKYPOOL_PLUGIN_PATH="$build/providers:$dir" "$bin" providers) || fail "providers exited $?"
  echo "$out" | grep -q '^labcluster  *1\.0\.0' || fail "labcluster not listed: $out"
  out=$(SKYPOOL_PLUGIN_PATH="$build/providers:$dir" LABCLUSTER_SITE=site-7 \
        "$bin" offers H100:8 --provider labcluster) || fail "offers exited $?"
  echo "$out" | grep -q 'labcluster  *site-7  *rack-a  *rack-a  *8x H100-SXM' ||
    fail "labcluster offer missing: $out"
done
echo "plugin kit: 2 builds loaded and served offers"
echo "2 passed, 0 failed"
