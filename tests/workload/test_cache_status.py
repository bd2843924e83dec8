"""The training pods' cache wait (workload/cache_status.py run as the init container): progress while it waits, a
deadline fixed by the job's first attempt, and only the job's own version counted.

What it stands in for: HyperPod's log monitoring flags a job whose first progress line does not come within
expectedStartCutOffInSeconds of the agent starting to watch it (hyperpod-elastic-agent 1.1.3, LogRule.evaluate),
so a silent wait inside the monitored process was restarted as hung; each restart then waited a full timeout
again. Run here as the image runs it: `python cache_status.py ...` in a subprocess, stdlib only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

WORKLOAD = Path(__file__).resolve().parents[2] / "workload"
sys.path.insert(0, str(WORKLOAD))

import cache_status  # noqa: E402

START = 1_000_000.0  # Clock's start: a status written then is fresh


def _status(path: Path, warm: int, *, version: str = "v1", total: int = 1000, updated: float = START) -> None:
    cache_status.write(
        path,
        cache_status.CacheStatus(
            f"/dataset/c4/{version}/", "c4", version, total, warm, warm == total, updated
        ),
    )


def _argv(tmp_path: Path, *extra: str) -> list[str]:
    return [
        f"--status={tmp_path / 'status.json'}",
        "--wait-for-cached-fraction=1",
        "--dataset-name=c4",
        "--dataset-version=v1",
        f"--deadline-file={tmp_path / 'wait' / 'job.json'}",
        *extra,
    ]


class Clock:
    """Wall-clock seconds that advance only when the waiter sleeps."""

    def __init__(self, start: float = START) -> None:
        self.t = start
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


def test_it_prints_progress_every_poll_and_returns_once_the_version_is_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = Clock()
    _status(tmp_path / "status.json", 500)

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.slept) == 3:
            _status(tmp_path / "status.json", 1000)

    assert cache_status.main(_argv(tmp_path, "--poll-seconds=30"), now=clock.now, sleep=sleep) == 0
    lines = capsys.readouterr().out.splitlines()
    waiting = [line for line in lines if "0.500 warm; waiting for 1" in line]
    assert len(waiting) == 3, lines  # one line per poll: never silent
    assert "1.000 of the dataset warm" in lines[-1]


def test_a_restart_waits_only_what_is_left_of_the_first_attempts_deadline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = Clock()
    _status(tmp_path / "status.json", 500)
    argv = _argv(tmp_path, "--timeout-seconds=300", "--poll-seconds=60")
    assert cache_status.main(argv, now=clock.now, sleep=clock.sleep) == 0
    assert sum(clock.slept) == 300
    assert "STARTING TRAINING ON A COLD CACHE" in capsys.readouterr().err
    # The pod is recreated 100 s later: the deadline is already past, so it goes on at once instead of 300 s more.
    clock.t += 100
    clock.slept.clear()
    assert cache_status.main(argv, now=clock.now, sleep=clock.sleep) == 0
    assert clock.slept == []
    # ... and once prewarm has finished, a restart starts at once whatever the deadline says.
    _status(tmp_path / "status.json", 1000, updated=clock.t)
    assert cache_status.main(argv, now=clock.now, sleep=clock.sleep) == 0
    assert clock.slept == []


def test_a_restart_in_the_middle_waits_the_remainder(tmp_path: Path) -> None:
    clock = Clock()
    first = cache_status.anchored_deadline(tmp_path / "d.json", 600, now=clock.now)
    clock.t += 250
    assert cache_status.anchored_deadline(tmp_path / "d.json", 600, now=clock.now) == first
    assert first - clock.now() == 350


def capsys_err(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_another_versions_status_does_not_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    _status(tmp_path / "status.json", 1000, version="v2")
    assert cache_status.main(_argv(tmp_path, "--timeout-seconds=0"), now=clock.now, sleep=clock.sleep) == 0
    assert "not this job's dataset" in capsys_err(capsys)


def test_a_torn_deadline_file_is_named_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "wait").mkdir()
    (tmp_path / "wait" / "job.json").write_text('{"dead')
    assert cache_status.main(_argv(tmp_path)) == 1
    err = capsys.readouterr().err
    assert "job.json" in err and "delete it" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "bad",
    ["--wait-for-cached-fraction=0", "--poll-seconds=0", "--timeout-seconds=-1", "--max-status-age=0",
     "--at-deadline=fail"],
)  # fmt: skip
def test_bad_arguments_exit_2(tmp_path: Path, bad: str) -> None:
    assert cache_status.main([*_argv(tmp_path), bad]) == 2


def test_the_program_runs_as_the_init_container_runs_it(tmp_path: Path) -> None:
    """`python /opt/hubspoke/cache_status.py ...` with the image's stdlib only: a warm version exits 0 at once."""
    _status(tmp_path / "status.json", 1000, updated=time.time())
    run = subprocess.run(
        [sys.executable, str(WORKLOAD / "cache_status.py"), *_argv(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "1.000 of the dataset warm" in run.stdout
    record = json.loads((tmp_path / "wait" / "job.json").read_text())
    assert record["deadline"] > time.time() + 5 * 3600, "the default wait is six hours from the first attempt"


def test_sample_regions_cover_every_part_of_the_version() -> None:
    files = [("/v/a", 100), ("/v/b", 10), ("/v/c", 890)]
    regions = cache_status.sample_regions(files, samples=10, sample_bytes=5, phase=0.5)
    assert len(regions) == 10
    assert {p for p, _, _ in regions} == {"/v/a", "/v/c"}  # one every 100 bytes: b (10 bytes) falls between
    for path, offset, length in regions:
        assert offset >= 0 and offset + length <= dict(files)[path] and length == 5
    tiny = cache_status.sample_regions([("/v/a", 3)], samples=4, sample_bytes=1 << 20, phase=0.0)
    assert all(offset + length <= 3 for _, offset, length in tiny)
    assert cache_status.sample_regions([], samples=4, sample_bytes=1, phase=0.0) == []


def test_recheck_counts_what_the_spoke_reports_fetching_as_not_held() -> None:
    held: set[tuple[str, int]] = {("/v/a", 0)}

    def fetch(path: str, offset: int, length: int) -> int:
        was = (path, offset) in held
        held.add((path, offset))
        return 0 if was else length

    regions = [("/v/a", 0, 10), ("/v/a", 50, 10)]
    assert cache_status.recheck(fetch, regions) == cache_status.Residency("missing", 20, 10)
    assert cache_status.recheck(fetch, regions) == cache_status.Residency("held", 20, 0)
    # A cluster reporting every covered byte fails its own repeat: nothing is claimed either way.
    assert cache_status.recheck(lambda p, o, n: n, regions).check == "unverifiable"
    assert cache_status.Residency("missing", 20, 10).held_estimate(1000) == 500


def test_a_status_whose_sample_found_evicted_bytes_does_not_release_a_waiting_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache_status.write(
        tmp_path / "status.json",
        cache_status.CacheStatus("/dataset/c4/v1/", "c4", "v1", 1000, 600, False, START, "missing", 20, 8),
    )
    clock = Clock()
    assert cache_status.main(_argv(tmp_path, "--timeout-seconds=0"), now=clock.now, sleep=clock.sleep) == 0
    assert "0.600 warm" in capsys_err(capsys)


def test_at_the_deadline_the_wait_exits_0_so_the_pod_is_not_restarted_forever(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kubernetes restarts a failed init container unless restartPolicy is Never ("Init Containers"); the workers
    use OnFailure (PyTorchJob) or Always (HyperPod). So the deadline ends the wait with exit 0 and one loud line;
    with --at-deadline fail it writes the refusal train.py then refuses to start on."""
    clock = Clock()
    argv = _argv(tmp_path, "--timeout-seconds=60", "--poll-seconds=30")
    assert cache_status.main(argv, now=clock.now, sleep=clock.sleep) == 0
    warning = [line for line in capsys.readouterr().err.splitlines() if "COLD CACHE" in line]
    assert len(warning) == 1 and "WARNING" in warning[0]
    refusal = tmp_path / "wait" / "job.refused"
    failing = _argv(tmp_path, "--at-deadline=fail", f"--refusal-file={refusal}")
    assert cache_status.main(failing, now=clock.now, sleep=clock.sleep) == 0
    assert "deadline passed" in refusal.read_text()


def test_a_status_older_than_the_max_age_is_not_taken_as_warm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A warm status written before an eviction says nothing now: past --max-status-age the wait goes on until a
    fresh prewarm run rewrites it (or the deadline)."""
    clock = Clock()
    _status(tmp_path / "status.json", 1000, updated=START - 7200)
    argv = _argv(tmp_path, "--timeout-seconds=120", "--poll-seconds=30", "--max-status-age=3600")

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.slept) == 2:
            _status(tmp_path / "status.json", 1000, updated=clock.t)

    assert cache_status.main(argv, now=clock.now, sleep=sleep) == 0
    out = capsys.readouterr().out
    assert "7200 s old" in out and "1.000 of the dataset warm" in out.splitlines()[-1]
    assert len(clock.slept) == 2
    # A longer max age counts the old status at once.
    clock.slept.clear()
    _status(tmp_path / "status.json", 1000, updated=START - 7200)
    argv = _argv(tmp_path, "--timeout-seconds=120", "--max-status-age=86400")
    (tmp_path / "wait" / "job.json").unlink()
    assert cache_status.main(argv, now=clock.now, sleep=clock.sleep) == 0 and clock.slept == []
