"""What a job learns from SLURM about its own ending, read from `scontrol show job -o` lines as
SLURM 22.05 prints them (the end-to-end tests in tests/cli/test_slurm.py use a real cluster)."""

from __future__ import annotations

import pytest

from research.launch import slurm

# A task of an array, as `scontrol show job -o 41_0` prints it (fields cut to those read).
RUNNING = "JobId=42 ArrayJobId=41 ArrayTaskId=0 JobState=RUNNING Reason=None Restarts=0"


def _shown(**fields: str) -> str:
    line = RUNNING
    for key, value in fields.items():
        line = " ".join(f"{key}={value}" if t.startswith(f"{key}=") else t for t in line.split())
    return line + "\nJobId=43 ArrayJobId=41 ArrayTaskId=1 JobState=CANCELLED Restarts=0\n"


@pytest.mark.parametrize(
    ("fields", "attempt", "expected"),
    [
        ({}, 0, None),
        ({"Restarts": "1"}, 0, "requeued"),  # scontrol requeue: the count went up
        ({"Restarts": "1"}, 1, None),  # the requeued attempt itself, running
        ({"JobState": "PREEMPTED"}, 0, "requeued"),
        ({"JobState": "TIMEOUT"}, 0, "timeout"),
        ({"JobState": "COMPLETING", "Reason": "TimeLimit"}, 0, "timeout"),
        ({"JobState": "COMPLETING"}, 0, "cancelled"),  # scancel, while we still run
        ({"JobState": "CANCELLED"}, 0, "cancelled"),
    ],
)
def test_ending_reads_this_jobs_line(fields, attempt, expected):
    assert slurm.ending_from(_shown(**fields), "42", attempt) == expected


def test_another_tasks_line_is_not_ours():
    assert slurm.ending_from(_shown(), "43", 0) == "cancelled"
    assert slurm.ending_from(_shown(), "44", 0) is None


def test_ids_come_from_the_environment(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert slurm.job_id() is None and slurm.ending() is None
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.delenv("SLURM_ARRAY_JOB_ID", raising=False)
    assert slurm.display_id() == "42"
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "41")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "0")
    assert slurm.display_id() == "41_0"


def test_without_scontrol_a_job_is_not_ending(monkeypatch, tmp_path):
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol on it
    assert slurm.ending() is None


def test_a_scontrol_killed_while_slurm_requeues_is_asked_again(monkeypatch, tmp_path):
    """SLURM signals every process of a job it requeues, the `scontrol` the job just started
    to ask about it included: that failed call is not an answer (seen in .ci/run: the job was
    recorded failed, and its sweep with it)."""
    calls = tmp_path / "calls"
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(
        "#!/bin/sh\n"
        f'echo x >> "{calls}"\n'
        f'[ "$(wc -l < "{calls}")" -gt 1 ] || kill -TERM $$\n'
        f'echo "{_shown(Restarts="1")}"\n'
    )
    scontrol.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")  # this scontrol first
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "41")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "0")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    assert slurm.ending(wait_s=5) == "requeued"
    assert len(calls.read_text().splitlines()) == 2
