"""A database of its own on the test PostgreSQL server (.ci/postgres.sh) for each test.

Skipped where the server does not answer; with RESEARCH_REQUIRE_POSTGRES=1 (as `.ci/run` sets)
that is a failure instead. RESEARCH_POSTGRES_URL names another server (a role that may create
databases).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import pytest

from hydra_plugins.research_sweeper._storage import _url

# Tests get SERVER as users write it, so that the search's own choice of driver is what they
# test; this helper's own connections (through `_url`) make the same choice.
SERVER = os.environ.get(
    "RESEARCH_POSTGRES_URL", "postgresql://research:research@127.0.0.1:5432/research"
)


def _problem() -> str | None:
    import sqlalchemy

    try:
        engine = sqlalchemy.create_engine(_url(SERVER), connect_args={"connect_timeout": 5})
    except ImportError as err:
        return f"no PostgreSQL driver ({err}); pip install 'research[sweep]'"
    try:
        engine.connect().close()
    except sqlalchemy.exc.DBAPIError as err:
        reason = " ".join(str(err.orig or err).split())
        return f"PostgreSQL does not answer ({reason}); run .ci/postgres.sh as root"
    finally:
        engine.dispose()
    return None


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    """The URL of a new, empty database, dropped afterwards."""
    import sqlalchemy

    problem = _problem()
    if problem and os.environ.get("RESEARCH_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"RESEARCH_REQUIRE_POSTGRES=1 but {problem}")
    if problem:
        pytest.skip(problem)
    name = f"test_{uuid.uuid4().hex[:16]}"
    admin = sqlalchemy.create_engine(_url(SERVER), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
        yield (
            sqlalchemy.engine.make_url(SERVER)
            .set(database=name)
            .render_as_string(hide_password=False)
        )
    finally:
        with admin.connect() as connection:
            connection.execute(sqlalchemy.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
