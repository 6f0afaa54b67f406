"""Reference PyTorch Universal Transformer (Dehghani et al. 2019) in tern's layout.

The executable form of the "Universal Transformer" part of docs/CONVENTIONS.md. It reuses
tools/model/tern_torch.py (layers, attention, safetensors) without changing it: the shared
block IS tern_torch's EncoderLayer / DecoderLayer, stored once as `encoder.layers.0.*` /
`decoder.layers.0.*`, and applied `universal_steps` (T) times.

Math (tensor2tensor's universal_transformer_util with hparams.pos = None,
add_position_timing_signal and add_step_timing_signal "sinusoid", steps counted from 0):

    h_0 = embed[id] * embedding_scale                  (no position here: it comes per step)
    for t = 0 .. T-1:
        s_t     = h_t + PE(pos) + PE(t)                 (coordinate embedding; one table)
        h_{t+1} = Block(s_t)                            (the shared encoder / decoder layer)
    output = h_T                                        (without ACT)

PE is the sinusoid table of config.sinusoid_layout; PE(t) is its row t, the same for every
position. tensor2tensor's own table (get_timing_signal_1d) is the "concatenated" layout.

Adaptive computation time (act_threshold > 0; Graves 2016, tensor2tensor's
universal_transformer_act_accumulated), per position, with p_t = sigmoid(W_halt s_t + b_halt):

    acc = 0, running
    step t: if running and (t == T-1 or acc + p_t > threshold): w_t = 1 - acc, halt
            elif running:                                       w_t = p_t, acc += p_t
            else:                                               w_t = 0
    output = sum_t w_t h_{t+1}                          (the weights sum to exactly 1)

The recurrence h_t itself does not depend on halting: every position keeps being transformed
(halted positions stay attention context for the others, as in tensor2tensor), only its weight
is 0. Unlike tensor2tensor, a position still running at step T-1 takes the remainder there
(Graves' N(t) <= M), so the output is always a convex combination of step states.

Decoding with a cache: the self-attention at step t of position i uses the keys/values of
positions 0..i at the same step t, so the incremental decoder keeps one K/V cache per step.

API
---
UniversalConfig(**fields)    tern_torch.Config plus universal_steps, act_threshold,
                             sinusoid_layout ("interleaved" | "concatenated" | "split_halves");
                             architecture "universal", encoder_layers = decoder_layers = 1.
UniversalModel(cfg, output_bias=False)
    a tern_torch.TernModel whose encoder and decoder run the recurrence above: encode,
    decode_logits, forward, greedy(src, max_len, use_cache=True|False), from_tensors as there.
    state_dict keys are the canonical names, plus encoder.halting.{weight,bias} ([1, d], [1])
    and decoder.halting.* when act_threshold > 0.
    model.act_log: when a list, every ACT decision appends (stack, steps [..] LongTensor of
    steps taken per position, min |acc + p - threshold| over decisions taken) for fixtures.
sinusoid_table(n, d, layout, offset=0) -> [n, d] float64
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import types
from typing import Dict, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tern_torch as tt  # noqa: E402

__all__ = ["UniversalConfig", "UniversalModel", "sinusoid_table"]

LAYOUTS = ("interleaved", "concatenated", "split_halves")


@dataclasses.dataclass
class UniversalConfig(tt.Config):
    architecture: str = "universal"
    encoder_layers: int = 1
    decoder_layers: int = 1
    universal_steps: int = 3
    act_threshold: float = 0.0
    sinusoid_layout: str = "interleaved"

    def validate(self):
        if self.architecture != "universal":
            raise ValueError(f"architecture {self.architecture!r}: expected 'universal'")
        # Everything else as tern_torch checks an encoder-decoder.
        # (a plain namespace: validate reads fields and the derived d_head, kv_head_count only).
        fields = dict(self.__dict__, architecture="encoder_decoder", d_head=self.d_head,
                      kv_head_count=self.kv_head_count, sinusoid_layout="interleaved",
                      universal_steps=0, act_threshold=0.0)
        tt.Config.validate(types.SimpleNamespace(**fields))
        if self.encoder_layers != 1 or self.decoder_layers != 1:
            raise ValueError("a universal transformer has one shared block per stack: "
                             "encoder_layers = decoder_layers = 1")
        if self.universal_steps < 1:
            raise ValueError("universal_steps must be >= 1")
        if not 0.0 <= self.act_threshold < 1.0:
            raise ValueError("act_threshold must be in [0, 1)")
        if self.sinusoid_layout not in LAYOUTS:
            raise ValueError(f"sinusoid_layout {self.sinusoid_layout!r} not supported")


def sinusoid_table(n: int, d: int, layout: str, offset: int = 0) -> torch.Tensor:
    """Rows offset .. offset+n-1 of the sinusoid table (float64), as the runtime's
    ref::SinusoidalPositions computes them."""
    pos = torch.arange(offset, offset + n, dtype=torch.float64).unsqueeze(1)
    if layout == "interleaved":
        return tt.sinusoidal_positions(n, d, torch.float64, offset)
    pe = torch.zeros(n, d, dtype=torch.float64)
    if layout == "concatenated":   # tensor2tensor's get_timing_signal_1d, fairseq
        half = d // 2
        inc = math.log(10000.0) / (half - 1) if half > 1 else 0.0
        angle = pos * torch.exp(-inc * torch.arange(half, dtype=torch.float64))
        pe[:, :half] = torch.sin(angle)
        pe[:, half:2 * half] = torch.cos(angle)
        return pe
    if layout == "split_halves":
        sentinel = (d + 1) // 2
        freq = torch.pow(torch.tensor(10000.0, dtype=torch.float64),
                         torch.arange(0, 2 * sentinel, 2, dtype=torch.float64) / d)
        pe[:, :sentinel] = torch.sin(pos / freq)
        pe[:, sentinel:] = torch.cos(pos / freq[:d - sentinel])
        return pe
    raise ValueError(layout)


class _Recurrence:
    """The T steps shared by both stacks (see the module docstring)."""

    def _init_recurrence(self, cfg: UniversalConfig):
        self.act = cfg.act_threshold > 0.0
        if self.act:
            self.halting = nn.Linear(cfg.d_model, 1)    # p = sigmoid(W s + b), W [1, d], b [1]

    def recur(self, x, offset: int, transform, stack: str, act_log):
        cfg = self.cfg
        T, L = cfg.universal_steps, x.shape[1]
        pe_pos = sinusoid_table(L, cfg.d_model, cfg.sinusoid_layout, offset).to(x.dtype)
        if not self.act:
            for t in range(T):
                pe_step = sinusoid_table(1, cfg.d_model, cfg.sinusoid_layout, t).to(x.dtype)
                x = transform(x + pe_pos + pe_step, t)
            return x
        thr = cfg.act_threshold
        acc = torch.zeros(x.shape[:-1], dtype=x.dtype)
        halted = torch.zeros(x.shape[:-1], dtype=torch.bool)
        steps = torch.zeros(x.shape[:-1], dtype=torch.long)
        out = torch.zeros_like(x)
        margin = float("inf")
        for t in range(T):
            pe_step = sinusoid_table(1, cfg.d_model, cfg.sinusoid_layout, t).to(x.dtype)
            s = x + pe_pos + pe_step
            p = torch.sigmoid(self.halting(s)).squeeze(-1)
            running = ~halted
            if t == T - 1:
                new_halt = running
            else:
                new_halt = running & (acc + p > thr)
                if bool(running.any()):
                    margin = min(margin, float((acc + p - thr)[running].abs().min()))
            still = running & ~new_halt
            w = torch.where(still, p, torch.where(new_halt, 1.0 - acc, torch.zeros_like(p)))
            acc = acc + torch.where(still, p, torch.zeros_like(p))
            halted = halted | new_halt
            steps = steps + running.long()
            x = transform(s, t)
            out = out + w.unsqueeze(-1) * x
        if act_log is not None:
            act_log.append((stack, steps, margin))
        return out


class UniversalEncoder(tt.Encoder, _Recurrence):
    def __init__(self, cfg: UniversalConfig):
        super().__init__(cfg)
        self._init_recurrence(cfg)
        self.act_log = None

    def forward(self, src_ids, src_pad_mask=None):
        x = F.embedding(src_ids, self.embedding().weight) * self.cfg.embedding_scale
        mask = None if src_pad_mask is None else src_pad_mask[:, None, None, :]
        layer = self.layers[0]
        x = self.recur(x, 0, lambda s, t: layer(s, mask), "encoder", self.act_log)
        if self.cfg.norm == "pre":
            x = self.layer_norm(x)
        return x


class UniversalDecoder(tt.Decoder, _Recurrence):
    def __init__(self, cfg: UniversalConfig, shared_embed: Optional[nn.Embedding] = None):
        super().__init__(cfg, shared_embed)
        self._init_recurrence(cfg)
        self.act_log = None

    def forward(self, tgt_ids, enc_out, src_pad_mask=None, cache: Optional[dict] = None):
        """As tern_torch.Decoder; the cache holds one self-attention K/V cache per step."""
        offset = 0 if cache is None else cache.get("pos", 0)
        T = tgt_ids.shape[1]
        if offset + T > self.cfg.max_positions:
            raise ValueError(f"position {offset + T - 1} >= max_positions {self.cfg.max_positions}")
        x = F.embedding(tgt_ids, self.embedding().weight) * self.cfg.embedding_scale
        qpos = torch.arange(offset, offset + T)[:, None]
        kpos = torch.arange(offset + T)[None, :]
        self_mask = (kpos > qpos)[None, None]
        if not bool(self_mask.any()):
            self_mask = None
        cross_mask = None if src_pad_mask is None else src_pad_mask[:, None, None, :]
        layer = self.layers[0]

        def transform(s, t):
            step_cache = None if cache is None else cache.setdefault(("step", t), {})
            return layer(s, enc_out, self_mask, cross_mask, step_cache)

        x = self.recur(x, offset, transform, "decoder", self.act_log)
        if cache is not None:
            cache["pos"] = offset + T
        if self.cfg.norm == "pre":
            x = self.layer_norm(x)
        return x


class UniversalModel(tt.TernModel):
    def __init__(self, cfg: UniversalConfig, output_bias: bool = False):
        nn.Module.__init__(self)
        cfg.validate()
        self.cfg = cfg
        self.encoder = UniversalEncoder(cfg)
        shared = self.encoder.embed_tokens if cfg.shared_embeddings else None
        self.decoder = UniversalDecoder(cfg, shared)
        self.has_output_module = (not cfg.tied_output) or output_bias
        if self.has_output_module:
            self.output_projection = tt.OutputProjection(cfg, output_bias)
        self.output_bias = output_bias

    @property
    def act_log(self):
        return self.encoder.act_log

    @act_log.setter
    def act_log(self, log):
        self.encoder.act_log = log
        self.decoder.act_log = log

    @classmethod
    def from_tensors(cls, cfg: UniversalConfig, tensors: Dict[str, torch.Tensor],
                     strict: bool = True, **kw) -> "UniversalModel":
        sd = {k: v for k, v in tensors.items() if not k.startswith("expected.")}
        model = cls(cfg, output_bias="output_projection.bias" in sd, **kw)
        model.load_state_dict({k: v.float() for k, v in sd.items()}, strict=strict)
        return model
