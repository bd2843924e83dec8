"""workload/prewarm.py against the Qumulo contract fake (tests/fakes/qumulo.py): fetch-data, resume, errors.

Most tests hand the program its file list (`list_files`) to isolate warming from listing; the walk tests list
the tree through the fake's paged directory API. Every REST call goes through the real SDK to the fake.
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
import bench_reader
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


# Names chosen so that directory-first or files-first listings would both get the order wrong: "a-b.bin" sorts
# before "a/..." and "a0.bin" after it ('-' < '/' < '0').
TREE = {
    "/dataset/a-b.bin": 1 * MIB,
    "/dataset/a/x.bin": 2 * MIB,
    "/dataset/a/y/z.bin": 3 * MIB,
    "/dataset/a0.bin": 4 * MIB,
    "/dataset/b.bin": 0,
    "/dataset/c/d/e/f.bin": 5 * MIB,
    "/elsewhere/not-warmed.bin": 6 * MIB,
}


@pytest.fixture
def tree() -> Iterator[FakeQumulo]:
    with FakeQumulo(name="spoke") as fake:
        fake.password = "secret"
        fake.entries_page_size = 2  # every directory of more than two entries takes several pages
        for path, size in TREE.items():
            fake.add_file(path, size)
        yield fake


def loader_order(tmp_path: Path) -> list[tuple[str, int]]:
    """The same tree on a local disk, in the order the benchmark reader (the loader's order) reads it."""
    root = tmp_path / "dataset"
    for path, size in TREE.items():
        if path.startswith("/dataset/"):
            local = root / path.removeprefix("/dataset/")
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_bytes(b"\0" * min(size, 1))
    return [
        (
            f"/dataset/{s.path.relative_to(root).as_posix()}",
            TREE[f"/dataset/{s.path.relative_to(root).as_posix()}"],
        )
        for s in bench_reader.discover_shards(root, "*")
    ]


def test_walk_lists_every_file_under_root_in_the_loaders_order(tree: FakeQumulo, tmp_path: Path) -> None:
    client = prewarm.sdk_client_factory("127.0.0.1", tree.port, "admin", "secret", 5)()
    walked = [(f.path, f.size) for f in prewarm.walk(client, "/dataset/")]
    assert walked == loader_order(tmp_path)
    directories = {p.rsplit("/", 1)[0] for p, _ in walked}
    assert tree.called("GET", r"/entries/") > len(directories), "paging was not exercised"


def test_prewarm_walks_the_tree_itself_and_warms_only_the_root(tree: FakeQumulo, tmp_path: Path) -> None:
    log = io.StringIO()
    journal = prewarm.Journal(tmp_path / "state.jsonl")
    try:
        code = prewarm.prewarm(
            prewarm.sdk_client_factory("127.0.0.1", tree.port, "admin", "secret", 5),
            journal,
            prewarm.Options(root="/dataset/", parallel=2, base_delay_s=0.01, progress_every_s=0.05),
            log=log,
        )
    finally:
        journal.close()
    assert code == 0, log.getvalue()
    assert {p: tree.fetched_bytes.get(p, 0) for p in TREE} == {
        p: n if p.startswith("/dataset/") else 0 for p, n in TREE.items()
    }
    assert not any(p.startswith("/elsewhere/") for p in tree.fetched_bytes)
