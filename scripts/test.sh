#!/bin/sh
# Sets up, builds and runs every test: the cmocka units, the integration tests and each libFuzzer
# target for a few seconds, all under AddressSanitizer and UndefinedBehaviorSanitizer (clang).
# Also checks that a release build with gcc, tests included, is warning-free.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

./scripts/setup-debian.sh

cmake -S . -B build-gcc -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=gcc >/dev/null
cmake --build build-gcc -j"$jobs"

cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DSKYPOOL_SANITIZE=ON >/dev/null
cmake --build build-test -j"$jobs"
ctest --test-dir build-test --output-on-failure -j"$jobs"
