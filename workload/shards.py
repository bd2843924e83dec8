"""Tokenized shards on the dataset mount: fixed-length windows read with plain sequential file reads.

A shard is a flat file of little-endian token IDs (`*.bin`; 2 bytes each for vocabularies up to 65,536,
else 4). Sample i of a shard is tokens [i*L, i*L + L + 1): L inputs and the same window shifted by one as
labels. Reads go straight to the file (no mmap), so the storage sees the loader's real access pattern.
docs/datasets.md documents this format with the manifest that seals each dataset version.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from pathlib import Path

import torch
from torch.utils.data import Dataset, Sampler

_DTYPES = {2: torch.int16, 4: torch.int32}
_MASKS = {2: 0xFFFF, 4: 0xFFFFFFFF}


class TokenShards(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Every `*.bin` under a directory, in sorted path order, as (inputs, labels) windows of seq_len tokens."""

    def __init__(self, root: str | Path, *, seq_len: int, token_bytes: int = 2):
        if token_bytes not in _DTYPES:
            raise ValueError(f"token_bytes must be 2 or 4, not {token_bytes}")
        self.seq_len, self.token_bytes = seq_len, token_bytes
        self.paths = sorted(str(p) for p in Path(root).rglob("*.bin"))
        if not self.paths:
            raise FileNotFoundError(f"no *.bin shards under {root}; is the dataset volume mounted?")
        counts = [max(0, (os.path.getsize(p) // token_bytes - 1) // seq_len) for p in self.paths]
        self.starts = [0]
        for count in counts:
            self.starts.append(self.starts[-1] + count)
        self._files: dict[int, int] = {}  # per worker process: shard index -> open descriptor

    def __len__(self) -> int:
        return self.starts[-1]

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not 0 <= index < len(self):
            raise IndexError(index)
        shard = bisect.bisect_right(self.starts, index) - 1
        offset = (index - self.starts[shard]) * self.seq_len * self.token_bytes
        size = (self.seq_len + 1) * self.token_bytes
        fd = self._files.get(shard)
        if fd is None:
            fd = self._files[shard] = os.open(self.paths[shard], os.O_RDONLY)
        data = os.pread(fd, size, offset)
        if len(data) != size:
            raise OSError(f"short read in {self.paths[shard]} at {offset}: {len(data)} of {size} bytes")
        signed = torch.frombuffer(bytearray(data), dtype=_DTYPES[self.token_bytes])
        tokens = signed.to(torch.int64) & _MASKS[self.token_bytes]  # IDs are unsigned on disk
        return tokens[:-1], tokens[1:]

    def __getstate__(self) -> dict[str, object]:
        # Descriptors do not survive the fork/spawn into loader workers; each worker opens its own.
        return {**self.__dict__, "_files": {}}


class RankSampler(Sampler[int]):
    """This rank's share of the samples, in order (rank, rank + world, ...), resumable at a given step."""

    def __init__(self, length: int, *, rank: int, world_size: int, batch_size: int, start_step: int = 0):
        per_rank = length // world_size  # drop the tail so every rank runs the same number of steps
        self.indices = range(rank, per_rank * world_size, world_size)[start_step * batch_size :]

    def __len__(self) -> int:
        return len(self.indices)

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices)
