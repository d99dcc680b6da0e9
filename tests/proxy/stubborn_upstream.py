"""An upstream that will not leave: ignores stdin EOF and SIGTERM, and has a grandchild.

For the shutdown escalation test: only SIGKILL to the whole process group ends it.
"""

import json
import os
import signal
import subprocess
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
record = os.environ.get("UPSTREAM_RECORD")
if record:
    with open(record, "a") as fh:
        fh.write(json.dumps({"event": "start", "pid": os.getpid()}) + "\n")
        fh.write(json.dumps({"event": "start", "pid": grandchild.pid}) + "\n")
for line in sys.stdin:
    message = json.loads(line)
    if "id" in message and "method" in message:
        result = {"tools": []} if message["method"] == "tools/list" else {
            "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "stubborn", "version": "0"}}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
        sys.stdout.flush()
time.sleep(600)  # stdin closed: stay anyway
