"""The training script on the CPU: tiny model, synthetic shards, gloo, world size 1, FSDP2 (fully_shard).

Not covered here (needs GPUs): NCCL over EFA, bf16 mixed precision, pinned-memory transfers, more than one
rank. The shard reader, sampler, FSDP wrapping, DCP checkpoints, resume and the EMF output (to stdout, to a
loopback stand-in for the CloudWatch agent, and to an agent that is down) are.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = ROOT / "workload"
sys.path.insert(0, str(WORKLOAD))
import manifest  # noqa: E402

from hubspoke import training_metrics  # noqa: E402
from tests.fakes.emf_agent import FakeEmfAgent  # noqa: E402

if TYPE_CHECKING:
    import llama
    import torch

# torch (~2 s to import) and the workload modules built on it (llama, shards) are imported in the tests that use
# them: every pytest-xdist worker imports this module at collection, only one runs it.


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread() -> Iterator[None]:
    """torch's intra-op pool at one thread while this file runs, then as it was. On the 2-core test machine its
    default two OpenMP threads spun on the core the other xdist worker needs (the in-process training run took
    2.5 CPU-s, 1.4 with one thread). What the tests check (shapes, records, checkpoints, resumes, allclose at
    1e-5) does not depend on how many threads sum a tiny model's matrices."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _write_shards(
    root: Path, lengths: list[int], *, token_bytes: int = 2, vocab: int = 256
) -> list[list[int]]:
    rng = random.Random(7)
    root.mkdir(parents=True, exist_ok=True)
    written = []
    fmt = "H" if token_bytes == 2 else "I"
    for i, n in enumerate(lengths):
        tokens = [rng.randrange(vocab) for _ in range(n)]
        (root / f"part-{i:03d}.bin").write_bytes(struct.pack(f"<{n}{fmt}", *tokens))
        written.append(tokens)
    return written


def _dataset(
    tmp_path: Path, lengths: list[int], *, version: str = "v1", token_bytes: int = 2, vocab: int = 256
) -> Path:
    """A sealed version <tmp>/dataset/c4/<version> of random shards, as `hubspoke dataset load` leaves one."""
    root = manifest.create_version(tmp_path / "dataset", "c4", version)
    _write_shards(root, lengths, token_bytes=token_bytes, vocab=vocab)
    sealed = manifest.scan(root, name="c4", version=version, token_bytes=token_bytes, vocab_size=vocab)
    manifest.write(root, sealed)
    return root


def test_windows_are_shifted_by_one_and_never_span_shards(tmp_path: Path) -> None:
    import shards

    tokens = _write_shards(tmp_path, [100, 41, 10])
    ds = shards.TokenShards(tmp_path, seq_len=8)
    # (n - 1) // L windows per shard: 99//8 + 40//8 + 9//8 = 12 + 5 + 1
    assert len(ds) == 18
    x, y = ds[12]  # first window of the second shard
    assert x.tolist() == tokens[1][:8]
    assert y.tolist() == tokens[1][1:9]
    x, y = ds[17]
    assert x.tolist() == tokens[2][:8] and y.tolist() == tokens[2][1:9]
    with pytest.raises(IndexError):
        ds[18]


@pytest.mark.parametrize("token_bytes", [2, 4])
def test_token_ids_read_back_unsigned(tmp_path: Path, token_bytes: int) -> None:
    import shards
    import torch

    big = 65535 if token_bytes == 2 else 128255
    n = 9
    fmt = "H" if token_bytes == 2 else "I"
    (tmp_path / "a.bin").write_bytes(struct.pack(f"<{n}{fmt}", *([big] * n)))
    x, _ = shards.TokenShards(tmp_path, seq_len=8, token_bytes=token_bytes)[0]
    assert x.dtype == torch.int64 and set(x.tolist()) == {big}


def test_missing_shards_say_where_they_were_looked_for(tmp_path: Path) -> None:
    import shards

    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        shards.TokenShards(tmp_path, seq_len=8)


def test_ranks_split_samples_disjointly_and_resume_skips_done_steps() -> None:
    import shards

    world, batch, length = 4, 3, 103
    parts = [
        list(shards.RankSampler(length, rank=r, world_size=world, batch_size=batch)) for r in range(world)
    ]
    assert len({len(p) for p in parts}) == 1, "every rank runs the same number of steps"
    flat = [i for p in parts for i in p]
    assert len(flat) == len(set(flat)) == (length // world) * world
    resumed = list(shards.RankSampler(length, rank=1, world_size=world, batch_size=batch, start_step=2))
    assert resumed == parts[1][2 * batch :]


def test_parameter_count_formula_matches_the_model_and_the_reference_size() -> None:
    import llama

    tiny = llama.shape("tiny", vocab_size=256)
    assert tiny.parameter_count() == sum(p.numel() for p in llama.Llama(tiny).parameters())
    reference = llama.shape("llama3-1b", vocab_size=32000).parameter_count()
    assert 0.95e9 < reference < 1.1e9  # "about 1B" (the reference reports 1.02B)


def test_untrained_model_predicts_near_uniform() -> None:
    import llama
    import torch

    torch.manual_seed(0)
    model = llama.Llama(llama.shape("tiny", vocab_size=256))
    tokens = torch.randint(0, 256, (2, 16))
    logits = model(tokens)
    assert logits.shape == (2, 16, 256)
    targets = torch.randint(0, 256, (2, 16))  # independent of the inputs: nothing to predict yet
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
    assert abs(loss.item() - math.log(256)) < 0.5


def _all_records(stdout: str) -> list[dict[str, object]]:
    """The EMF records on stdout: one JSON object per line (the progress lines share stdout)."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


# The name as docs/operations.md gives it to the reader searching CloudWatch (not the production constant).
COMPLETED = "TrainingJobCompleted"


def _records(stdout: str) -> list[dict[str, object]]:
    """The throughput records on stdout (without the completion record a normal end adds last)."""
    return [r for r in _all_records(stdout) if r.get(COMPLETED) != 1]


def _progress(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if not line.startswith("{")]


def _run(
    data: Path, ckpt: Path, *extra: str, agent_endpoint: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MASTER_PORT": str(29600 + os.getpid() % 300)}
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", training_metrics.AGENT_ENDPOINT_ENV):
        env.pop(var, None)
    if agent_endpoint is not None:
        env[training_metrics.AGENT_ENDPOINT_ENV] = agent_endpoint
    args = _run_args(data, ckpt, *extra)
    return subprocess.run(args, capture_output=True, text=True, timeout=240, env=env, check=False)


def _run_args(data: Path, ckpt: Path, *extra: str) -> list[str]:
    """The command line of a small CPU run of train.py."""
    return [
        sys.executable,
        str(WORKLOAD / "train.py"),
        f"--data-dir={data}",
        f"--checkpoint-dir={ckpt}",
        "--model=tiny",
        "--vocab-size=256",
        "--seq-len=16",
        "--batch-size=2",
        "--backend=gloo",
        "--environment=dev",
        "--region=us-west-2",
        "--log-every=2",
        "--checkpoint-every=3",
        # One throughput record, at the end: the clock-driven windows are tested in test_throughput.py.
        "--metrics-seconds=3600",
        *extra,
    ]


def _in_process(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """_run's arguments, train.main called in this process (torch is imported already: a run costs its steps,
    not a second interpreter's imports); the process group it makes is gone when it returns or fails."""
    from socket import socket

    import torch
    import train

    def run(data: Path, ckpt: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        with socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", training_metrics.AGENT_ENDPOINT_ENV):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("MASTER_PORT", str(port))
        capfd.readouterr()
        argv = _run_args(data, ckpt, *extra)[2:]  # without the interpreter and the script
        try:
            code = train.main(argv)
        finally:
            if torch.distributed.is_initialized():
                torch.distributed.destroy_process_group()
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess(argv, code, out, err)

    return run


@pytest.mark.parametrize("how", ["in-process", pytest.param("subprocess", marks=pytest.mark.thorough)])
def test_trains_with_fsdp_checkpoints_resumes_and_reports_emf(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Two runs of train.py: FSDP training with checkpoints and EMF, then a resume. In the fast tier train.main
    runs in the test's process; the thorough tier runs the script as the container does."""
    run = _in_process(monkeypatch, capfd) if how == "in-process" else _run
    data, ckpt = _dataset(tmp_path, [400, 400]), tmp_path / "ckpt"
    first = run(data, ckpt, "--max-steps=4", "--num-workers=2", "--prefetch-factor=2")
    assert first.returncode == 0, first.stderr
    assert sorted(p.name for p in ckpt.iterdir()) == ["step_00000003", "step_00000004"]
    assert all((ckpt / name / ".metadata").exists() for name in ("step_00000003", "step_00000004"))

    records = _records(first.stdout)
    assert [r["Step"] for r in records] == [4], "one EMF record on stdout: the final window's"
    progress = [
        re.fullmatch(r"\[rank 0\] step (\d+) loss \d+\.\d{4}", line) for line in _progress(first.stdout)
    ]
    assert [int(m.group(1)) for m in progress if m] == [2, 4] and all(progress), first.stdout
    for record in records:
        (directive,) = record["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == training_metrics.NAMESPACE
        assert directive["Dimensions"] == [list(training_metrics.DIMENSIONS)]
        for dimension in training_metrics.DIMENSIONS:
            assert isinstance(record[dimension], str)
        for metric in directive["Metrics"]:
            if metric["Name"] not in (training_metrics.CHECKPOINT_AGE_SECONDS, COMPLETED):
                assert record[metric["Name"]] > 0
        assert record[COMPLETED] == 0, "a throughput record says the job is still running"
        # The final record follows the step-4 save: the checkpoint a restart would resume from is seconds old.
        assert 0 <= record[training_metrics.CHECKPOINT_AGE_SECONDS] < 60
        assert record["Environment"] == "dev" and record["Region"] == "us-west-2"
        assert isinstance(record["_aws"]["Timestamp"], int)
        # The version read, as properties (not dimensions: the directive above lists only DIMENSIONS).
        assert (record["Dataset"], record["DatasetVersion"]) == ("c4", "v1")
    for name in ("step_00000003", "step_00000004"):
        assert json.loads((ckpt / name / "dataset.json").read_text()) == {"name": "c4", "version": "v1"}

    # issue 42: a job that ended normally says so last, so its silence is not read as a death.
    *_, last = _all_records(first.stdout)
    (directive,) = last["_aws"]["CloudWatchMetrics"]
    assert [m["Name"] for m in directive["Metrics"]] == [COMPLETED] and last[COMPLETED] == 1, last
    assert (last["Environment"], last["Region"], last["Step"]) == ("dev", "us-west-2", 4)

    second = run(data, ckpt, "--max-steps=6", "--num-workers=0")
    assert second.returncode == 0, second.stderr
    assert "resumed from" in second.stderr and "step 4" in second.stderr
    assert [r["Step"] for r in _records(second.stdout)] == [6]
    assert (ckpt / "step_00000006" / ".metadata").exists()


def _refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """train.py's one-line refusal for these arguments: exit 2 before any process group exists."""
    import torch

    sys.path.insert(0, str(WORKLOAD))
    import train

    assert train.main(["--model=tiny", "--seq-len=16", "--backend=gloo", *argv]) == 2
    assert not torch.distributed.is_initialized()
    err = capsys.readouterr().err
    assert err.startswith("train.py: refused: ") and err.count("\n") == 1, err
    return err


def test_the_manifest_decides_the_format_and_explicit_arguments_must_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sys.path.insert(0, str(WORKLOAD))
    import train

    version = _dataset(tmp_path, [400], token_bytes=2, vocab=256)
    mount, ckpt = version.parent.parent, f"--checkpoint-dir={tmp_path / 'ckpt'}"
    pinned = [f"--data-dir={mount}", "--dataset-name=c4", "--dataset-version=v1", ckpt]
    args = train.parse_args(pinned)
    found, root = train.open_dataset(args)
    assert (found.name, found.version) == ("c4", "v1")
    assert root == version and (args.token_bytes, args.vocab_size) == (2, 256)
    # The job's old defaults against this dataset: 32,000 and 4-byte tokens are both refused, by name.
    assert "vocab-size 256, the job asks for 32000" in _refusal(capsys, *pinned, "--vocab-size=32000")
    assert "token-bytes 2, the job asks for 4" in _refusal(capsys, *pinned, "--token-bytes=4")
    assert "go together" in _refusal(capsys, f"--data-dir={mount}", "--dataset-name=c4", ckpt)
    # A version directory without its manifest is still loading.
    (mount / "c4" / "v2").mkdir()
    assert "still loading" in _refusal(
        capsys, f"--data-dir={mount}", "--dataset-name=c4", "--dataset-version=v2", ckpt
    )
    # A manifest copied into another version's directory names the wrong version.
    (mount / "c4" / "v2" / "MANIFEST.json").write_bytes((version / "MANIFEST.json").read_bytes())
    assert "its manifest is c4/v1, not c4/v2" in _refusal(
        capsys, f"--data-dir={mount}", "--dataset-name=c4", "--dataset-version=v2", ckpt
    )
    # A shard added after sealing is refused, not read.
    (version / "late.bin").write_bytes(b"\0\0")
    assert "not in the manifest" in _refusal(capsys, *pinned)
    # So is one in a sub-folder: the reader takes every *.bin under the version (shards.py, Path.rglob).
    (version / "late.bin").unlink()
    (version / "part").mkdir()
    (version / "part" / "late.bin").write_bytes(b"\0\0")
    assert "not in the manifest, first part/late.bin" in _refusal(capsys, *pinned)


def test_a_resume_onto_another_version_is_refused_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sys.path.insert(0, str(WORKLOAD))
    import train

    _dataset(tmp_path, [400], version="v1")
    v2 = _dataset(tmp_path, [400], version="v2")
    step = tmp_path / "ckpt" / "step_00000003"
    step.mkdir(parents=True)
    (step / ".metadata").write_bytes(b"x")
    (step / "dataset.json").write_text(json.dumps({"name": "c4", "version": "v1"}))
    on_v2 = [f"--data-dir={v2}", f"--checkpoint-dir={tmp_path / 'ckpt'}"]
    assert "trained on c4/v1, this run reads c4/v2; pass --allow-dataset-change" in _refusal(capsys, *on_v2)
    args = train.parse_args([*on_v2, "--allow-dataset-change"])
    train.check_resume(args, train.open_dataset(args)[0])  # allowed: no refusal
    v1_args = train.parse_args([f"--data-dir={tmp_path / 'dataset' / 'c4' / 'v1'}", on_v2[1]])
    train.check_resume(v1_args, train.open_dataset(v1_args)[0])  # the same version resumes
    (step / "dataset.json").unlink()
    assert "does not record its dataset version" in _refusal(capsys, *on_v2)


@pytest.mark.thorough
def test_throughput_records_follow_the_clock_not_the_steps(tmp_path: Path) -> None:
    data, ckpt = _dataset(tmp_path, [400]), tmp_path / "ckpt"
    # The last --metrics-seconds wins over _run's: a record every 50 ms, whatever the step pace.
    run = _run(data, ckpt, "--max-steps=4", "--num-workers=0", "--metrics-seconds=0.05")
    assert run.returncode == 0, run.stderr
    records = _records(run.stdout)
    steps = [r["Step"] for r in records]
    assert len(records) >= 2 and steps == sorted(steps) and steps[-1] == 4, steps
    for r in records:
        assert r[training_metrics.SAMPLES_PER_SECOND] >= 0
        # A window in which no step finished has no step time to report.
        assert (training_metrics.STEP_SECONDS in r) == (r[training_metrics.SAMPLES_PER_SECOND] > 0)


@pytest.mark.thorough
def test_with_an_agent_endpoint_records_go_to_the_agent_not_stdout(tmp_path: Path) -> None:
    data = _dataset(tmp_path, [400])
    with FakeEmfAgent() as agent:
        run = _run(
            data,
            tmp_path / "ckpt",
            "--max-steps=4",
            "--num-workers=0",
            agent_endpoint=agent.endpoint,
        )
        lines = agent.wait_for(2)
    assert run.returncode == 0, run.stderr
    assert _all_records(run.stdout) == [], "records went to the agent"
    records = [json.loads(line) for line in lines]
    assert [(r["Step"], r[COMPLETED]) for r in records] == [(4, 0), (4, 1)], "throughput, then completion"
    assert all(r["_aws"]["CloudWatchMetrics"][0]["Namespace"] == training_metrics.NAMESPACE for r in records)
    assert "CloudWatch agent" not in run.stderr


@pytest.mark.thorough
def test_training_survives_an_agent_that_is_down(tmp_path: Path) -> None:
    data = _dataset(tmp_path, [400])
    agent = FakeEmfAgent()
    agent.stop()  # nothing listens on its port any more
    run = _run(
        data,
        tmp_path / "ckpt",
        "--max-steps=4",
        "--num-workers=0",
        agent_endpoint=agent.endpoint,
    )
    assert run.returncode == 0, run.stderr
    assert [r["Step"] for r in _records(run.stdout)] == [4], "stdout keeps the records"
    assert (tmp_path / "ckpt" / "step_00000004" / ".metadata").exists()
    assert run.stderr.count("cannot reach the CloudWatch agent") == 1


def test_checkpoint_age_counts_from_the_newest_complete_checkpoint(tmp_path: Path) -> None:
    """The age train.py publishes (CheckpointAgeSeconds) starts from the `.metadata` DCP writes last: a torn newer
    step does not make the directory look freshly saved, and an empty directory counts from the job's start."""
    sys.path.insert(0, str(WORKLOAD))
    import train

    assert train.checkpoint_written(tmp_path, default=123.0) == 123.0
    done, torn = tmp_path / "step_00000003", tmp_path / "step_00000006"
    done.mkdir()
    (done / ".metadata").write_bytes(b"x")
    os.utime(done / ".metadata", (1_000_000.0, 1_000_000.0))
    torn.mkdir()
    (torn / "__0_0.distcp").write_bytes(b"x")
    assert train.checkpoint_written(tmp_path, default=123.0) == 1_000_000.0


def test_a_resume_of_an_old_checkpoint_reports_a_small_age(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """issue 42 review item 4: CheckpointAgeSeconds is the work a failure would lose. A job resuming a checkpoint
    written 2 hours ago has lost nothing yet, so its first record's age is seconds, not 7200 (which would cross
    checkpoint-too-old's 3600 s on every resume)."""
    run = _in_process(monkeypatch, capfd)
    data, ckpt = _dataset(tmp_path, [400, 400]), tmp_path / "ckpt"
    assert run(data, ckpt, "--max-steps=2", "--num-workers=0").returncode == 0
    two_hours_ago = time.time() - 2 * 3600
    for metadata in ckpt.glob("step_*/.metadata"):
        os.utime(metadata, (two_hours_ago, two_hours_ago))
    second = run(data, ckpt, "--max-steps=4", "--num-workers=0", "--metrics-seconds=0.01")
    assert second.returncode == 0, second.stderr
    first, *_ = _records(second.stdout)
    assert first["Step"] < 4, "a record before the resumed run's own save"
    assert 0 <= first[training_metrics.CHECKPOINT_AGE_SECONDS] < 60, first


def test_a_torn_checkpoint_is_never_resumed_from(tmp_path: Path) -> None:
    sys.path.insert(0, str(WORKLOAD))
    import train

    (tmp_path / "step_00000009").mkdir()  # no .metadata: the writer died mid-save
    (tmp_path / "step_00000005").mkdir()
    (tmp_path / "step_00000005" / ".metadata").write_bytes(b"x")
    assert train.latest_checkpoint(tmp_path) == (5, tmp_path / "step_00000005")
    assert train.latest_checkpoint(tmp_path / "absent") is None


def test_chunked_loss_and_block_checkpointing_change_memory_not_results() -> None:
    """The loss of model(tokens, labels) is F.cross_entropy over the full fp32 logits, gradients included."""
    import llama
    import torch

    torch.manual_seed(0)
    reference = llama.Llama(llama.shape("tiny", vocab_size=256))
    lean = llama.Llama(llama.shape("tiny", vocab_size=256))
    lean.load_state_dict(reference.state_dict())
    lean.checkpoint_blocks()
    tokens, labels = torch.randint(0, 256, (3, 16)), torch.randint(0, 256, (3, 16))
    full = torch.nn.functional.cross_entropy(reference(tokens).flatten(0, 1).float(), labels.flatten())
    full.backward()
    # 7-token chunks do not divide the 48 tokens: the last chunk is short.
    chunked = llama.chunked_cross_entropy(
        lean.norm(_blocks(lean, tokens)), lean.embed.weight, labels, chunk=7
    )
    chunked.backward()
    assert torch.allclose(chunked, full, atol=1e-5)
    for (name, a), b in zip(reference.named_parameters(), lean.parameters(), strict=True):
        assert a.grad is not None and b.grad is not None
        assert torch.allclose(a.grad, b.grad, atol=1e-5), name


def _blocks(model: llama.Llama, tokens: torch.Tensor) -> torch.Tensor:
    import llama

    cos, sin = llama.rotary(tokens.shape[1], model.s.head_dim, model.s.rope_theta, tokens.device)
    x = model.embed(tokens)
    for layer in model.layers:
        x = layer(x, cos, sin)
    return x


def _weights(checkpoint: Path, tmp_path: Path) -> dict[str, torch.Tensor]:
    import torch
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    flat = tmp_path / f"{checkpoint.parent.parent.name}-{checkpoint.name}.pt"
    dcp_to_torch_save(checkpoint, flat)
    return dict(torch.load(flat, weights_only=False)["model"])


@pytest.mark.thorough
def test_resume_restores_the_weights_not_only_the_step(tmp_path: Path) -> None:
    """Four steps in one go and three steps, stop, resume, one more step end on the same weights: the resumed
    run continued from the saved weights and optimizer state, not from a fresh model at step 3."""
    import torch

    data = _dataset(tmp_path, [400, 400])
    straight, resumed = tmp_path / "straight" / "ckpt", tmp_path / "resumed" / "ckpt"
    assert _run(data, straight, "--max-steps=4", "--num-workers=0", "--checkpoint-every=100").returncode == 0
    first = _run(data, resumed, "--max-steps=3", "--num-workers=0", "--checkpoint-every=100")
    assert first.returncode == 0, first.stderr
    second = _run(data, resumed, "--max-steps=4", "--num-workers=0", "--checkpoint-every=100")
    assert second.returncode == 0 and "resumed from" in second.stderr, second.stderr
    at_three = _weights(resumed / "step_00000003", tmp_path)
    straight_four = _weights(straight / "step_00000004", tmp_path)
    resumed_four = _weights(resumed / "step_00000004", tmp_path)
    assert set(straight_four) == set(resumed_four) and straight_four
    assert any(not torch.equal(at_three[k], straight_four[k]) for k in at_three), "a step changes the weights"
    for name, value in straight_four.items():
        assert torch.allclose(value, resumed_four[name], atol=1e-6), name


@pytest.mark.thorough
def test_hyperpod_log_monitoring_pattern_matches_the_progress_train_py_prints(tmp_path: Path) -> None:
    """The HyperPodPyTorchJob's hang detection watches for PROGRESS_LOG_PATTERN on stdout (the elastic agent
    reads `<attempt>/<local rank>/stdout.log`; tests/workload/test_launch.py runs the real agent): train.py
    must print it there. Fast twin: test_launch.py's real LogAgent over train.progress() with the rendered
    rules, and test_trains_with_fsdp_... reading the progress lines off a real run's stdout."""
    from hubspoke.k8s.job import PROGRESS_LOG_PATTERN

    run = _run(_dataset(tmp_path, [400]), tmp_path / "ckpt", "--max-steps=4", "--num-workers=0")
    assert run.returncode == 0, run.stderr
    progress = [line for line in run.stdout.splitlines() if re.fullmatch(PROGRESS_LOG_PATTERN, line)]
    assert len(progress) == 2, f"one progress line per --log-every=2 steps, got: {run.stdout}"


def test_nothing_to_train_is_said_with_the_fix_and_work_left_is_not_refused(tmp_path: Path) -> None:
    """Fast twin of the two rerun tests below (which run train.py): the decision and its message."""
    sys.path.insert(0, str(WORKLOAD))
    import train

    args = train.parse_args(
        [f"--data-dir={tmp_path}/data", f"--checkpoint-dir={tmp_path}/ckpt", "--max-steps=999"]
    )
    assert train.nothing_to_train(args, 0, 5) is None, "a fresh run with data"
    assert train.nothing_to_train(args, 500, 5) is None, "a resumed run with steps and data left"
    finished = train.nothing_to_train(args, 999, 5)
    assert finished and "already holds step 999, at or past --max-steps 999" in finished
    assert "--job-name" in finished and "--max-steps" in finished
    used_up = train.nothing_to_train(args, 500, 0)
    assert used_up and "resumes at step 500" in used_up and "--job-name" in used_up
    too_small = train.nothing_to_train(args, 0, 0)
    assert too_small and "fewer samples than one batch" in too_small


@pytest.mark.thorough
def test_a_rerun_of_a_finished_job_refuses_loudly_instead_of_training_zero_steps(tmp_path: Path) -> None:
    """Same job name (same checkpoint directory), same --max-steps: the run has finished. It must not exit 0
    after resuming and training nothing; it fails with exit 2 and says what to do."""
    data, ckpt = _dataset(tmp_path, [400]), tmp_path / "ckpt"  # a sealed version: train.py refuses others
    assert _run(data, ckpt, "--max-steps=2", "--num-workers=0").returncode == 0
    rerun = _run(data, ckpt, "--max-steps=2", "--num-workers=0")
    assert rerun.returncode == 2, rerun.stderr
    assert "already holds step 2, at or past --max-steps 2" in rerun.stderr
    assert "--job-name" in rerun.stderr and "Traceback" not in rerun.stderr
    assert _progress(rerun.stdout) == [] and _all_records(rerun.stdout) == [], "no step, no record"
    assert sorted(p.name for p in ckpt.iterdir()) == ["step_00000002"], "nothing new written"


@pytest.mark.thorough
def test_a_rerun_whose_data_is_used_up_refuses_loudly(tmp_path: Path) -> None:
    """A run that stopped because the data ran out (before --max-steps) left a checkpoint at its last step:
    resuming it has no batch left, which is zero steps again."""
    data, ckpt = _dataset(tmp_path, [81]), tmp_path / "ckpt"  # (81 - 1) // 16 = 5 windows: 2 steps of 2
    first = _run(data, ckpt, "--max-steps=10", "--num-workers=0")
    assert first.returncode == 0 and "dataset exhausted at step 2" in first.stderr, first.stderr
    rerun = _run(data, ckpt, "--max-steps=10", "--num-workers=0")
    assert rerun.returncode == 2, rerun.stderr
    assert "resumes at step 2" in rerun.stderr and "used the data up" in rerun.stderr


def _status(
    path: Path, warm: int, total: int = 1000, *, name: str | None = "c4", version: str | None = "v1"
) -> None:
    sys.path.insert(0, str(WORKLOAD))
    import cache_status

    cache_status.write(
        path,
        cache_status.CacheStatus("/dataset/c4/v1/", name, version, total, warm, warm == total, time.time()),
    )


PIN = ("--dataset-name=c4", "--dataset-version=v1")


@pytest.mark.thorough
def test_records_carry_prewarm_s_cached_fraction(tmp_path: Path) -> None:
    """The composite cache alarm reads DatasetPrewarmedFraction from the job's records (hubspoke/alarms.py)."""
    ckpt, status = tmp_path / "ckpt", tmp_path / "status.json"
    _dataset(tmp_path, [400])
    _status(status, 250)
    run = _run(
        tmp_path / "dataset", ckpt, *PIN, "--max-steps=2", "--num-workers=0", f"--cache-status={status}"
    )
    assert run.returncode == 0, run.stderr
    [record] = _records(run.stdout)
    assert record[training_metrics.DATASET_PREWARMED_FRACTION] == 0.25


@pytest.mark.thorough
@pytest.mark.parametrize(("name", "version"), [(None, None), ("c4", "v0")])
def test_a_status_that_does_not_name_the_pinned_version_is_not_republished(
    tmp_path: Path, name: str | None, version: str | None
) -> None:
    """Review of issue 24: v1 warm, a job pinned to another version must not publish 1.0 from a status that
    names no version (a whole-tree prewarm) or another one, or the cache-hit composite could page on a cold
    first pass. No fraction at all reads as "not fully cached" to the alarm (missing data breaches)."""
    ckpt, status = tmp_path / "ckpt", tmp_path / "status.json"
    _dataset(tmp_path, [400])
    _status(status, 1000, name=name, version=version)
    run = _run(
        tmp_path / "dataset", ckpt, *PIN, "--max-steps=2", "--num-workers=0", f"--cache-status={status}"
    )
    assert run.returncode == 0, run.stderr
    [record] = _records(run.stdout)
    assert training_metrics.DATASET_PREWARMED_FRACTION not in record


def test_train_py_no_longer_waits_for_the_cache() -> None:
    """The wait moved to an init container (workload/cache_status.py, tests/workload/test_cache_status.py): inside
    the monitored process it printed nothing and HyperPod's start cut-off restarted it as hung."""
    sys.path.insert(0, str(WORKLOAD))
    import train

    with pytest.raises(SystemExit) as exited:
        train.parse_args(["--data-dir=/d", "--checkpoint-dir=/c", "--wait-for-cached-fraction=1"])
    assert exited.value.code == 2


def test_a_cache_wait_that_ran_out_with_at_deadline_fail_is_refused_before_anything_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The init container exits 0 at its deadline (a failed one is restarted forever, Kubernetes "Init
    Containers"); with --at-deadline fail it leaves a refusal that train.py turns into its bad-input exit 2."""
    refusal = tmp_path / "wait.refused"
    refusal.write_text("the cache wait's deadline passed: 0.500 warm\n")
    err = _refusal(capsys, f"--data-dir={tmp_path / 'absent'}", f"--checkpoint-dir={tmp_path / 'ckpt'}",
                   f"--cache-wait-refusal={refusal}")  # fmt: skip
    assert "deadline passed" in err
