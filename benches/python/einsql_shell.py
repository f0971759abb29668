"""Running the einsql shell binary from a benchmark script: a script on
stdin, with a timeout, and reading a statement's time and value from its
output. Shared by benches/python/outer.py, spores.py, systemml.py,
storel.py, tiles.py and entrywise.py.
"""

from __future__ import annotations

import re
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


def time_and_value(binary: str, script: str, timeout: float):
    """Runs `script`, whose first `.timer` figure is the statement's and
    whose CSV output has a column `v`: the statement's time in seconds and
    the value below the header, or None and a message when the shell did
    not finish in `timeout` seconds or printed an error."""
    done = run_shell(binary, script, timeout)
    if done is None:
        return None, f"not finished in {timeout:.0f} s"
    out = done.stdout + done.stderr
    if "rror" in out:
        line = next(line for line in out.splitlines() if "rror" in line)
        return None, line.strip()[:120]
    seconds = float(re.search(r"Run Time: ([0-9.]+) s", out).group(1))
    lines = out.splitlines()
    return seconds, float(lines[lines.index("v") + 1])
