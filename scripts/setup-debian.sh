#!/bin/sh
# Installs every Debian package that building and testing skypool needs, and the locale the
# tests use to prove that numbers are read the same in any locale. openssh-server is for the
# tests only: they start their own sshd on loopback, with its own keys and config, to play a
# node; the package's own service is not used.
# Run as root on Debian 12 (bookworm). Idempotent.
set -eu
pkgs="build-essential cmake pkg-config clang libclang-rt-14-dev
 libcurl4-openssl-dev libssl-dev libyaml-dev libsqlite3-dev libcmocka-dev
 libjansson-dev libexpat1-dev libprotobuf-c-dev protobuf-c-compiler
 python3 openssl ca-certificates locales openssh-client openssh-server"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
        missing="$missing $p"
done
# Node.js runs the JSON Schema check (tests/schema) and Prism (tests/servers/prism), which asks
# for Node >= 18.20.1.
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
if [ -n "$missing" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing
fi
locale -a 2>/dev/null | grep -qi '^de_DE\.utf-\?8$' || localedef -i de_DE -c -f UTF-8 de_DE.UTF-8
