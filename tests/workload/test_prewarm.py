"""workload/prewarm.py against the Qumulo contract fake (tests/fakes/qumulo.py): fetch-data, resume, errors.

Most tests hand the program its file list (`list_files`) to isolate warming from listing; the walk tests list
the tree through the fake's paged directory API. Every REST call goes through the real SDK to the fake.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hubspoke import dataset_manifest
from tests.fakes.qumulo import FakeQumulo

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workload"))
import bench_reader
import cache_status
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
            prewarm.sdk_client_factory(fake.node_ips[0], fake.port, "admin", password, 5),
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
    fetched = dict(spoke.fetched_bytes)
    calls = spoke.called("POST", "fetch-data")
    code, log = _run(spoke, state)
    assert code == 0
    assert spoke.fetched_bytes == fetched, "nothing left to fetch from the hub"
    # Only the residency check's sample is asked for again (64 regions and the repeat of the first, at most).
    assert spoke.called("POST", "fetch-data") - calls <= 65
    assert "3 already warm" in log


def test_resume_continues_a_large_file_from_its_journalled_offset(spoke: FakeQumulo, tmp_path: Path) -> None:
    state = tmp_path / "state.jsonl"
    big = "/dataset/shard-000.bin"
    # A previous run got 128 MiB into the big file, then the pod died mid-line.
    state.write_text(f'{{"at":"{big}","offset":{128 * MIB}}}\n{{"done":"/dataset/sha')
    spoke.held[big] = [(0, 128 * MIB)]  # what that run warmed is still in the cache
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
    client = prewarm.sdk_client_factory(tree.node_ips[0], tree.port, "admin", "secret", 5)()
    walked = [(f.path, f.size) for f in prewarm.walk(client, "/dataset/")]
    assert walked == loader_order(tmp_path)
    directories = {p.rsplit("/", 1)[0] for p, _ in walked}
    assert tree.called("GET", r"/entries/") > len(directories), "paging was not exercised"


def test_prewarm_walks_the_tree_itself_and_warms_only_the_root(tree: FakeQumulo, tmp_path: Path) -> None:
    log = io.StringIO()
    journal = prewarm.Journal(tmp_path / "state.jsonl")
    try:
        code = prewarm.prewarm(
            prewarm.sdk_client_factory(tree.node_ips[0], tree.port, "admin", "secret", 5),
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


# --- the pinned version's manifest, the cached fraction, the bandwidth cap ---


SHA = "0" * 64


def version_manifest(sizes: dict[str, int]) -> dataset_manifest.Manifest:
    """A manifest for files under /dataset/ (paths relative to the version directory)."""
    files = [
        dataset_manifest.FileEntry(path.removeprefix("/dataset/"), size, SHA) for path, size in sizes.items()
    ]
    return dataset_manifest.validate(name="c4", version="v1", token_bytes=4, vocab_size=128256, files=files)


def test_a_manifest_pins_what_is_warmed_and_the_fraction_reaches_one(
    spoke: FakeQumulo, tmp_path: Path
) -> None:
    spoke.add_file("/dataset/notes.txt", 7 * MIB)  # on the spoke, not in the version: not warmed, not counted
    published: list[float] = []
    status = tmp_path / "status.json"
    code, log = _run(
        spoke,
        tmp_path / "state.jsonl",
        manifest=version_manifest(FILES),
        status=status,
        publish=published.append,
    )
    assert code == 0, log
    assert "/dataset/notes.txt" not in spoke.fetched_bytes
    record = json.loads(status.read_text())
    # Written by prewarm, read back with the documented fields (workload/cache_status.py).
    assert (record["name"], record["version"], record["complete"]) == ("c4", "v1", True)
    assert record["total_bytes"] == sum(FILES.values()) == record["warm_bytes"]
    assert record["fraction"] == 1.0 and published[-1] == 1.0
    assert all(0 <= f <= 1 for f in published) and published == sorted(published)


def test_a_spoke_copy_that_disagrees_with_the_manifest_is_refused_before_any_fetch(
    spoke: FakeQumulo, tmp_path: Path
) -> None:
    wrong = {**FILES, "/dataset/shard-001.bin": 4 * MIB, "/dataset/c/shard-009.bin": MIB}
    code, log = _run(spoke, tmp_path / "state.jsonl", manifest=version_manifest(wrong))
    assert code == 1
    assert "/dataset/shard-001.bin is 3145728 bytes on the spoke, the manifest says 4194304" in log
    assert "/dataset/c/shard-009.bin is in the manifest but the spoke does not list it" in log
    assert spoke.called("POST", "fetch-data") == 0


def test_a_failed_file_leaves_the_fraction_below_one(spoke: FakeQumulo, tmp_path: Path) -> None:
    spoke.fail("POST", "shard-001.bin/fetch-data", times=100, status=400, error_class="fs_bad_request")
    published: list[float] = []
    status = tmp_path / "status.json"
    code, _ = _run(spoke, tmp_path / "state.jsonl", status=status, publish=published.append)
    assert code == 1
    read = cache_status.read(status)
    assert read is not None and not read.complete
    assert read.fraction == published[-1] == 150 / 153  # shard-000 (150 MiB) of 153 MiB


def test_a_rerun_reports_what_the_journal_holds_without_fetching(spoke: FakeQumulo, tmp_path: Path) -> None:
    state = tmp_path / "state.jsonl"
    assert _run(spoke, state)[0] == 0
    fetched = dict(spoke.fetched_bytes)
    published: list[float] = []
    assert _run(spoke, state, publish=published.append)[0] == 0
    assert spoke.fetched_bytes == fetched and set(published) == {1.0}


def test_the_token_bucket_holds_the_average_rate() -> None:
    """1,000 bytes at 100 bytes/s with a 100-byte bucket: the first 100 pass at once, the rest take 9 s."""
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    bucket = prewarm.TokenBucket(100, burst=100, clock=lambda: now[0], sleep=sleep)
    for _ in range(10):
        bucket.take(100)
    assert sum(slept) == pytest.approx(9.0)


def test_the_bandwidth_cap_slows_a_real_run(
    spoke: FakeQumulo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """153 MiB at 100 MiB/s with a one-second bucket: at least 0.53 s, whatever the fake's speed. The run's
    bucket gets a clock its sleeps move forward (TokenBucket's own clock/sleep keywords) instead of sleeping
    for real: the run's time is real time plus what it slept."""
    slept = [0.0]

    def clock() -> float:
        return time.monotonic() + slept[0]

    def sleep(seconds: float) -> None:
        slept[0] += seconds

    monkeypatch.setattr(
        prewarm, "TokenBucket", functools.partial(prewarm.TokenBucket, clock=clock, sleep=sleep)
    )
    started = clock()
    code, _ = _run(spoke, tmp_path / "state.jsonl", max_bytes_per_second=100 * MIB)
    assert code == 0
    assert clock() - started >= (153 - 100) / 100
    assert slept[0] > 0, "the cap made the run wait"


def test_sha256_verification_reads_the_mounted_version(tmp_path: Path) -> None:
    data = tmp_path / "v1"
    data.mkdir()
    (data / "a.bin").write_bytes(b"abc")
    (data / "b.bin").write_bytes(b"xyz")
    good = hashlib.sha256(b"abc").hexdigest()  # FIPS 180-4 SHA-256 via hashlib: the manifest's checksum
    manifest = dataset_manifest.validate(
        name="c4",
        version="v1",
        token_bytes=2,
        vocab_size=32000,
        files=[dataset_manifest.FileEntry("a.bin", 3, good), dataset_manifest.FileEntry("b.bin", 3, good)],
    )
    bad = prewarm.verify_sha256(manifest, data, io.StringIO())
    assert [b.split(":")[0] for b in bad] == ["b.bin"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--verify-sha256"], "--verify-sha256 needs --manifest and --dataset-dir"),
        (["--max-bytes-per-second", "0"], "--max-bytes-per-second must be positive"),
        (["--manifest", "/nonexistent/MANIFEST.json"], "--manifest /nonexistent/MANIFEST.json"),
    ],
)
def test_bad_new_arguments_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--host", "127.0.0.1", "--root", "/dataset", "--state", str(tmp_path / "s.jsonl")]
    assert prewarm.main(base + argv, env={"QUMULO_PASSWORD": "x"}) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "s.jsonl").exists(), "nothing half-written"


def test_waiting_for_the_cached_fraction(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    now = [0.0]
    lines: list[str] = []

    def sleep(seconds: float) -> None:
        now[0] += seconds
        done = 1 << 30 if now[0] >= 90 else 1 << 29
        cache_status.write(
            path,
            cache_status.CacheStatus("/dataset/c4/v1/", "c4", "v1", 1 << 30, done, done == 1 << 30, now[0]),
        )

    kwargs: dict[str, Any] = {"clock": lambda: now[0], "sleep": sleep, "poll_s": 30, "log": lines.append}
    mine = Path("/mnt/dataset/c4/v1")
    status = cache_status.wait_for_fraction(
        path, 1.0, timeout_s=600, describes=lambda s: cache_status.describes(s, mine), **kwargs
    )
    assert status.fraction == 1.0 and now[0] == 90
    assert "no status yet" in lines[0] and "0.500 warm" in lines[1]
    other = Path("/mnt/dataset/c4/v2")
    with pytest.raises(TimeoutError, match="a status for c4/v1, not this job's dataset"):
        cache_status.wait_for_fraction(
            path, 1.0, timeout_s=60, describes=lambda s: cache_status.describes(s, other), **kwargs
        )


def test_bounded_calls_still_warm_every_byte(spoke: FakeQumulo, tmp_path: Path) -> None:
    """--chunk-bytes bounds each fetch-data call. The fake answers an empty next_offset once the bounded
    region is served (tests/fakes/qumulo/files.py, ASSUMED); prewarm must go on to the end of the file anyway."""
    code, log = _run(spoke, tmp_path / "state.jsonl", chunk_bytes=MIB)
    assert code == 0, log
    assert {p: spoke.fetched_bytes.get(p, 0) for p in FILES} == FILES


def test_the_cached_fraction_reaches_the_cloudwatch_agent_as_emf(spoke: FakeQumulo, tmp_path: Path) -> None:
    """prewarm as the Job runs it (main, the SDK, the agent endpoint from the environment): the agent receives
    DatasetPrewarmedFraction records for the Region, the last one 1, with the manifest's dataset and version."""
    from hubspoke import training_metrics as tm
    from tests.fakes.emf_agent import FakeEmfAgent

    manifest_dir = tmp_path / "c4" / "v1"
    manifest_dir.mkdir(parents=True)
    dataset_manifest.write(manifest_dir, version_manifest(FILES))
    state = tmp_path / "state.jsonl"
    with FakeEmfAgent() as agent:
        env = {"QUMULO_PASSWORD": "secret", tm.AGENT_ENDPOINT_ENV: agent.endpoint}
        argv = [
            "--host",
            spoke.node_ips[0],
            "--port",
            str(spoke.port),
            "--root",
            "/dataset",
            "--state",
            str(state),
        ]
        argv += [
            "--manifest",
            str(manifest_dir / "MANIFEST.json"),
            "--environment",
            "dev",
            "--region",
            "us-west-2",
        ]
        assert prewarm.main(argv, env=env) == 0
        lines = agent.wait_for(1)
    last = json.loads(lines[-1])
    assert last["_aws"]["CloudWatchMetrics"][0]["Namespace"] == tm.NAMESPACE
    assert (last["Environment"], last["Region"], last["Dataset"], last["Version"]) == (
        "dev",
        "us-west-2",
        "c4",
        "v1",
    )
    assert last[tm.DATASET_PREWARMED_FRACTION] == 1.0
    assert cache_status.read(prewarm.status_path(state)).fraction == 1.0  # type: ignore[union-attr]


# --- the rendered Job's way: one pinned version, its manifest read through the REST API (review of issue 24) ---


def _two_versions(fake: FakeQumulo) -> dict[str, int]:
    """v1 (warm earlier) and v2 of c4 on the spoke, v2 sealed by a MANIFEST.json the fake serves over REST."""
    v2 = {"/dataset/c4/v2/shard-000.bin": 5 * MIB, "/dataset/c4/v2/shard-001.bin": 2 * MIB}
    fake.add_file("/dataset/c4/v1/shard-000.bin", 9 * MIB)
    for path, size in v2.items():
        fake.add_file(path, size)
    files = [dataset_manifest.FileEntry(p.removeprefix("/dataset/c4/v2/"), n, SHA) for p, n in v2.items()]
    sealed = dataset_manifest.validate(name="c4", version="v2", token_bytes=4, vocab_size=128256, files=files)
    fake.add_file("/dataset/c4/v2/MANIFEST.json", 0, dataset_manifest.to_json(sealed))
    return v2


def _main_v2(
    fake: FakeQumulo, state: Path, capfd: pytest.CaptureFixture[str], root: str = "/dataset/c4/v2"
) -> tuple[int, str]:
    """prewarm.main as the rendered Job runs it; its log goes to the process's stderr."""
    argv = ["--host", fake.node_ips[0], "--port", str(fake.port), "--root", root, "--state", str(state)]
    code = prewarm.main([*argv, "--version-manifest"], env={"QUMULO_PASSWORD": "secret"})
    return code, capfd.readouterr().err


def test_the_pinned_version_alone_is_warmed_from_its_manifest_read_over_rest(
    tree: FakeQumulo, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Only <dataset_path>/c4/v2's manifest files are fetched (not v1, not the rest of /dataset), and the status
    names c4/v2, so cache_status.describes counts it for a job pinned to c4/v2 and for no other version."""
    v2 = _two_versions(tree)
    state = tmp_path / "state.jsonl"
    code, log = _main_v2(tree, state, capfd)
    assert code == 0, log
    assert {p: n for p, n in tree.fetched_bytes.items() if n} == v2
    status = cache_status.read(prewarm.status_path(state))
    assert status is not None and (status.name, status.version, status.fraction) == ("c4", "v2", 1.0)
    assert cache_status.describes(status, Path("/dataset"), name="c4", version="v2")
    assert not cache_status.describes(status, Path("/dataset"), name="c4", version="v1")


def test_a_version_whose_sizes_or_name_disagree_with_its_manifest_is_not_warmed(
    tree: FakeQumulo, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    _two_versions(tree)
    tree.files["/dataset/c4/v2/shard-001.bin"]["size"] = 3 * MIB  # the spoke lists another size
    code, log = _main_v2(tree, tmp_path / "a.jsonl", capfd)
    assert code == 1 and "the manifest says 2097152" in log and "nothing warmed" in log
    # A directory whose manifest names another version.
    tree.add_file("/dataset/c4/v3/MANIFEST.json", 0, tree.read_back("/dataset/c4/v2/MANIFEST.json"))
    code, log = _main_v2(tree, tmp_path / "b.jsonl", capfd, root="/dataset/c4/v3")
    assert code == 1 and "names c4/v2, not c4/v3" in log
    # An unsealed version (no manifest yet: still loading).
    tree.add_file("/dataset/c4/v4/shard-000.bin", MIB)
    code, log = _main_v2(tree, tmp_path / "c.jsonl", capfd, root="/dataset/c4/v4")
    assert code == 1 and "/dataset/c4/v4/MANIFEST.json" in log and "sealed" in log
    assert not any(tree.fetched_bytes.values())


# --- residency: what the spoke still holds (issue 40 item 6) ---


def test_an_evicted_version_is_found_by_the_sample_and_warmed_again(
    spoke: FakeQumulo, tmp_path: Path
) -> None:
    """No Qumulo API reports what a spoke holds of one directory, so prewarm re-fetches a sample at the end of every
    run: bytes the spoke reports fetching ("bytes_fetched": "The number of bytes fetched into the cache", REST API
    guide, files_ref_fetch-data; ASSUMED: held bytes report 0) were evicted. With --rewarm-on-missing the journal
    is then forgotten, the status falls below 1 (a waiting job keeps waiting) and the run exits 1, so the Job's next
    attempt re-warms."""
    state, status = tmp_path / "state.jsonl", tmp_path / "status.json"
    assert _run(spoke, state, status=status, rewarm_on_missing=True)[0] == 0
    read = cache_status.read(status)
    assert read is not None and (read.check, read.missing_bytes, read.fraction) == ("held", 0, 1.0)
    assert read.checked_bytes > 0

    spoke.evict("/dataset/")  # capacity eviction or portal_evict_tree, after the warm-up
    assert spoke.held_bytes("/dataset/") == 0
    published: list[float] = []
    code, log = _run(spoke, state, status=status, publish=published.append, rewarm_on_missing=True)
    assert code == 1 and "no longer holds" in log and "run prewarm again" in log
    read = cache_status.read(status)
    assert read is not None and read.check == "missing" and not read.complete
    assert read.fraction < 1 and published[-1] < 1

    code, log = _run(spoke, state, status=status, rewarm_on_missing=True)  # the Job's next attempt
    assert code == 0, log
    assert "0 already warm" in log, "the forgotten journal warms everything again"
    assert spoke.held_bytes("/dataset/") == sum(FILES.values())
    read = cache_status.read(status)
    assert read is not None and (read.check, read.fraction) == ("held", 1.0)


def test_a_partly_evicted_version_reports_the_samples_estimate(spoke: FakeQumulo, tmp_path: Path) -> None:
    state, status = tmp_path / "state.jsonl", tmp_path / "status.json"
    assert _run(spoke, state, status=status)[0] == 0
    spoke.evict("/dataset/shard-000.bin")  # 150 of the version's 153 MiB
    assert _run(spoke, state, status=status, recheck_samples=153, rewarm_on_missing=True)[0] == 1
    read = cache_status.read(status)
    assert read is not None and 0.0 <= read.fraction <= 0.05, read


def test_by_default_the_samples_verdict_is_advisory(spoke: FakeQumulo, tmp_path: Path) -> None:
    """The rule that a held region reports 0 bytes_fetched is ASSUMED: a held but cold region reporting bytes would
    flag a warm cache as evicted and re-warm it forever. So by default the estimate goes to the status and the log
    only; the journal stays (nothing is fetched again) and the run exits 0."""
    state, status = tmp_path / "state.jsonl", tmp_path / "status.json"
    assert _run(spoke, state, status=status)[0] == 0
    spoke.evict("/dataset/shard-000.bin")  # 150 of the version's 153 MiB
    spoke.fetched_bytes.clear()
    code, log = _run(spoke, state, status=status, recheck_samples=153)
    assert code == 0, log
    assert "advisory" in log and "--rewarm-on-missing" in log
    read = cache_status.read(status)
    assert read is not None and read.check == "missing" and read.complete and read.fraction == 1.0
    assert read.held_estimate is not None and read.held_estimate <= 0.05 * sum(FILES.values()), read
    # The journal was kept: a re-run fetches only the next sample, no whole file again.
    spoke.fetched_bytes.clear()
    assert _run(spoke, state, status=status, recheck_samples=4)[0] == 0
    assert "3 already warm" in _run(spoke, state, status=status, recheck_samples=4)[1]


def test_the_rewarm_flag_reaches_the_options(tmp_path: Path) -> None:
    assert (
        prewarm.build_parser()
        .parse_args(["--host=h", "--root=/d", f"--state={tmp_path}/s"])
        .rewarm_on_missing
        is False
    )
    args = ["--host=h", "--root=/d", f"--state={tmp_path}/s", "--rewarm-on-missing"]
    assert prewarm.build_parser().parse_args(args).rewarm_on_missing is True


def test_a_cluster_whose_fetch_data_reports_covered_bytes_is_not_claimed_held(
    spoke: FakeQumulo, tmp_path: Path
) -> None:
    """The SDK's fetch_data_loop (qumulo-api 7.10.2.1, commands/fs.py) counts bytes_fetched against --max-bytes as
    if it were every byte covered. Under that reading a held region still reports its bytes, so the check sees
    its own repeat of a just-fetched region report bytes and says "unverifiable", never "held" or "missing"."""
    spoke.fetch_reports = "covered"
    state, status = tmp_path / "state.jsonl", tmp_path / "status.json"
    code, log = _run(spoke, state, status=status)
    assert code == 0, log
    assert "residency not checked" in log
    read = cache_status.read(status)
    assert read is not None and (read.check, read.fraction, read.complete) == ("unverifiable", 1.0, True)


def test_no_recheck_when_asked_for_none(spoke: FakeQumulo, tmp_path: Path) -> None:
    state, status = tmp_path / "state.jsonl", tmp_path / "status.json"
    assert _run(spoke, state, status=status, recheck_samples=0)[0] == 0
    spoke.evict()
    assert _run(spoke, state, status=status, recheck_samples=0)[0] == 0
    read = cache_status.read(status)
    assert read is not None and (read.check, read.fraction) == ("none", 1.0)
