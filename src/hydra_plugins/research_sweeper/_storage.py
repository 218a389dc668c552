"""Where a study lives, checked before a search writes anything, and shown without its password.

`hydra.sweeper.storage` is an SQLAlchemy URL for Optuna's database storage (`sqlite:///file.db`,
`postgresql://user:password@host/database`, `mysql+pymysql://...`), `journal://<path>` for
Optuna's journal file storage (one append-only file: workers that share a filesystem but no
database server), or null for a study in this process's memory. A storage that cannot be used
(an unknown scheme, a driver not installed, a server that does not answer or refuses the login)
is a ConfigError saying which, before the study or the sweep folder is written. A URL's password
is never printed nor saved: `shown` masks it.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from research.config.errors import ConfigError

JOURNAL = "journal://"
VALID = (
    "use sqlite:///<file>.db, postgresql://<user>:<password>@<host>/<database>, "
    "mysql+pymysql://..., journal://<file>.log, or null (in memory)"
)
# The real storage URL, for the jobs of a search whose config shows it masked (keep_secret).
STORAGE_ENV = "RESEARCH_OPTUNA_STORAGE"
# The command line every run records (research.cli.app.COMMAND_ENV).
COMMAND_ENV = "RESEARCH_COMMAND"
# The driver of a postgresql:// URL that names none (see _url).
PSYCOPG = "postgresql+psycopg"
# Seconds a database server may take to answer the first connection.
CONNECT_TIMEOUT_S = 10


def _url(url: str) -> Any:
    """The SQLAlchemy URL object of `url` (ConfigError when it is none). A `postgresql://` URL
    that names no driver gets psycopg, the one `research[sweep]` installs: SQLAlchemy 2.1 picks
    it too, but 2.0 (the newest release for Python 3.10) picks psycopg2, which is not there."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigError(
            f"hydra.sweeper.storage={shown(url)} is not a storage URL; {VALID}"
        ) from None
    return parsed.set(drivername=PSYCOPG) if parsed.drivername == "postgresql" else parsed


def shown(url: str | None) -> str:
    """`url` with its password replaced by ***: what messages and saved files show."""
    if url is None:
        return "null"
    return re.sub(r"(://[^/@:]*):[^@]*@", r"\1:***@", url)


def redact(text: str, url: str | None) -> str:
    """`text` with every occurrence of `url` shown masked."""
    return text.replace(url, shown(url)) if url else text


def _writable_dir(path: Path, what: str, url: str) -> None:
    """Refuse a file whose folder can be neither found nor made."""
    folder = path.resolve().parent
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir() or not _can_write(existing):
        raise ConfigError(
            f"hydra.sweeper.storage={shown(url)}: cannot write the {what} in {folder} "
            f"({existing} is not a writable folder); choose another path"
        )


def _make_dir(path: Path, what: str, url: str) -> None:
    """Make the folder of `path`; a folder that cannot be made (as root, `os.access` allows
    nearly everything) is refused in one line."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(
            f"hydra.sweeper.storage={shown(url)}: cannot make the folder of the {what} "
            f"({err.strerror}: {path.parent}); choose another path"
        ) from None


def _can_write(folder: Path) -> bool:
    import os

    return os.access(folder, os.W_OK | os.X_OK)


def _journal_file(url: str) -> Path:
    """The file a `journal://` URL names, in a folder that can be made or written."""
    path = Path(url.removeprefix(JOURNAL)).expanduser()
    if not str(path) or str(path) == ".":
        raise ConfigError(f"hydra.sweeper.storage={url} names no file; {VALID}")
    _writable_dir(path, "journal file", url)
    return path


def _journal(url: str) -> Any:
    import optuna

    path = _journal_file(url)
    _make_dir(path, "journal file", url)
    try:
        backend = optuna.storages.journal.JournalFileBackend(str(path))
    except OSError as err:
        raise ConfigError(
            f"hydra.sweeper.storage={url}: cannot open the journal file ({err.strerror}: "
            f"{path}); choose another path"
        ) from None
    return optuna.storages.JournalStorage(backend)


def _engine_kwargs(backend: str) -> dict[str, Any]:
    """A bounded wait for a server, and a check of pooled connections a long search keeps (a
    server may close idle ones)."""
    if backend in ("postgresql", "mysql", "mariadb"):
        return {"connect_args": {"connect_timeout": CONNECT_TIMEOUT_S}, "pool_pre_ping": True}
    return {}


def _engine(url: str, parsed: Any) -> Any:
    """An SQLAlchemy engine for `parsed` (it connects only when asked), or a ConfigError naming
    the scheme or driver it lacks."""
    import sqlalchemy
    from sqlalchemy.exc import NoSuchModuleError

    backend = parsed.get_backend_name()
    try:
        return sqlalchemy.create_engine(parsed, **_engine_kwargs(backend))
    except NoSuchModuleError:
        raise ConfigError(
            f"hydra.sweeper.storage={shown(url)}: unknown storage scheme {parsed.drivername!r}; "
            f"{VALID}"
        ) from None
    except ImportError as err:
        raise ConfigError(
            f"hydra.sweeper.storage={shown(url)}: the {backend} driver is not installed "
            f"({err}); pip install 'research[sweep]' (psycopg for postgresql://), or name an "
            f"installed driver ({backend}+<driver>://)"
        ) from None


def _check_connects(url: str, parsed: Any) -> None:
    """Open and close one connection, turning each way it can fail into one line."""
    from sqlalchemy.exc import DBAPIError

    engine = _engine(url, parsed)
    try:
        engine.connect().close()
    except DBAPIError as err:
        reason = " ".join(str(err.orig or err).split())
        raise ConfigError(
            f"hydra.sweeper.storage={shown(url)}: cannot connect: {redact(reason, url)}; "
            "check that the server runs and the database, user and password are right"
        ) from None
    finally:
        engine.dispose()


def _sqlite_file(parsed: Any) -> Path | None:
    """The database file of an `sqlite:///` URL; None for another backend or an in-memory one."""
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database).expanduser()


def check_storage(url: str | None) -> None:
    """What `open_storage` refuses without connecting or writing anything: a URL that is none,
    a scheme or driver that is not there, a file that could not be written. It asks nothing of
    a server (the command may be meant for another machine's network) and is quick enough to
    run before a search composes its jobs."""
    if not url:
        return
    if url.startswith(JOURNAL):
        _journal_file(url)
        return
    parsed = _url(url)
    file = _sqlite_file(parsed)
    if file is not None:
        _writable_dir(file, "study database", url)
    _engine(url, parsed).dispose()


def open_storage(url: str | None) -> Any:
    """The Optuna storage `url` names (None: in memory), reachable and with Optuna's tables."""
    if not url:
        return None
    if url.startswith(JOURNAL):
        return _journal(url)
    import optuna
    import sqlalchemy.exc

    check_storage(url)
    parsed = _url(url)
    file = _sqlite_file(parsed)
    if file is not None:
        _make_dir(file, "study database", url)
    _check_connects(url, parsed)
    kwargs = _engine_kwargs(parsed.get_backend_name())

    def storage() -> Any:
        return optuna.storages.RDBStorage(
            parsed.render_as_string(hide_password=False), engine_kwargs=kwargs
        )

    # Workers that create a new database at once race inside Optuna's table set-up (a loser
    # sees "table already exists" or a duplicate version row): it waits and opens it again.
    for delay in (0.05, 0.1, 0.2, 0.4, 0.8):
        try:
            return storage()
        except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.OperationalError):
            time.sleep(delay)
    return storage()


def keep_secret(config: Any, url: str | None) -> None:
    """Keep `url`'s password out of what the search records: the sweeper's config (multirun.yaml),
    the Hydra overrides each job is composed from (its .hydra/hydra.yaml) and the command line
    every run records (metrics.json, W&B) show it masked. This process's jobs, and the processes
    it starts, find the real URL in the environment (`real_url`)."""
    import os

    from omegaconf import open_dict, read_write

    if not url or shown(url) == url:
        return
    os.environ[STORAGE_ENV] = url
    if COMMAND_ENV in os.environ:
        os.environ[COMMAND_ENV] = redact(os.environ[COMMAND_ENV], url)
    with read_write(config.hydra), open_dict(config.hydra):
        config.hydra.sweeper.storage = shown(url)
        config.hydra.overrides.hydra = [redact(str(o), url) for o in config.hydra.overrides.hydra]


def real_url(configured: str | None) -> str | None:
    """The storage URL a job's config names, with the password `keep_secret` masked in it."""
    import os

    secret = os.environ.get(STORAGE_ENV)
    return secret if secret and configured and shown(secret) == configured else configured
