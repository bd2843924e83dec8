"""Peak GPU memory of one rank of the reference run, estimated without a GPU by PyTorch's own FSDP memory tracker.

The reference settings come from where the job takes them: the model preset, sequence length and batch per GPU
from hubspoke.k8s.job.TrainingSettings, the world size (nodes x GPUs per node) and the vocabulary
(dataset.vocab_size) from config/dev.yaml. The model
is workload/train.py's own build_model (per-block activation checkpointing, FSDP2 with bf16 compute and fp32
reduction) and step (chunked cross-entropy, AdamW), run twice on fake tensors (torch FakeTensorMode: shapes,
dtypes and sizes, no data) with a fake process group of the reference world size, under
torch.distributed._tools.fsdp2_mem_tracker.FSDPMemTracker, which counts every tensor the step allocates by
category (parameters, gradients, activations, optimizer states, temporaries) and keeps the peak. The second
step is the one reported: Adam's states exist then. `--baseline` runs the step as train.py took it before
(no activation checkpointing, cross-entropy over the full logits cast to fp32), for comparison.

What differs from a GPU run, each on purpose and printed with the result:
- the fake tensors live on a fake CPU device with bf16 forced: FSDP2 on a CUDA mesh needs CUDA streams and
  events, which a CPU-only torch does not have; a tensor's bytes do not depend on its device;
- attention runs as aten._scaled_dot_product_flash_attention (its fake implementation keeps the output and the
  log-sum-exp only): on fake tensors scaled_dot_product_attention would take the math kernel, which
  materializes the (seq x seq) scores, while an H100 with bf16, head_dim 64 and a causal mask gets a fused
  kernel that does not. The key/value heads are repeated to the query heads, which only costs more memory;
- random fills are skipped (Tensor.uniform_/normal_ leave their tensor as is, inputs are zeros): an in-place
  fill allocates nothing.

Not counted (the tracker sees tensors only): the CUDA context, NCCL's communicator buffers and the caching
allocator's fragmentation; the headroom to 80 GB is for them.

Run: `.venv/bin/python benchmarks/train_memory.py` (about a minute on 2 cores). `--quick` (the thorough tier's
check that it still runs): the same estimate of workload/llama.py's "tiny" preset, short sequences; no figure.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
from torch.distributed.device_mesh import init_device_mesh
from torch.testing._internal.distributed.fake_pg import FakeStore

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "workload"), str(ROOT)]
import train  # noqa: E402  (workload/train.py, as the image runs it)

from hubspoke.config import load  # noqa: E402
from hubspoke.k8s.accelerators import accelerator  # noqa: E402
from hubspoke.k8s.run import TrainingSettings  # noqa: E402

GIB = 2**30
GOAL_GIB = 70
H100_BYTES = 80 * 10**9  # "H100 SXM5 80GB"


@contextlib.contextmanager
def flash_attention() -> Iterator[None]:
    """F.scaled_dot_product_attention as the fused flash kernel (see the module docstring)."""
    original = F.scaled_dot_product_attention

    def flash(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):  # type: ignore[no-untyped-def]
        if attn_mask is not None or dropout_p:
            raise ValueError("the reference model uses neither a mask tensor nor dropout")
        if enable_gqa and k.shape[1] != q.shape[1]:
            repeat = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        return torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, is_causal, scale=scale)[0]

    F.scaled_dot_product_attention = flash  # type: ignore[assignment]
    try:
        yield
    finally:
        F.scaled_dot_product_attention = original  # type: ignore[assignment]


@contextlib.contextmanager
def no_random_fills() -> Iterator[None]:
    """In-place random initialisation as a no-op (see the module docstring); values do not change memory."""
    saved = torch.Tensor.uniform_, torch.Tensor.normal_
    torch.Tensor.uniform_ = lambda self, *a, **k: self  # type: ignore[method-assign]
    torch.Tensor.normal_ = lambda self, *a, **k: self  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.Tensor.uniform_, torch.Tensor.normal_ = saved  # type: ignore[method-assign]


def estimate(
    settings: TrainingSettings, world: int, *, vocab_size: int, baseline: bool = False
) -> tuple[dict[str, int], float]:
    """The tracker's peak snapshot (bytes by category) of step two, and the seconds the estimate took.

    `baseline`: the step as train.py took it before this estimate existed, for comparison: no activation
    checkpointing, and cross-entropy over the full logits cast to fp32.
    """
    started = time.perf_counter()
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    try:
        args = train.parse_args(
            ["--data-dir=/unused", "--checkpoint-dir=/unused", f"--model={settings.model}", f"--vocab-size={vocab_size}",
             f"--seq-len={settings.seq_len}", f"--batch-size={settings.batch_size}"]
        )  # fmt: skip
        # Fake CPU tensors stand for the GPU's: FSDP2 on a CUDA mesh needs the CUDA runtime (streams, events),
        # which a CPU-only torch lacks. Bytes per tensor do not depend on the device; bf16 is forced as on GPUs.
        device = torch.device("cpu")
        mesh = init_device_mesh("cpu", (world,))  # outside fake mode: DeviceMesh reads its rank map
        with FakeTensorMode(), flash_attention(), no_random_fills():
            model = train.build_model(args, device, mesh, bf16=True)
            if baseline:
                for layer in model.layers:  # type: ignore[union-attr]
                    layer.checkpointed = False
            optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
            inputs = torch.zeros((args.batch_size, args.seq_len), dtype=torch.long, device=device)
            labels = torch.zeros((args.batch_size, args.seq_len), dtype=torch.long, device=device)
            tracker = FSDPMemTracker(model, optimizer)
            tracker.track_inputs((inputs, labels))
            with tracker:
                for step in range(2):
                    if step == 1:
                        tracker.reset_mod_stats()
                    if baseline:
                        logits = model(inputs)
                        loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
                    else:
                        loss = model(inputs, labels)
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
            peak = tracker.get_tracker_snapshot("peak")
    finally:
        dist.destroy_process_group()
    (by_device,) = [v for d, v in peak.items() if d.type == "cpu"]
    return by_device, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "dev.yaml")
    parser.add_argument(
        "--baseline", action="store_true", help="the step without checkpointing or chunked loss"
    )
    parser.add_argument(
        "--quick", action="store_true", help="check it still runs: the tiny model (no figure)"
    )
    args = parser.parse_args(argv)
    config = load(args.config).config
    region = next(r for r in config.regions() if r.compute.enabled)
    group = region.compute.instance_groups[0]
    world = group.count * accelerator(group.instance_type).gpus
    settings = TrainingSettings()
    # The vocabulary the job renders: the config's dataset format (LLaMA 3's 128,256 by default).
    vocab = config.dataset.vocab_size
    if args.quick:
        settings = dataclasses.replace(settings, model="tiny", seq_len=128, batch_size=2)
        vocab = 1024
    peak, seconds = estimate(settings, world, vocab_size=vocab, baseline=args.baseline)
    total = peak["Total"]
    what = (
        "BASELINE (no activation checkpointing, full fp32 logits)" if args.baseline else "train.py as shipped"
    )
    print(f"{what}: {settings.model}, vocabulary {vocab}, seq {settings.seq_len}, batch {settings.batch_size} per GPU, bf16 compute, "
          f"FSDP over {world} ranks ({group.count} x {group.instance_type}), step 2 of 2")  # fmt: skip
    print(
        "attention as aten._scaled_dot_product_flash_attention; fake tensors; random fills skipped (docstring)"
    )
    for category, size in sorted(peak.items(), key=lambda kv: -kv[1]):
        if category != "Total" and size:
            print(f"  {str(category).rsplit('.', 1)[-1]:<16} {size / GIB:7.2f} GiB")
    print(f"peak per rank: {total / GIB:.2f} GiB = {total / 10**9:.1f} GB "
          f"({100 * total / H100_BYTES:.0f} % of 80 GB; goal <= {GOAL_GIB} GiB: "
          f"{'met' if total <= GOAL_GIB * GIB else 'NOT met'}); estimated in {seconds:.0f} s, torch {torch.__version__}")  # fmt: skip
    return 0 if total <= GOAL_GIB * GIB else 1


if __name__ == "__main__":
    sys.exit(main())
