"""`datasets.load_dataset` with one-line errors: what hf_text and hf_lm read their data through."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def load_hf_dataset(
    name: str,
    subset: str | None,
    data_files: Any,
    data_dir: str,
    columns: dict[str, str],
    streaming: bool = False,
) -> Any:
    """The DatasetDict of a hub dataset (with network) or a builder over local files, checked to
    have `columns` (config key -> column name) in its train split. `streaming` reads the rows as
    they are iterated (an IterableDatasetDict) instead of converting them to Arrow first."""
    import datasets

    try:
        loaded = datasets.load_dataset(
            name,
            subset,
            data_files=data_files,
            cache_dir=str(Path(data_dir) / "hf"),
            streaming=streaming,
        )
    except Exception as err:  # noqa: BLE001 - hub, network and file errors alike
        reason = str(err).strip().splitlines()[0][:160] if str(err).strip() else ""
        raise FileNotFoundError(
            f"data.name={name!r} could not be loaded ({type(err).__name__}: {reason}); "
            "without network use a builder such as data.name=json with data.data_files"
        ) from None
    known = _columns(loaded["train"])
    for key, column in columns.items():
        if known is not None and column not in known:
            raise ValueError(
                f"data.{key}={column!r} is not a column of {name!r}; its columns are: "
                + ", ".join(known)
            )
    return loaded


def _columns(rows: Any) -> list[str] | None:
    """The column names of `rows`, or None where it has none. A stream may not say them
    (`datasets` 2.18 on JSON files); its first row does."""
    if rows.column_names is not None:
        return rows.column_names
    first = next(iter(rows.take(1)), None)
    return None if first is None else list(first)
