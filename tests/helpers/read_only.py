"""Make a folder truly read-only for a test: root ignores permission bits, so as root the folder
is bind-mounted read-only onto itself; otherwise its permission bits are cleared."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    subprocess.run(["mount", "--bind", folder, folder], check=True)
    subprocess.run(["mount", "-o", "remount,ro,bind", folder, folder], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", folder], check=True)
