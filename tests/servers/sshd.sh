# shellcheck shell=sh
# A real OpenSSH server on loopback that plays a cloud node for the bootstrap tests: Debian's
# sshd, started as a throwaway daemon of the user running the test, with its own host key,
# config and authorized key, on a free 127.0.0.1 port. POSIX sh; source it after harness.sh:
#
#   . "$SKYPOOL_SOURCE_DIR/tests/servers/harness.sh"
#   . "$SKYPOOL_SOURCE_DIR/tests/servers/sshd.sh"
#   start_sshd [NAME=VALUE ...]   # SSHD_PORT, SSHD_PID, SSHD_USER, SSHD_KEY (client private
#                                 # key, the same for every daemon of a test),
#                                 # SSHD_CLIENT_CONFIG (an ssh_config for its address)
# Each call starts another daemon, with its own directory and port.
#
# The NAME=VALUE pairs become the environment of every session (sshd_config SetEnv), which is
# how a test gives the "node" a fake GPU driver (LD_LIBRARY_PATH, FAKE_GPU_*) and a fake
# nvidia-smi (PATH). SSHD_CLIENT_CONFIG maps 127.0.0.1 to the port, the key and a known_hosts
# file of the test's own: point SKYPOOL_SSH_CONFIG at it. sshd's log: $SSHD_LOG.

sp_sshd_bin() {
  for sp_c in /usr/sbin/sshd "$(command -v sshd 2>/dev/null)"; do
    [ -n "$sp_c" ] && [ -x "$sp_c" ] && { echo "$sp_c"; return 0; }
  done
  return 1
}

start_sshd() {
  SSHD_BIN=$(sp_sshd_bin) ||
    sp_fail "start_sshd: no sshd; install Debian's openssh-server (scripts/setup-debian.sh)"
  command -v ssh-keygen >/dev/null 2>&1 || sp_fail "start_sshd: no ssh-keygen (openssh-client)"
  SP_SSHD_SEQ=$((${SP_SSHD_SEQ:-0} + 1))
  sp_d=$SP_SERVERS_DIR/sshd.$SP_SSHD_SEQ
  mkdir -p "$sp_d" && chmod 700 "$sp_d"
  ssh-keygen -q -t ed25519 -N '' -f "$sp_d/host_key" </dev/null || sp_fail "start_sshd: host key"
  # One client key for every daemon of the test, so one ssh config reaches them all.
  SSHD_KEY=$SP_SERVERS_DIR/sshd-client-key
  [ -f "$SSHD_KEY" ] || ssh-keygen -q -t ed25519 -N '' -f "$SSHD_KEY" -C skypool-test </dev/null ||
    sp_fail "start_sshd: client key"
  cp "$SSHD_KEY.pub" "$sp_d/authorized_keys"
  chmod 600 "$sp_d/authorized_keys"
  SSHD_USER=$(id -un)
  SSHD_ADDR=${SSHD_LISTEN:-127.0.0.1}
  SSHD_PORT=$(sp_free_port)
  # As root, sshd needs its privilege separation directory.
  [ "$(id -u)" != 0 ] || mkdir -p /run/sshd
  {
    echo "Port $SSHD_PORT"
    echo "ListenAddress $SSHD_ADDR"
    echo "HostKey $sp_d/host_key"
    echo "PidFile $sp_d/sshd.pid"
    echo "AuthorizedKeysFile $sp_d/authorized_keys"
    echo "AllowUsers $SSHD_USER"
    echo "PermitRootLogin prohibit-password"
    echo "PubkeyAuthentication yes"
    echo "PasswordAuthentication no"
    echo "KbdInteractiveAuthentication no"
    echo "UsePAM no"
    echo "StrictModes no"
    echo "PrintMotd no"
    echo "X11Forwarding no"
    echo "AllowTcpForwarding no"
    echo "LogLevel VERBOSE"
    if [ $# -gt 0 ]; then
      printf 'SetEnv'
      for sp_kv in "$@"; do printf ' "%s"' "$sp_kv"; done
      printf '\n'
    fi
  } >"$sp_d/sshd_config"
  "$SSHD_BIN" -t -f "$sp_d/sshd_config" 2>"$sp_d/config-check.log" ||
    sp_fail "start_sshd: sshd rejects its config: $(cat "$sp_d/config-check.log")"
  if command -v timeout >/dev/null 2>&1; then
    sp_spawn sshd timeout -k 5 "$SP_SERVERS_LIFETIME" "$SSHD_BIN" -D -e -f "$sp_d/sshd_config"
  else
    sp_spawn sshd "$SSHD_BIN" -D -e -f "$sp_d/sshd_config"
  fi
  SSHD_PID=$sp_last_pid
  SSHD_LOG=$sp_last_log
  sp_watch "$SSHD_PID"
  SSHD_CLIENT_CONFIG=$sp_d/ssh_config
  {
    echo "Host $SSHD_ADDR"
    echo "  Port $SSHD_PORT"
    echo "  User $SSHD_USER"
    echo "  IdentityFile $SSHD_KEY"
    echo "  IdentitiesOnly yes"
    echo "  UserKnownHostsFile $sp_d/known_hosts"
    echo "  StrictHostKeyChecking accept-new"
  } >"$SSHD_CLIENT_CONFIG"
  sp_i=0
  until ssh -F "$SSHD_CLIENT_CONFIG" -o BatchMode=yes -o ConnectTimeout=2 "$SSHD_ADDR" true \
      2>"$sp_d/probe.log"; do
    kill -0 "$SSHD_PID" 2>/dev/null ||
      sp_fail "start_sshd: sshd died: $(tail -5 "$SSHD_LOG" 2>/dev/null)"
    [ "$sp_i" -lt 100 ] || sp_fail "start_sshd: no login after 10 s: $(cat "$sp_d/probe.log")"
    sleep 0.1
    sp_i=$((sp_i + 1))
  done
}
