"""What an anonymous 200 MB POST costs a real Forge web process (uvicorn, the body limit).

A deployment (``tests.integration.deployment``: SQLite, the web process, no worker) is
started, then each case is sent several times on a raw socket, writing the body in 1 MiB
pieces until the server answers or the 200 MB are out:

- ``Content-Length: 200 MB``: refused before the body is read;
- ``Transfer-Encoding: chunked``: refused when the body crosses the limit;
- baseline, in the same run: a 2-byte anonymous POST, answered 401 by the application.

Reported: median time to the answer, MiB written before it came (the rest of 200 was
never sent), and how far the web process's peak resident memory (VmHWM) rose over all
the requests. Goals: each refusal under 1 s, under the limit plus socket buffers written,
and a peak that grows by less than 32 MiB. The same requests on main's daphne took 6 to
7 s to a 401, with all 200 MB read and the process 210 MB larger.

Run with ``python -m bench.body_limit``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench.common import print_table
from tests.integration.deployment import Deployment, RawRequest

HUGE = 200 * 2**20
PIECE = b"x" * 2**20
REPEATS = 5
GOAL_S = 1.0
GOAL_GROWTH_MIB = 32.0


def peak_rss_mib(deployment: Deployment) -> float:
    status = Path(f"/proc/{deployment.processes[0].pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def post(deployment: Deployment, case: str) -> tuple[float, float, int]:
    """Seconds to the answer, MiB written before it, and its status."""
    headers = {"Content-Type": "application/json"}
    if case == "chunked":
        headers["Transfer-Encoding"] = "chunked"
    else:
        headers["Content-Length"] = str(2 if case == "baseline" else HUGE)
    started = time.perf_counter()
    request = RawRequest(deployment, headers)
    if case == "baseline":
        request.send(b"{}")
    while case != "baseline" and request.sent < HUGE:
        piece = b"%x\r\n%s\r\n" % (len(PIECE), PIECE) if case == "chunked" else PIECE
        if not request.send(piece):
            break
    status, _, _ = request.response(timeout=120)
    seconds = time.perf_counter() - started
    request.close()
    return seconds, request.sent / 2**20, status


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        deployment = Deployment("sqlite", Path(root)).start(workers=0)
        try:
            before = peak_rss_mib(deployment)
            results = {case: [post(deployment, case) for _ in range(REPEATS)]
                       for case in ("baseline", "content-length", "chunked")}  # fmt: skip
            growth = peak_rss_mib(deployment) - before
        finally:
            deployment.stop()
    base = statistics.median(seconds for seconds, _, _ in results["baseline"])
    rows = []
    for case, samples in results.items():
        seconds = statistics.median(s for s, _, _ in samples)
        sent = statistics.median(m for _, m, _ in samples)
        statuses = ",".join(sorted({str(status) for _, _, status in samples}))
        met = "" if case == "baseline" else ("met" if seconds < GOAL_S else "MISSED")
        rows.append([case, statuses, f"{seconds * 1000:.1f}", f"{sent:.1f}",
                     f"{seconds / base:.1f}", met])  # fmt: skip
    print(f"200 MB anonymous POSTs, {REPEATS} of each; baseline: a 2-byte POST (401)")
    print_table(["case", "status", "median ms", "MiB sent", "ratio", "goal < 1 s"], rows)
    verdict = "met" if growth < GOAL_GROWTH_MIB else "MISSED"
    print(f"web process peak RSS grew by {growth:.1f} MiB (goal < {GOAL_GROWTH_MIB:g}: {verdict})")


if __name__ == "__main__":
    main()
