"""The reference training run: LLaMA 3 ~1B with FSDP on tokenized shards from the dataset mount.

Started by torchrun (Kubeflow PyTorchJob) or hyperpodrun (HyperPodPyTorchJob), one process per GPU.
It reads one sealed dataset version (docs/datasets.md) and refuses, before joining the process group, a
version whose manifest is missing or disagrees with its arguments, and a resume from a checkpoint written
while reading another version (unless --allow-dataset-change).
Checkpoints go to the checkpoint mount with torch.distributed.checkpoint; rank 0 reports throughput every
--metrics-seconds (workload/throughput.py) as CloudWatch embedded metric format (EMF) records to the
CloudWatch agent named by AWS_EMF_AGENT_ENDPOINT (stdout when it is unset or unreachable), other messages on
stderr. Every node's local rank 0 prints the progress line (`[rank <r>] step <n> loss <x>`) on stdout: the
HyperPod elastic agent watches only local rank 0's stdout file for the job's log-monitoring rules, on every
node (hyperpod-elastic-agent 1.1.3, elastic_agent/hyperpod_elastic_agent.py start_log_monitoring starts its
LogAgent with local ranks {0}; logagent/log_agent.py _monitor_log_loop reads
`<attempt dir>/<local rank>/stdout.log`), so a node that printed nothing there would be flagged HANGING.

A rerun that finds nothing left to train (its checkpoint directory already holds --max-steps, or the data is
used up) exits with EXIT_NOTHING_TO_TRAIN and says why, instead of succeeding after zero steps.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path

import cache_status
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from emf_sink import EmfSink, write_line
from llama import PRESETS, Llama, shape
from manifest import Manifest, ManifestError, check_files, dataset_root, load
from shards import RankSampler, TokenShards
from throughput import ThroughputReporter
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.utils.data import DataLoader

from hubspoke.training_metrics import (
    AGENT_ENDPOINT_ENV,
    BASELINE_SECONDS,
    CHECKPOINT_AGE_SECONDS,
    DATASET_PREWARMED_FRACTION,
    REPORT_SECONDS,
    SAMPLES_PER_SECOND,
    SAMPLES_PER_SECOND_BASELINE,
    STEP_SECONDS,
    TOKENS_PER_SECOND,
    TRAINING_JOB_COMPLETED,
    emf_line,
)

STEP_DIR = re.compile(r"^step_(\d{8})$")
# A rerun with nothing left to train is a mistake in what was submitted (bad input), not a crash.
EXIT_NOTHING_TO_TRAIN = 2
# Beside each checkpoint: the dataset version it was trained on, checked on resume.
CHECKPOINT_DATASET = "dataset.json"
EXIT_REFUSED = 2


class Refused(Exception):
    """The run must not start: the message is one line saying why and what to change."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument(
        "--data-dir",
        required=True,
        type=Path,
        help="the dataset mount (with --dataset-name and --dataset-version), or one version's directory",
    )
    p.add_argument("--dataset-name", help="read <data-dir>/<name>/<version>; give --dataset-version too")
    p.add_argument("--dataset-version")
    p.add_argument("--checkpoint-dir", required=True, type=Path)
    p.add_argument("--model", choices=sorted(PRESETS), default="llama3-1b")
    p.add_argument(
        "--vocab-size", type=int, help="expected vocabulary (default: the manifest's); refused if it differs"
    )
    p.add_argument(
        "--token-bytes",
        type=int,
        choices=(2, 4),
        help="expected token width (default: the manifest's); refused if it differs",
    )
    p.add_argument(
        "--allow-dataset-change",
        action="store_true",
        help="resume a checkpoint trained on another dataset version (refused otherwise)",
    )
    p.add_argument("--seq-len", type=int, default=4096)
    p.add_argument("--batch-size", type=int, default=24, help="per GPU (per process)")
    p.add_argument("--num-workers", type=int, default=4)
    p.add_argument("--prefetch-factor", type=int, default=4)
    p.add_argument("--max-steps", type=int, default=999)
    p.add_argument("--checkpoint-every", type=int, default=500)
    p.add_argument(
        "--log-every",
        type=int,
        default=10,
        help="steps between progress lines (each node's local rank 0, stdout)",
    )
    p.add_argument(
        "--metrics-seconds", type=float, default=REPORT_SECONDS, help="seconds between throughput records"
    )
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=0, help="model initialisation: every rank must start equal")
    p.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    p.add_argument("--environment", default=os.environ.get("HUBSPOKE_ENVIRONMENT", "unknown"))
    p.add_argument("--region", default=os.environ.get("AWS_REGION", "unknown"))
    p.add_argument("--job-name", default="hubspoke-reference")
    p.add_argument(
        "--cache-status",
        type=Path,
        help="prewarm's status file (workload/cache_status.py): its cached fraction goes out with every "
        "throughput record, for the cache alarms",
    )
    # Waiting for the cache is not done here: the HyperPod agent would flag the silent wait as a hung start. The
    # rendered job waits in an init container before this process starts (workload/cache_status.py).
    p.add_argument(
        "--cache-wait-refusal",
        type=Path,
        help="refuse to start when this file exists: the cache wait's deadline passed with --at-deadline fail",
    )
    return p.parse_args(argv)


def cached_fraction(args: argparse.Namespace) -> float | None:
    """Prewarm's cached fraction of this job's dataset, or None (no status, unreadable, another version)."""
    if args.cache_status is None:
        return None
    try:
        status = cache_status.read(args.cache_status)
    except cache_status.StatusError as exc:
        log(str(exc))
        return None
    if status is None or not cache_status.describes(
        status, args.data_dir, name=args.dataset_name, version=args.dataset_version
    ):
        return None
    return status.fraction


def open_dataset(args: argparse.Namespace) -> tuple[Manifest, Path]:
    """The sealed version this run reads and its directory; fills in --token-bytes/--vocab-size from it.

    Refused: name without version (or the reverse), a version without a manifest (still loading), a manifest
    of another version, a format that disagrees with an explicit argument, files missing or of another size.
    """
    if (args.dataset_name is None) != (args.dataset_version is None):
        raise Refused(
            "--dataset-name and --dataset-version go together: give both, or neither and a version's --data-dir"
        )
    try:
        if args.dataset_name is not None:
            root = dataset_root(args.data_dir, args.dataset_name, args.dataset_version)
        else:
            root = args.data_dir
        found = load(root)
        if args.dataset_name is not None and (found.name, found.version) != (
            args.dataset_name,
            args.dataset_version,
        ):
            raise Refused(
                f"{root}: its manifest is {found.name}/{found.version}, not {args.dataset_name}/{args.dataset_version}"
            )
        for option, expected, actual in (
            ("--token-bytes", args.token_bytes, found.token_bytes),
            ("--vocab-size", args.vocab_size, found.vocab_size),
        ):
            if expected is not None and expected != actual:
                raise Refused(
                    f"{root}: {found.name}/{found.version} has {option.removeprefix('--')} {actual}, the job asks for {expected}; "
                    f"render the job for a dataset of that format, or drop {option} to take the manifest's"
                )
        check_files(found, root)
    except ManifestError as exc:
        raise Refused(str(exc)) from None
    args.token_bytes, args.vocab_size = found.token_bytes, found.vocab_size
    return found, root


def check_resume(args: argparse.Namespace, dataset: Manifest) -> None:
    """Refuse resuming a checkpoint trained on another dataset version unless --allow-dataset-change."""
    previous = latest_checkpoint(args.checkpoint_dir)
    if previous is None or args.allow_dataset_change:
        return
    record = previous[1] / CHECKPOINT_DATASET
    try:
        pinned = json.loads(record.read_text())
        trained_on = (pinned["name"], pinned["version"])
    except FileNotFoundError:
        raise Refused(
            f"{previous[1]} does not record its dataset version; resume with --allow-dataset-change if it was "
            f"{dataset.name}/{dataset.version}"
        ) from None
    except (ValueError, KeyError, TypeError):
        raise Refused(f"{record} is unreadable; resume with --allow-dataset-change to ignore it") from None
    if trained_on != (dataset.name, dataset.version):
        raise Refused(
            f"{previous[1]} was trained on {trained_on[0]}/{trained_on[1]}, this run reads "
            f"{dataset.name}/{dataset.version}; pass --allow-dataset-change to resume on the new version, "
            "or use another --checkpoint-dir"
        )


def log(message: str) -> None:
    print(f"[rank {dist.get_rank() if dist.is_initialized() else 0}] {message}", file=sys.stderr, flush=True)


def progress(step: int, loss: float) -> None:
    """The line the HyperPodPyTorchJob's log monitoring matches (hubspoke/k8s/job.py PROGRESS_LOG_PATTERN)."""
    write_line(
        sys.stdout, f"[rank {dist.get_rank() if dist.is_initialized() else 0}] step {step} loss {loss:.4f}"
    )


def nothing_to_train(args: argparse.Namespace, start_step: int, steps_left_in_data: int) -> str | None:
    """Why this run would train zero steps, with the fix, or None when there is work to do."""
    where = f"checkpoint directory {args.checkpoint_dir}"
    if start_step >= args.max_steps:
        return (
            f"{where} already holds step {start_step}, at or past --max-steps {args.max_steps}: this job "
            "name has finished, so there is nothing to train. Render the job under a new name "
            "(`hubspoke render job ... --job-name <new name>`) to start a new run, or render it with a larger "
            "`--max-steps` to continue this one"
        )
    if steps_left_in_data <= 0 and start_step == 0:
        return (
            f"the dataset under {args.data_dir} has fewer samples than one batch of --batch-size "
            f"{args.batch_size} per rank at this world size: there is nothing to train. Check "
            "the dataset or lower --batch-size"
        )
    if steps_left_in_data <= 0:
        return (
            f"{where} resumes at step {start_step}, but the dataset under {args.data_dir} has no batch left "
            "for that step at this world size and batch size: this job name used the data up. Render the job "
            "under a new name (`hubspoke render job ... --job-name <new name>`) to start a new run"
        )
    return None


def init_distributed(backend: str) -> tuple[int, int, torch.device]:
    """Join the process group torchrun/hyperpodrun describe in the environment (or a world of one)."""
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    if backend == "nccl":
        # The GPU first, then NCCL: torch's distributed_c10d.py warns that NCCL without
        # torch.cuda.set_device "will lead to unexpected hang issues", and device_id binds the communicator
        # to this GPU at once instead of every rank guessing device 0 (8 ranks crowding one H100).
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        dist.init_process_group(backend, timeout=timedelta(minutes=30), device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group(backend, timeout=timedelta(minutes=30))
    return dist.get_rank(), dist.get_world_size(), device


def latest_checkpoint(root: Path) -> tuple[int, Path] | None:
    """The newest complete checkpoint: DCP writes `.metadata` last, so a torn one is never picked."""
    found = []
    for child in root.glob("step_*"):
        match = STEP_DIR.match(child.name)
        if match and (child / ".metadata").exists():
            found.append((int(match.group(1)), child))
    return max(found) if found else None


def save_checkpoint(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, root: Path, step: int, dataset: Manifest
) -> Path:
    model_state, optim_state = get_state_dict(model, optimizer)
    target = root / f"step_{step:08d}"
    if dist.get_rank() == 0:
        # Before DCP's `.metadata`, so every checkpoint latest_checkpoint picks also names its dataset.
        target.mkdir(parents=True, exist_ok=True)
        record = {"name": dataset.name, "version": dataset.version}
        (target / CHECKPOINT_DATASET).write_text(json.dumps(record) + "\n")
    # Every rank writes its own shard into one shared directory: the checkpoint volume is ReadWriteMany.
    dcp.save(
        {"model": model_state, "optim": optim_state, "step": torch.tensor(step)}, checkpoint_id=str(target)
    )
    return target


def load_checkpoint(model: torch.nn.Module, optimizer: torch.optim.Optimizer, path: Path) -> int:
    model_state, optim_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optim": optim_state, "step": torch.tensor(0)}
    dcp.load(state, checkpoint_id=str(path))
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    return int(state["step"])


def build_model(
    args: argparse.Namespace, device: torch.device, mesh: DeviceMesh | None = None, bf16: bool | None = None
) -> torch.nn.Module:
    """The model, checkpointed per block and sharded per block (FSDP2) over `mesh` (default: every rank).

    bf16 compute with fp32 gradient reduction by default on GPUs; CPU runs (tests) stay in fp32. Its memory at
    the reference settings is measured by benchmarks/train_memory.py.
    """
    torch.manual_seed(args.seed)
    with device:  # created where it runs: no host copy of the whole model first
        model = Llama(shape(args.model, args.vocab_size))
    model.checkpoint_blocks()
    policy = (
        MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        if (device.type == "cuda" if bf16 is None else bf16)
        else MixedPrecisionPolicy()
    )
    for layer in model.layers:
        fully_shard(layer, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    return model


def checkpoint_written(root: Path, *, default: float) -> float:
    """When the newest complete checkpoint under `root` was written (its `.metadata`, which DCP writes last), in
    seconds since the epoch; `default` when there is none."""
    newest = latest_checkpoint(root)
    return (newest[1] / ".metadata").stat().st_mtime if newest is not None else default


def _throughput_reporter(
    args: argparse.Namespace,
    world: int,
    sink: EmfSink,
    dataset: Manifest,
    last_checkpoint: Callable[[], float],
) -> ThroughputReporter:
    """Rank 0's throughput, on a clock, as EMF records to the agent (workload/throughput.py says why), with the
    age of the checkpoint a restart would resume from (`last_checkpoint()`: when it was written)."""

    def report(step: int, rates: dict[str, float]) -> None:
        values = {
            SAMPLES_PER_SECOND: rates["samples_per_second"],
            TOKENS_PER_SECOND: rates["tokens_per_second"],
        }
        if "step_seconds" in rates:
            values[STEP_SECONDS] = rates["step_seconds"]
        if "baseline_samples_per_second" in rates:
            values[SAMPLES_PER_SECOND_BASELINE] = rates["baseline_samples_per_second"]
        fraction = cached_fraction(args)
        if fraction is not None:
            values[DATASET_PREWARMED_FRACTION] = fraction
        values[CHECKPOINT_AGE_SECONDS] = max(0.0, time.time() - last_checkpoint())
        values[TRAINING_JOB_COMPLETED] = 0.0  # still running: silence after this record means it died
        # The dataset as record properties, not dimensions: the dashboard and alarms name one series per
        # Environment and Region (hubspoke/training_metrics.py, DIMENSIONS); Logs Insights finds the version.
        line = emf_line(
            values,
            environment=args.environment,
            region=args.region,
            Job=args.job_name,
            Step=step,
            Dataset=dataset.name,
            DatasetVersion=dataset.version,
        )
        sink.send(line)
        log(f"step {step}: {rates['samples_per_second']:.1f} samples/s")

    reporter = ThroughputReporter(
        samples_per_step=args.batch_size * world,
        tokens_per_sample=args.seq_len,
        report=report,
        interval=args.metrics_seconds,
        baseline_seconds=max(BASELINE_SECONDS, args.metrics_seconds),
    )
    reporter.start()
    return reporter


def train(args: argparse.Namespace) -> int:
    try:
        # The init container exits 0 even then (a failed one is restarted forever): the refusal is made here.
        if args.cache_wait_refusal is not None and args.cache_wait_refusal.exists():
            raise Refused(args.cache_wait_refusal.read_text(encoding="utf-8").strip())
        dataset_manifest, data_root = open_dataset(args)
        # From here on --data-dir is the version's own directory: what the loader reads, what the messages name,
        # and what prewarm's status must describe (cache_status.describes matches its last two parts).
        args.data_dir = data_root
        check_resume(args, dataset_manifest)
    except Refused as exc:
        print(f"train.py: refused: {exc}", file=sys.stderr, flush=True)
        return EXIT_REFUSED
    # A finished job name, known from the checkpoint directory alone: refused before the process group and the
    # model, so each attempt torchrun and the operator make before giving up costs seconds, not a model build and
    # a checkpoint load on every GPU (the launchers retry any failed exit: torchrun --max-restarts, then the pods).
    finished = latest_checkpoint(args.checkpoint_dir)
    if finished is not None and finished[0] >= args.max_steps:
        refusal = nothing_to_train(args, finished[0], 1)
        if int(os.environ.get("LOCAL_RANK", "0")) == 0:  # once in every pod's log
            print(f"error: {refusal}", file=sys.stderr, flush=True)
        return EXIT_NOTHING_TO_TRAIN
    rank, world, device = init_distributed(args.backend)
    log(
        f"dataset {dataset_manifest.name}/{dataset_manifest.version}: {len(dataset_manifest.files)} files, "
        f"{dataset_manifest.total_bytes} bytes, {dataset_manifest.token_bytes}-byte tokens, "
        f"vocabulary {dataset_manifest.vocab_size}"
    )
    model = build_model(args, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    start_step = 0
    previous = latest_checkpoint(args.checkpoint_dir)
    if previous is not None:
        start_step = load_checkpoint(model, optimizer, previous[1])
        log(f"resumed from {previous[1]} at step {start_step}")

    dataset = TokenShards(data_root, seq_len=args.seq_len, token_bytes=args.token_bytes)
    sampler = RankSampler(
        len(dataset), rank=rank, world_size=world, batch_size=args.batch_size, start_step=start_step
    )
    workers = args.num_workers
    loader = DataLoader(
        dataset,
        batch_size=args.batch_size,
        sampler=sampler,
        drop_last=True,
        num_workers=workers,
        prefetch_factor=args.prefetch_factor if workers else None,
        persistent_workers=workers > 0,
        pin_memory=device.type == "cuda",
    )
    log(f"{len(dataset)} samples, {len(loader)} steps available to this rank, world size {world}")
    # Every rank reads the same checkpoint and gets the same number of steps (RankSampler), so all of them
    # stop here together: none waits in a collective for a peer that left.
    local_rank_zero = int(os.environ.get("LOCAL_RANK", "0")) == 0
    refusal = nothing_to_train(args, start_step, len(loader))
    if refusal is not None:
        if local_rank_zero:  # once in every pod's log
            print(f"error: {refusal}", file=sys.stderr, flush=True)
        dist.destroy_process_group()
        return EXIT_NOTHING_TO_TRAIN
    sink = EmfSink(os.environ.get(AGENT_ENDPOINT_ENV), warn=log) if rank == 0 else None
    # The age counts the work a failure would lose: since the newest checkpoint was written or since this process
    # started training, whichever is later (a resume of an old checkpoint has lost nothing yet: no page).
    started = time.time()
    written = [max(checkpoint_written(args.checkpoint_dir, default=started), started)]
    reporter = (
        _throughput_reporter(args, world, sink, dataset_manifest, lambda: written[0])
        if sink is not None
        else None
    )

    step, saved = start_step, start_step
    model.train()
    for inputs, labels in loader:
        if step >= args.max_steps:
            break
        inputs, labels = inputs.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        loss = model(inputs, labels)  # chunked cross-entropy: the full logits never exist
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        if reporter is not None:
            reporter.step_done(step)
        if local_rank_zero and (step % args.log_every == 0 or step == args.max_steps):
            progress(step, loss.item())
        if step % args.checkpoint_every == 0 or step == args.max_steps:
            log(
                f"checkpoint {save_checkpoint(model, optimizer, args.checkpoint_dir, step, dataset_manifest)}"
            )
            saved, written[0] = step, time.time()
    if step < args.max_steps:
        log(f"dataset exhausted at step {step} before --max-steps {args.max_steps}")
        if step != saved:
            log(
                f"checkpoint {save_checkpoint(model, optimizer, args.checkpoint_dir, step, dataset_manifest)}"
            )
            written[0] = time.time()
    if reporter is not None:
        reporter.close()
    dist.barrier()  # every rank got here: the job, not only rank 0, ended normally
    if sink is not None:
        # The last record: the silence that follows is a finished job's (hubspoke/training_metrics.py).
        sink.send(
            emf_line(
                {TRAINING_JOB_COMPLETED: 1.0},
                environment=args.environment,
                region=args.region,
                Job=args.job_name,
                Step=step,
                Dataset=dataset_manifest.name,
                DatasetVersion=dataset_manifest.version,
            )
        )
        sink.close()
    dist.destroy_process_group()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return train(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
