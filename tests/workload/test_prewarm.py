"""workload/prewarm.py against the Qumulo contract fake (tests/fakes/qumulo.py): fetch-data, resume, errors.

The fake implements fetch-data but not directory listing, so these tests hand the program its file list
(`list_files`); every REST call the warm-up makes (login, fetch-data) goes through the real SDK to the fake.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.qumulo import FakeQumulo

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workload"))
import prewarm

MIB = 1 << 20
FILES = {
    "/dataset/shard-000.bin": 150 * MIB,
    "/dataset/shard-001.bin": 3 * MIB,
    "/dataset/b/shard-002.bin": 0,
}


@pytest.fixture
def spoke() -> Iterator[FakeQumulo]:
    with FakeQumulo(name="spoke") as fake:
        fake.password = "secret"
        for path, size in FILES.items():
            fake.add_file(path, size)
        yield fake


def _listing(fake: FakeQumulo) -> Any:
    def list_files(client: Any, root: str) -> Iterator[prewarm.FileEntry]:
        for path in sorted(FILES):
            yield prewarm.FileEntry(path, FILES[path])

    return list_files


def _run(fake: FakeQumulo, state: Path, *, password: str = "secret", **options: Any) -> tuple[int, str]:
    log = io.StringIO()
    journal = prewarm.Journal(state)
    try:
        code = prewarm.prewarm(
            prewarm.sdk_client_factory("127.0.0.1", fake.port, "admin", password, 5),
            journal,
            prewarm.Options(
                root="/dataset/", parallel=2, base_delay_s=0.01, progress_every_s=0.05, **options
            ),
            log=log,
            list_files=_listing(fake),
        )
    finally:
        journal.close()
    return code, log.getvalue()


def test_every_byte_of_every_file_is_fetched_once(spoke: FakeQumulo, tmp_path: Path) -> None:
    code, log = _run(spoke, tmp_path / "state.jsonl")
    assert code == 0, log
    assert {p: spoke.fetched_bytes.get(p, 0) for p in FILES} == FILES
    assert "3/3 files" in log and "every file is warm" in log
    assert "ETA" in log and "MB/s" in log


def test_a_rerun_skips_what_is_warm(spoke: FakeQumulo, tmp_path: Path) -> None:
    state = tmp_path / "state.jsonl"
    assert _run(spoke, state)[0] == 0
    calls = spoke.called("POST", "fetch-data")
    code, log = _run(spoke, state)
    assert code == 0
    assert spoke.called("POST", "fetch-data") == calls, "nothing left to fetch"
    assert "3 already warm" in log


def test_resume_continues_a_large_file_from_its_journalled_offset(spoke: FakeQumulo, tmp_path: Path) -> None:
    state = tmp_path / "state.jsonl"
    big = "/dataset/shard-000.bin"
    # A previous run got 128 MiB into the big file, then the pod died mid-line.
    state.write_text(f'{{"at":"{big}","offset":{128 * MIB}}}\n{{"done":"/dataset/sha')
    code, _ = _run(spoke, state)
    assert code == 0
    assert spoke.fetched_bytes[big] == FILES[big] - 128 * MIB


def test_transient_errors_are_retried(spoke: FakeQumulo, tmp_path: Path) -> None:
    spoke.fail("POST", "fetch-data", times=2, status=503, error_class="busy")
    code, log = _run(spoke, tmp_path / "state.jsonl")
    assert code == 0, log
    assert {p: spoke.fetched_bytes.get(p, 0) for p in FILES} == FILES


def test_a_permanent_error_fails_the_file_and_the_run_but_not_the_others(
    spoke: FakeQumulo, tmp_path: Path
) -> None:
    spoke.fail("POST", "shard-001.bin/fetch-data", times=100, status=400, error_class="fs_bad_request")
    state = tmp_path / "state.jsonl"
    code, log = _run(spoke, state)
    assert code == 1
    assert "FAILED /dataset/shard-001.bin" in log and "fs_bad_request" in log
    assert spoke.fetched_bytes["/dataset/shard-000.bin"] == FILES["/dataset/shard-000.bin"]
    assert "shard-001" not in "".join(line for line in state.read_text().splitlines() if '"done"' in line)


def test_wrong_password_stops_at_once(spoke: FakeQumulo, tmp_path: Path) -> None:
    code, log = _run(spoke, tmp_path / "state.jsonl", password="wrong")
    assert code == 1
    assert "QUMULO_PASSWORD" in log
    assert spoke.called("POST", "fetch-data") == 0


def test_unreachable_spoke_gives_up_after_bounded_retries(spoke: FakeQumulo, tmp_path: Path) -> None:
    spoke.down()
    code, log = _run(spoke, tmp_path / "state.jsonl", retries=2)
    assert code == 1
    assert "gave up after 3 attempts" in log


def test_bad_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--host", "127.0.0.1", "--root", "dataset", "--state", str(tmp_path / "s"), "--parallel", "0"]
    assert prewarm.main(argv, env={}) == 2
    err = capsys.readouterr().err
    assert "--parallel" in err and "absolute path" in err and "QUMULO_PASSWORD" in err
