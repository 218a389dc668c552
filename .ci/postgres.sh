#!/usr/bin/env bash
# A PostgreSQL server on this machine, for the tests marked `postgres` (search workers sharing an
# Optuna study in a real database).
#
# Installs Debian's postgresql with apt when it is missing, creates its cluster when there is
# none, makes it listen on loopback only (127.0.0.1 and ::1, port 5432), starts it when it is
# down, and creates the role `research` (password `research`, allowed to create databases: each
# test makes a database of its own) and its database `research`. Waits until the server accepts
# a password login over TCP, as the tests log in.
# Idempotent: a second call finds everything up and returns at once. Needs root.
# Exit status 0 when `psql postgresql://research:research@127.0.0.1:5432/research` works,
# non-zero (with one line saying why) otherwise.
set -euo pipefail

fail() { echo "postgres: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (apt-get and the server's own user)"

if ! command -v pg_ctlcluster >/dev/null || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null \
        || fail "apt-get install postgresql failed"
fi

VERSION="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
[ -n "$VERSION" ] || fail "no PostgreSQL version under /usr/lib/postgresql"
if ! pg_lsclusters -h | awk '{print $1, $2}' | grep -qx "$VERSION main"; then
    pg_createcluster "$VERSION" main >/dev/null || fail "pg_createcluster $VERSION main failed"
fi

CONF="/etc/postgresql/$VERSION/main/conf.d/research.conf"
WANT="# Written by .ci/postgres.sh: loopback only.
listen_addresses = 'localhost'
port = 5432"
changed=0
if [ ! -f "$CONF" ] || [ "$(cat "$CONF")" != "$WANT" ]; then
    mkdir -p "$(dirname "$CONF")"
    printf '%s\n' "$WANT" >"$CONF"
    changed=1
fi

status="$(pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main" {print $4}')"
if [ "$status" = online ] && [ "$changed" = 1 ]; then
    pg_ctlcluster "$VERSION" main restart || fail "pg_ctlcluster $VERSION main restart failed"
elif [ "$status" != online ]; then
    pg_ctlcluster "$VERSION" main start \
        || fail "pg_ctlcluster $VERSION main start failed; see /var/log/postgresql/"
fi

psql_admin() { runuser -u postgres -- psql -v ON_ERROR_STOP=1 -qAtX "$@"; }
for _ in $(seq 60); do
    psql_admin -c 'SELECT 1' >/dev/null 2>&1 && break
    sleep 0.5
done
psql_admin -c 'SELECT 1' >/dev/null 2>&1 || fail "server $VERSION/main does not answer after 30 s"

if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = 'research'")" != 1 ]; then
    psql_admin -c "CREATE ROLE research LOGIN CREATEDB PASSWORD 'research'" >/dev/null \
        || fail "could not create the role research"
fi
if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = 'research'")" != 1 ]; then
    psql_admin -c "CREATE DATABASE research OWNER research" >/dev/null \
        || fail "could not create the database research"
fi

for _ in $(seq 20); do
    PGPASSWORD=research psql -h 127.0.0.1 -p 5432 -U research -d research -qAtX -c 'SELECT 1' \
        >/dev/null 2>&1 && exit 0
    sleep 0.5
done
fail "postgresql://research:***@127.0.0.1:5432/research refuses a login; see /var/log/postgresql/"
