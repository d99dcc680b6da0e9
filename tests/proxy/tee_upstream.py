"""A transparent stdin tap in front of a real MCP server: records every line the proxy sends it.

    python tee_upstream.py RECORD -- COMMAND [ARGS...]

COMMAND inherits stdout and stderr, so what the server says reaches the proxy
untouched; each line the proxy writes is appended to RECORD (flushed at once)
before it is passed on. The tests read RECORD to show that a call the gate
refused never reached the real server.
"""

from __future__ import annotations

import signal
import subprocess
import sys


def main() -> int:
    argv = sys.argv[1:]
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write(__doc__)
        return 2
    record_path, command = argv[0], argv[2:]
    child = subprocess.Popen(command, stdin=subprocess.PIPE)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: child.send_signal(signum))
    with open(record_path, "ab") as record:
        try:
            for line in sys.stdin.buffer:
                record.write(line)
                record.flush()
                child.stdin.write(line)
                child.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        finally:
            try:
                child.stdin.close()
            except OSError:
                pass
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
