"""The serve loop the test servers share: stop on SIGTERM/SIGINT, after a lifetime or an idle
limit, or when the watched process (the test's shell) is gone, so no test leaves one behind;
and announce the port on stdout and, atomically, in a port file."""
import os
import signal
import sys
import threading
import time


def read_body(handler):
    """The request body: by Content-Length, or chunked."""
    if "chunked" in handler.headers.get("Transfer-Encoding", "").lower():
        chunks = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(chunks)
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run(server, args, name):
    """Serves until SIGTERM/SIGINT, the lifetime, the idle limit or the watched pid ends it."""
    stop = lambda *_: threading.Thread(target=server.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    started = time.monotonic()

    def watchdog():
        while True:
            time.sleep(0.25)
            elapsed = time.monotonic() - started
            if (args.lifetime and elapsed > args.lifetime) or \
                    (args.idle and time.monotonic() - server.last_activity > args.idle) or \
                    (args.watch_pid and not pid_alive(args.watch_pid)):
                sys.stderr.write("%s: stopping after %.0f s\n" % (name, elapsed))
                server.shutdown()
                return

    threading.Thread(target=watchdog, daemon=True).start()
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    print(port, flush=True)
    server.serve_forever(poll_interval=0.2)
    server.server_close()
