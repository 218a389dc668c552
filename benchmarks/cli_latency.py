"""How fast the CLI answers when no run starts: `--help` (of the command and of a node),
`--cfg job` and a config error.

Each command runs as a fresh process, as a user types it; the CLI must answer in under 1 s
because torch and Lightning are only imported once a run really starts.

    python benchmarks/cli_latency.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "--help": ["--help"],
    "--help model.net": ["--help", "model.net"],
    "--cfg job": ["--cfg", "job"],
    "config error (model=cnnn)": ["model=cnnn"],
    "config error (optimizer.lr=-1)": ["optimizer.lr=-1"],
}


def time_command(args: list[str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [str(Path(sys.executable).parent / "research-train"), *args],
        cwd=cwd,
        env={**os.environ},
        capture_output=True,
        check=False,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cwd:
        time_command(["--help"], cwd)  # warm the OS file cache once
        print(f"{'command':34s} {'median':>8s} {'max':>8s}  (s, {args.repeats} runs)")
        for name, argv in COMMANDS.items():
            times = [time_command(argv, cwd) for _ in range(args.repeats)]
            print(f"research-train {name:19s} {statistics.median(times):8.3f} {max(times):8.3f}")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch, lightning"], check=True)
    print(f"for scale, `import torch, lightning` alone: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
