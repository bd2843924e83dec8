"""A LLaMA 3-style decoder (RMSNorm, rotary embeddings, grouped-query attention, SwiGLU) in plain PyTorch."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

# Tokens per cross-entropy chunk: a chunk's logits, their fp32 copy and their gradient live at once
# (8192 x 32000 x (2 + 4 + 4) bytes = 2.6 GB), never the whole batch's (24 x 4096 tokens: 31 GB).
LOSS_CHUNK_TOKENS = 8192


@dataclass(frozen=True)
class LlamaShape:
    """Sizes of the network; `vocab_size` must match the tokenizer that produced the shards."""

    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    ffn_dim: int
    vocab_size: int = 32000
    rope_theta: float = 500000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    def parameter_count(self) -> int:
        """Parameters with tied input/output embeddings, computed without building the model."""
        kv = self.n_kv_heads * self.head_dim
        attention = 2 * self.dim * self.dim + 2 * self.dim * kv
        block = attention + 3 * self.dim * self.ffn_dim + 2 * self.dim
        return self.n_layers * block + self.vocab_size * self.dim + self.dim


# ~1.04B with a 32k vocabulary, the size class of the reference run's "LLaMA 3 1.02B"; ~1.24B with LLaMA 3's
# 128,256-token vocabulary, which the rendered job uses (dataset.vocab_size).
PRESETS = {
    "llama3-1b": dict(dim=2048, n_layers=16, n_heads=32, n_kv_heads=8, ffn_dim=8192),
    "tiny": dict(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=128),
}


def shape(preset: str, vocab_size: int) -> LlamaShape:
    return LlamaShape(vocab_size=vocab_size, **PRESETS[preset])  # type: ignore[arg-type]


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


def rotary(
    seq_len: int, head_dim: int, theta: float, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    angles = torch.outer(torch.arange(seq_len, device=device).float(), freqs)
    return angles.cos(), angles.sin()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # x: (batch, heads, seq, head_dim); rotate interleaved pairs.
    x1, x2 = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return rotated.flatten(-2).type_as(x)


class Block(nn.Module):
    def __init__(self, s: LlamaShape):
        super().__init__()
        self.s = s
        # Keep only the block's input for backward and recompute the rest (activation checkpointing).
        self.checkpointed = False
        kv = s.n_kv_heads * s.head_dim
        self.attn_norm = RMSNorm(s.dim, s.norm_eps)
        self.wq = nn.Linear(s.dim, s.dim, bias=False)
        self.wk = nn.Linear(s.dim, kv, bias=False)
        self.wv = nn.Linear(s.dim, kv, bias=False)
        self.wo = nn.Linear(s.dim, s.dim, bias=False)
        self.ffn_norm = RMSNorm(s.dim, s.norm_eps)
        self.w1 = nn.Linear(s.dim, s.ffn_dim, bias=False)
        self.w3 = nn.Linear(s.dim, s.ffn_dim, bias=False)
        self.w2 = nn.Linear(s.ffn_dim, s.dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        if self.checkpointed and torch.is_grad_enabled():
            # Inside the (FSDP-wrapped) block's forward, so FSDP's hooks stay outside the recomputed region,
            # as torch's checkpoint_wrapper applied before fully_shard does. Non-reentrant: what FSDP2 supports.
            out: torch.Tensor = checkpoint(self._forward, x, cos, sin, use_reentrant=False)
            return out
        return self._forward(x, cos, sin)

    def _forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(b, t, self.s.n_heads, self.s.head_dim).transpose(1, 2)
        k = self.wk(h).view(b, t, self.s.n_kv_heads, self.s.head_dim).transpose(1, 2)
        v = self.wv(h).view(b, t, self.s.n_kv_heads, self.s.head_dim).transpose(1, 2)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.wo(attn.transpose(1, 2).reshape(b, t, self.s.dim))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def _chunk_loss(hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(F.linear(hidden, weight).float(), labels, reduction="sum")


def chunked_cross_entropy(
    hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, chunk: int = LOSS_CHUNK_TOKENS
) -> torch.Tensor:
    """Mean cross-entropy of `hidden @ weight.T` against `labels`, `chunk` tokens at a time.

    Each chunk's logits are recomputed in backward instead of kept, so the full (tokens x vocab) logits, in
    bf16 or fp32, never exist; the loss is still computed in fp32.
    """
    flat, targets = hidden.flatten(0, -2), labels.flatten()
    total = torch.zeros((), dtype=torch.float32, device=hidden.device)
    for start in range(0, targets.numel(), chunk):
        part = slice(start, start + chunk)
        total = total + checkpoint(_chunk_loss, flat[part], weight, targets[part], use_reentrant=False)
    return total / targets.numel()


class Llama(nn.Module):
    """Causal language model: logits (batch, seq, vocab), or with `labels` the mean cross-entropy loss."""

    def __init__(self, s: LlamaShape):
        super().__init__()
        self.s = s
        self.embed = nn.Embedding(s.vocab_size, s.dim)
        self.layers = nn.ModuleList(Block(s) for _ in range(s.n_layers))
        self.norm = RMSNorm(s.dim, s.norm_eps)
        # Small normal init: with tied embeddings a unit-variance table would start with huge logits.
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def checkpoint_blocks(self) -> None:
        """Activation checkpointing per block: backward keeps one (batch, seq, dim) tensor per block."""
        for layer in self.layers:
            layer.checkpointed = True  # type: ignore[assignment]

    def forward(self, tokens: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        cos, sin = rotary(tokens.shape[1], self.s.head_dim, self.s.rope_theta, tokens.device)
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, cos, sin)
        # Tied output projection: the embedding matrix doubles as the LM head.
        if labels is None:
            return F.linear(self.norm(x), self.embed.weight)
        # In the root module's forward, so FSDP has the (tied) embedding unsharded for the chunks' recompute.
        return chunked_cross_entropy(self.norm(x), self.embed.weight, labels)
