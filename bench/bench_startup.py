"""Start-up: what every `auditor` call pays before it does any work.

Each figure is one command in its own process, timed from start to exit (or, for the online
run, to its first request), over `--runs` rounds that alternate the commands so a burst of load
on the shared machine hits them alike; best and range are printed. The baseline is `python -c
pass` measured in the same rounds: it is the interpreter's own start, which nothing in auditor
can remove.

- `auditor --version`, `auditor --help`, `auditor run --help`: the parser alone (pre-commit
  hooks, scripts probing the tool, a person reading the help);
- the online `auditor run` to its first request: from start to the first connection reaching a
  loopback listener written here (it accepts and closes; the child is then stopped), with a
  fresh state file: the imports, the shipped policy packs loaded, the store opened, the sync
  started. This is the fixed cost in front of every nightly run's network time.

Each command runs once before the rounds, not counted, and every child runs with Python's
bytecode caches (PYTHONDONTWRITEBYTECODE is dropped from its environment), as an installed
auditor would: without them each run compiles auditor's sources again.

The target is a ratio to `python -c pass` measured in the same rounds: `auditor --version` and
`auditor --help` <= 6x, which is the 0.15 s aimed at over the 0.025 s the interpreter takes on
an idle machine. A ratio, because the machine is shared: under load both sides slow alike (at a
load average of 4, `python -c pass` took 0.06 s and `--version` 0.19 s, 3.1x), while a fixed
0.15 s would read as missed whenever other work runs. Each row prints its seconds too.

    bench/bench_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _util import result, row

#: `auditor --version` and `auditor --help` against `python -c pass`: 0.15 s over 0.025 s.
TARGET_RATIO = 6.0


#: The online run to its first request against a process importing only the libraries it needs
#: by then (`python -c "import httpx, sqlite3, orjson"`): what auditor adds before the sync
#: (its own modules, the shipped packs and readiness model loaded, the store opened) at most
#: as much again as those libraries' own import.
FIRST_REQUEST_RATIO = 2.0
LIBRARIES = "python -c 'import httpx, sqlite3, orjson' (a run's libraries)"
FIRST_REQUEST = "online auditor run: start to first request"


#: The children's environment: bytecode caches written and read, as an installed auditor has
#: them (with PYTHONDONTWRITEBYTECODE set, every run compiles auditor's sources again, about
#: 0.1-0.15 s of an online run's start); no proxy for the loopback listener.
ENV = {
    k: v
    for k, v in os.environ.items()
    if k != "PYTHONDONTWRITEBYTECODE" and not k.lower().endswith("_proxy")
}


def _children_cpu() -> float:
    """CPU seconds (user + system) of every child process ended and waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed_exit(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds from starting `argv` to its exit (its output thrown away), in a
    folder of its own: `python -m` puts the working folder first on the path, and a checkout's
    `auditor/` there would be imported instead of the installed one."""
    with tempfile.TemporaryDirectory() as tmp:
        cpu, start = _children_cpu(), time.perf_counter()
        subprocess.run(
            argv,
            cwd=tmp,
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        return time.perf_counter() - start, _children_cpu() - cpu


def _first_request(python: str) -> tuple[float, float]:
    """Wall and CPU seconds from starting an online `auditor run` to its first connection (the
    CPU time is up to its being stopped, a little after)."""
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.settimeout(60)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        env = {
            **ENV,
            "AUDITOR_BASE_URL": url,
            "AUDITOR_APP_URL": url,
            "AUDITOR_TOKEN": "bench-startup-token",
            "AUDITOR_STATE": str(Path(tmp) / "state.db"),
        }
        argv = [python, "-m", "auditor", "run", "--quiet", "--out", str(Path(tmp) / "out")]
        cpu, start = _children_cpu(), time.perf_counter()
        child = subprocess.Popen(
            argv, env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            connection, _ = listener.accept()
            took = time.perf_counter() - start
            connection.close()
        finally:
            child.kill()
            child.wait()
    return took, _children_cpu() - cpu


def _spread(times: list[float]) -> str:
    return f"best {min(times):.3f} s, range {min(times):.3f}-{max(times):.3f} s"


def main() -> int:
    """Time each command over the rounds and print the figures and the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="rounds, each command once (7)")
    args = parser.parse_args()
    python = sys.executable
    cli = [python, "-m", "auditor"]
    commands = {
        "python -c pass (baseline)": lambda: _timed_exit([python, "-c", "pass"]),
        "auditor --version": lambda: _timed_exit([*cli, "--version"]),
        "auditor --help": lambda: _timed_exit([*cli, "--help"]),
        "auditor run --help": lambda: _timed_exit([*cli, "run", "--help"]),
        LIBRARIES: lambda: _timed_exit([python, "-c", "import httpx, sqlite3, orjson"]),
        FIRST_REQUEST: lambda: _first_request(python),
    }
    for command in commands.values():
        command()  # once first, not counted: the bytecode caches are written
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(args.runs):
        names = list(commands)
        if round_ % 2:
            names.reverse()  # alternate the order: load bursts hit every command alike
        for name in names:
            wall, cpu = commands[name]()
            times[name].append(wall)
            cpus[name].append(cpu)
    baseline = min(times["python -c pass (baseline)"])
    print(f"start-up, {args.runs} runs each in its own process: best wall time, then wall range")
    print("and best CPU time (user + system: less sensitive than wall time to other load)")
    for name, taken in times.items():
        spread = f"{min(taken):.3f}-{max(taken):.3f} s, CPU {min(cpus[name]):.3f} s"
        print(f"{row(name, min(taken), baseline)}   {spread}")
    for name in ("auditor --version", "auditor --help"):
        ratio = min(times[name]) / baseline
        result(
            f"{name} vs python -c pass (each in its own process)",
            f"{ratio:.1f}x ({_spread(times[name])}; python -c pass {baseline:.3f} s)",
            f"<= {TARGET_RATIO:g}x",
            ratio <= TARGET_RATIO,
        )
    first = min(times[FIRST_REQUEST]) / min(times[LIBRARIES])
    result(
        "online auditor run to its first request vs importing httpx, sqlite3, orjson",
        f"{first:.1f}x ({_spread(times[FIRST_REQUEST])}; the libraries "
        f"{min(times[LIBRARIES]):.3f} s)",
        f"<= {FIRST_REQUEST_RATIO:g}x",
        first <= FIRST_REQUEST_RATIO,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
