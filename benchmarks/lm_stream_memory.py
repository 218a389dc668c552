"""Peak memory of causal-LM token streams, at two corpus sizes: it must not grow with the corpus.

The corpus is the running Python's stdlib source written to local text files (`data=hf_lm` with
`data.name=text`: one document per non-blank line), once for 1x and repeated into more files for
the larger scales. Each measurement is a fresh process, so its peak RSS (ru_maxrss) is its own:
(a) building the cache (tokenizer training, chunked encoding into the memory-mapped file) and
(b) setting up from the cache and drawing `--batches` training batches. The floor column is the
peak right after the imports (torch alone maps ~700 MiB), the same at every size.

    python benchmarks/lm_stream_memory.py [--scales 1 4] [--batches 200] [--max-files N]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path


def write_corpus(folder: Path, scale: int, max_files: int | None) -> list[str]:
    """The stdlib sources as one text file per copy; `scale` copies."""
    from research.data.stdlib_code import stdlib_files

    folder.mkdir(parents=True, exist_ok=True)
    first = folder / "part-00.txt"
    with first.open("w", encoding="utf-8") as out:
        for _, source in islice(stdlib_files(), max_files):
            out.write(source if source.endswith("\n") else source + "\n")
    paths = [first]
    for copy in range(1, scale):
        paths.append(folder / f"part-{copy:02d}.txt")
        paths[-1].write_bytes(first.read_bytes())
    return [str(path) for path in paths]


def datamodule(files: list[str], data_dir: str):  # noqa: ANN201 - HFLanguageModelDataModule
    from research.data.hf_lm import HFLanguageModelDataModule

    return HFLanguageModelDataModule(
        name="text", subset=None, data_files={"train": files}, data_dir=data_dir
    )


def measure(stage: str, files: list[str], data_dir: str, batches: int) -> dict[str, float]:
    """In this (fresh) process: build, or set up and draw batches; the peak RSS in MiB."""
    start = time.perf_counter()
    module = datamodule(files, data_dir)
    import datasets  # noqa: F401 - imported by the build; counted in the floor

    result = {"floor_mib": _peak_mib()}  # torch, Lightning, datasets: the same at any size
    if stage == "build":
        streams = module.streams()
        result["tokens"] = sum(len(stream) for stream in streams.values())
        result["file_mib"] = (module.cache_dir() / "tokens.bin").stat().st_size / 2**20
    else:
        module.setup()
        for batch in islice(iter(module.train_dataloader()), batches):
            assert batch["input_ids"].shape[1] == module.config.context + 1
        result["windows"] = len(module.splits["train"])
    result["seconds"] = time.perf_counter() - start
    result["peak_mib"] = _peak_mib()
    return result


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def in_fresh_process(stage: str, files: list[str], data_dir: str, batches: int) -> dict:
    args = [sys.executable, __file__, "--measure", stage, "--data-dir", data_dir]
    args += ["--batches", str(batches), "--files", *files]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--max-files", type=int, default=None, help="stdlib files per copy")
    parser.add_argument("--measure", choices=["build", "train"], help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    parser.add_argument("--files", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.files, args.data_dir, args.batches)))
        return
    print(
        f"{'corpus':>7s} {'text MiB':>9s} {'tokens':>11s} {'cache MiB':>10s} "
        f"{'build peak MiB':>15s} {'build s':>8s} {'train peak MiB':>15s} {'train s':>8s}"
    )
    with tempfile.TemporaryDirectory() as root:
        for scale in args.scales:
            files = write_corpus(Path(root) / f"x{scale}", scale, args.max_files)
            text_mib = sum(Path(path).stat().st_size for path in files) / 2**20
            data_dir = str(Path(root) / f"data-x{scale}")
            built = in_fresh_process("build", files, data_dir, args.batches)
            trained = in_fresh_process("train", files, data_dir, args.batches)
            print(
                f"{scale:>6d}x {text_mib:9.1f} {int(built['tokens']):11,d} "
                f"{built['file_mib']:10.1f} {built['floor_mib']:10.0f} "
                f"{built['peak_mib']:15.0f} {built['seconds']:8.1f} "
                f"{trained['peak_mib']:15.0f} {trained['seconds']:8.1f}"
            )
    print(
        f"floor: peak RSS once torch, Lightning and datasets are imported; train: setup from the "
        f"cache, then {args.batches} batches (default data config)"
    )


if __name__ == "__main__":
    main()
