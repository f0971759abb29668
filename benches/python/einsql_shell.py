"""Running the einsql shell binary from a benchmark script: a script on
stdin, with a timeout. Shared by benches/python/spores.py and systemml.py.
"""

from __future__ import annotations

import subprocess


def run_shell(binary: str, script: str, timeout: float):
    """The finished process (its stdout, stderr and return code as text)
    of `binary` given `script` on stdin, or None when it did not finish in
    `timeout` seconds (it is then killed)."""
    try:
        return subprocess.run(
            [binary], input=script, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return None
