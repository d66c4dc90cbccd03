"""Ctrl-C on the command line: one line and status 130, however many interrupts arrive."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A command interrupted once, then again while it says so: the second SIGINT is a real
# signal sent to the process from inside the write of "planner: interrupted".
SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    import planner.cli as cli

    class Stderr:
        def __init__(self, real):
            self.real, self.sent = real, False
        def write(self, text):
            if not self.sent:
                self.sent = True
                os.kill(os.getpid(), signal.SIGINT)
            return self.real.write(text)
        def flush(self):
            self.real.flush()

    def interrupted(args):
        raise KeyboardInterrupt

    import planner.cli.schema
    planner.cli.schema.run = interrupted  # the command's handler, read as it registers
    sys.stderr = Stderr(sys.stderr)
    status = cli.main(["schema", "recommend"])
    print("status", status, "handler restored", signal.getsignal(signal.SIGINT) is
          signal.default_int_handler)
    """
)


def test_a_second_ctrl_c_while_stopping_prints_no_traceback() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr
    assert done.stderr.strip() == "planner: interrupted"
    assert done.stdout.strip() == "status 130 handler restored True"
