"""Reference PyTorch implementation of the tern encoder-decoder (docs/CONVENTIONS.md).

This file is the executable form of the math in docs/CONVENTIONS.md. It is used to make the
parity fixtures (tools/fixtures/make_parity_fixtures.py) and by the demo-training code. It
needs only torch (>= 1.13, with numpy) and the Python standard library.

API
---
Config                          dataclass mirroring config.json (keys exactly as CONVENTIONS.md;
                                every runtime field: test_canonical_lists.py checks it).
    Config(**fields)            missing embedding_scale -> sqrt(d_model); validate() is called.
    Config.from_dict(d) / Config.from_json(text) / Config.load(path)
        Unknown keys are kept in `cfg.extra` and written back by to_dict(); `//` line comments
        (as in the CONVENTIONS.md example) are tolerated.
    cfg.to_dict() / cfg.to_json(indent=2) / cfg.save(path)
    cfg.d_head

TernModel(cfg, output_bias=False, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    nn.Module. model.state_dict() keys ARE the canonical tensor names: no alias or duplicate
    keys. With shared_embeddings only `encoder.embed_tokens.weight` exists (the decoder looks it
    up through a non-registered reference); with tied_output there is no
    `output_projection.weight` (the decoder's embedding table is used); `output_projection.bias`
    exists iff output_bias=True. Dropout (default 0: exact inference math) is applied to
    embeddings+PE, to every sub-layer output before its residual add, to attention
    probabilities (attention_dropout) and after the FFN activation (activation_dropout).
    Parameters are fp32 by default; `model.double()` gives the exact reference math.

    model(src_ids, tgt_in) -> logits [B, T, V]           (training entry point)
    model.src_pad_mask(src_ids) -> bool [B, S], True at pad_id (masked as keys)
    model.encode(src_ids) -> enc_out [B, S, d]
        Rows at padded positions are whatever the math gives (they are never used as keys).
    model.decode_logits(enc_out, tgt_in, src_pad_mask=None) -> logits [B, T, V]
        Teacher forcing, full recompute, causal self-attention. No target key-padding mask is
        applied: with right padding and the causal mask, pad positions of tgt_in can only
        influence later (pad) query positions, so a loss that ignores pad targets is unaffected.
    model.greedy(src_ids, max_len, use_cache=True) -> list[list[int]]
        Greedy decoding per CONVENTIONS.md: decoder input starts with decoder_start_id (then
        forced_bos_id, when >= 0, as the first generated token), at most
        max_len decoding steps, argmax with the lowest id on ties, stop after EOS; the returned
        ids exclude the start token and the EOS. src_ids may be a padded batch [B, S] or 1-D.
        use_cache=True: incremental decoding (decoder self-attention K/V cache, cross-attention
        K/V computed once per layer). use_cache=False: full recompute of the prefix each step.
    model.output_weight() -> the [tgt_vocab, d_model] matrix used for logits.
    TernModel.from_tensors(cfg, tensors, strict=True) -> model (fp32; ignores `expected.*`).

sinusoidal_positions(n_pos, d_model, dtype=torch.float64) -> [n_pos, d_model]
    Interleaved: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same angle).
attention(q, k, v, mask=None) -> (out, probs)
    softmax(q k^T / sqrt(d_head) + mask) v; mask is additive (0 / -inf) or bool (True = masked).
    bias (T5, added to the scaled logits) and shaw=(a_k, a_v) [Tq, Tk, dh] (Shaw et al.).
t5_relative_position_bucket(rel, bidirectional, num_buckets, max_distance)  T5's, verbatim.
rotary_tables(positions, rotary_dim, base) -> cos, sin [T, rotary_dim/2];
apply_rotary(x, cos, sin, rotary_dim)  RoPE, LLaMA's rotate_half pairing.
RMSNorm(d, eps)                  x / sqrt(mean(x^2) + eps) * weight.
Positions (cfg.position): sinusoidal / learned are added to the embeddings; relative (shaw:
per-layer relative_key / relative_value in self-attention; t5_bias: one
relative_attention_bias table per stack) and rotary act inside self-attention only, with the
query's position = the decoding step under the cache (which holds rotated keys).
canonical_names(cfg, output_bias=False) -> list[str]  (in state_dict order)
argmax_lowest(x) -> LongTensor   argmax over the last dim, lowest index on ties.

save_safetensors(path, tensors: dict[str, Tensor], metadata: dict[str, str] | None = None)
load_safetensors(path) -> (dict[str, Tensor], dict[str, str])
    Hand-written safetensors: 8-byte little-endian u64 header length N, N bytes of JSON header
    {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}
    (header padded with spaces to a multiple of 8), then the raw little-endian data. Tensors are
    laid out like the reference implementation (by dtype size descending, then by name), so the
    data buffer has no holes and every tensor is aligned to its element size.
    Dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import struct
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = [
    "Config", "TernModel", "sinusoidal_positions", "attention", "canonical_names",
    "argmax_lowest", "save_safetensors", "load_safetensors",
]


# --------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Config:
    architecture: str = "encoder_decoder"
    d_model: int = 32
    heads: int = 4
    encoder_layers: int = 2
    decoder_layers: int = 2
    d_ff: int = 64
    activation: str = "relu"          # relu | gelu | swish | swiglu (fc2(silu(fc1 x) * fc3 x))
    norm: str = "post"                # post | pre
    layer_norm_eps: float = 1e-5
    position: str = "sinusoidal"      # sinusoidal | learned | relative | rotary | none
    embedding_scale: Optional[float] = None   # None -> sqrt(d_model)
    shared_embeddings: bool = True
    tied_output: bool = True
    src_vocab_size: int = 50
    tgt_vocab_size: int = 50
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    unk_id: int = 3
    decoder_start_id: int = 1
    max_positions: int = 256
    # Format 1.2 fields. to_dict() writes each only when it differs from its default, so the
    # JSON of a config that does not use them is what it always was.
    norm_kind: str = "layer_norm"     # layer_norm | rms_norm (x / sqrt(mean(x^2) + eps) * w)
    relative_attention: str = "shaw"  # position "relative": shaw | t5_bias
    relative_max_distance: int = 16   # Shaw: k (clip); T5: max_distance of the log buckets
    relative_buckets: int = 32        # T5: buckets
    rotary_dim: int = 0               # position "rotary": rotated dims per head (0 = d_head)
    rotary_base: float = 10000.0
    # Format 1.3: K/V heads of every attention (grouped-query attention; 0 = heads).
    kv_heads: int = 0
    # The runtime's other fields (runtime/model/config_fields.h; test_canonical_lists.py checks
    # that this class has every one): the Universal Transformer's (universal_torch.py) and what
    # this reference does not implement; validate() refuses anything but their defaults.
    sinusoid_layout: str = "interleaved"
    post_ln_final_norm: bool = False
    universal_steps: int = 0
    act_threshold: float = 0.0
    # Format 1.6: scaled rotary frequencies (LLaMA 3.1's rope_scaling; the decoder-only
    # references llama_torch.py implement them, this one does not).
    rotary_scaling: str = "none"      # none | linear | llama3
    rotary_scaling_factor: float = 1.0
    rotary_low_freq_factor: float = 0.0
    rotary_high_freq_factor: float = 0.0
    rotary_original_max_positions: int = 0
    # Format 1.6: columns per head (0 = d_model / heads); not implemented here.
    head_dim: int = 0
    # Format 1.7: sliding-window attention of decoder-only models (llama_torch.py's Mistral).
    sliding_window: int = 0
    # Format 1.7: LayerNorm(embeddings + positions) before each stack's first layer (BART's
    # layernorm_embedding; norm_kind and layer_norm_eps as every norm).
    layernorm_embedding: bool = False
    # Format 1.7: the first token greedy() generates, whatever the logits (forced_bos_token_id);
    # -1: none.
    forced_bos_id: int = -1
    extra: Dict[str, object] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.embedding_scale is None:
            self.embedding_scale = math.sqrt(self.d_model)
        self.validate()

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads

    @property
    def kv_head_count(self) -> int:
        return self.kv_heads or self.heads

    @property
    def rotary_dims(self) -> int:
        return self.rotary_dim or self.d_head

    @property
    def shaw(self) -> bool:
        return self.position == "relative" and self.relative_attention == "shaw"

    @property
    def t5_bias(self) -> bool:
        return self.position == "relative" and self.relative_attention == "t5_bias"

    def validate(self):
        if self.architecture != "encoder_decoder":
            raise ValueError(f"architecture {self.architecture!r} not supported")
        if self.d_model % self.heads != 0:
            raise ValueError("d_model must be divisible by heads")
        if self.d_model % 2 != 0:
            raise ValueError("d_model must be even (interleaved sin/cos positions)")
        if self.activation not in ("relu", "gelu", "swish", "swiglu"):
            raise ValueError(f"activation {self.activation!r} not supported")
        if self.norm not in ("post", "pre"):
            raise ValueError(f"norm {self.norm!r} not supported")
        if self.norm_kind not in ("layer_norm", "rms_norm"):
            raise ValueError(f"norm_kind {self.norm_kind!r} not supported")
        if self.position not in ("sinusoidal", "learned", "relative", "rotary", "none"):
            raise ValueError(f"position {self.position!r} not supported")
        if self.relative_attention not in ("shaw", "t5_bias"):
            raise ValueError(f"relative_attention {self.relative_attention!r} not supported")
        if self.relative_max_distance <= 0:
            raise ValueError("relative_max_distance must be > 0")
        if self.position == "relative" and self.relative_attention == "t5_bias" and (
                self.relative_buckets < 4 or self.relative_buckets % 2
                or self.relative_max_distance <= self.relative_buckets // 2):
            raise ValueError("t5_bias needs an even relative_buckets >= 4 and "
                             "relative_max_distance > relative_buckets / 2")
        if self.rotary_dim < 0 or self.rotary_dim % 2 or self.rotary_dim > self.d_head:
            raise ValueError("rotary_dim must be even and at most d_head")
        if self.position == "rotary" and self.d_head % 2:
            raise ValueError("rotary positions need an even d_head")
        if self.kv_heads < 0 or self.heads % self.kv_head_count:
            raise ValueError("kv_heads must divide heads")
        if self.shared_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError("shared_embeddings needs src_vocab_size == tgt_vocab_size")
        if self.sinusoid_layout != "interleaved":
            raise ValueError(f"sinusoid_layout {self.sinusoid_layout!r} not supported")
        if self.post_ln_final_norm:
            raise ValueError("post_ln_final_norm not supported")
        if (self.rotary_scaling != "none" or self.rotary_scaling_factor != 1.0
                or self.rotary_low_freq_factor or self.rotary_high_freq_factor
                or self.rotary_original_max_positions):
            raise ValueError("rotary_scaling not supported (decoder-only: llama_torch.py)")
        if self.head_dim:
            raise ValueError("head_dim not supported (decoder-only: llama_torch.py's Gemma)")
        if self.sliding_window:
            raise ValueError("sliding_window is for decoder-only models (llama_torch.py's Mistral)")
        if self.universal_steps or self.act_threshold:
            raise ValueError("universal_steps and act_threshold need architecture 'universal' "
                             "(universal_torch.UniversalConfig)")

    # Written by to_dict() only when they differ from their defaults, which must then be what
    # the runtime reads for an absent key (test_canonical_lists.py checks it).
    _OPTIONAL = ("norm_kind", "relative_attention", "relative_max_distance", "relative_buckets",
                 "rotary_dim", "rotary_base", "kv_heads", "sinusoid_layout", "post_ln_final_norm",
                 "universal_steps", "act_threshold", "rotary_scaling", "rotary_scaling_factor",
                 "rotary_low_freq_factor", "rotary_high_freq_factor",
                 "rotary_original_max_positions", "head_dim", "sliding_window",
                 "layernorm_embedding", "forced_bos_id")

    def to_dict(self) -> dict:
        # Defaults of this class, not of a subclass: an omitted key means the runtime's default.
        default = {f.name: f.default for f in dataclasses.fields(Config)}
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
             if f.name != "extra"
             and not (f.name in self._OPTIONAL and getattr(self, f.name) == default[f.name])}
        d.update(self.extra)
        return d

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def save(self, path: str):
        with open(path, "w") as f:
            f.write(self.to_json() + "\n")

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        extra = {k: v for k, v in d.items() if k not in names}
        return cls(**known, extra=extra)

    @classmethod
    def from_json(cls, text: str) -> "Config":
        try:
            d = json.loads(text)
        except json.JSONDecodeError:
            # tolerate `// comment` to end of line (the CONVENTIONS.md example has them)
            d = json.loads(re.sub(r"//[^\n\"]*$", "", text, flags=re.M))
        return cls.from_dict(d)

    @classmethod
    def load(cls, path: str) -> "Config":
        with open(path) as f:
            return cls.from_json(f.read())


# --------------------------------------------------------------------------------------------
# Math helpers
# --------------------------------------------------------------------------------------------

def sinusoidal_positions(n_pos: int, d_model: int, dtype=torch.float64, offset: int = 0):
    """[n_pos, d_model] interleaved PE for positions offset .. offset+n_pos-1 (computed in fp64)."""
    pos = torch.arange(offset, offset + n_pos, dtype=torch.float64).unsqueeze(1)      # [P,1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)                           # [d/2]
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / d_model)
    pe = torch.empty(n_pos, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.to(dtype)


def attention(q, k, v, mask=None, dropout_p: float = 0.0, training: bool = False,
              bias=None, shaw=None):
    """q [..., Tq, dh], k/v [..., Tk, dh]. mask: additive float or bool (True = masked).
    bias: T5 bias added to the scaled logits (broadcast to [..., Tq, Tk]).
    shaw: (a_k, a_v), each [Tq, Tk, dh]: Shaw et al.'s relative key / value embeddings of each
    query-key pair: e_ij = q_i.(k_j + a_k[i,j]) / sqrt(dh), z_i = sum_j p_ij (v_j + a_v[i,j])."""
    scores = torch.matmul(q, k.transpose(-1, -2))
    if shaw is not None:
        scores = scores + torch.einsum("...qd,qkd->...qk", q, shaw[0])
    scores = scores / math.sqrt(q.shape[-1])
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(mask, float("-inf"))
        else:
            scores = scores + mask
    probs = torch.softmax(scores, dim=-1)
    if dropout_p > 0.0 and training:
        probs = F.dropout(probs, dropout_p, True)
    out = torch.matmul(probs, v)
    if shaw is not None:
        out = out + torch.einsum("...qk,qkd->...qd", probs, shaw[1])
    return out, probs


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32,
                                max_distance=128):
    """T5's _relative_position_bucket, as in Hugging Face transformers (modeling_t5.py).
    relative_position = key position - query position (LongTensor)."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    # now relative_position is in the range [0, inf)
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


def rotary_tables(positions, rotary_dim: int, base: float, dtype=torch.float64):
    """cos, sin [T, rotary_dim/2] of positions * theta_i, theta_i = base^(-2i/rotary_dim)
    (LLaMA's inv_freq), computed in float64."""
    inv_freq = base ** (-torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim)
    angle = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    return torch.cos(angle).to(dtype), torch.sin(angle).to(dtype)


def apply_rotary(x, cos, sin, rotary_dim: int):
    """x [..., T, d_head]; cos/sin [T, rotary_dim/2]. LLaMA / Hugging Face rotate_half: dim i
    pairs with i + rotary_dim/2; dims beyond rotary_dim pass unchanged."""
    h = rotary_dim // 2
    x1, x2, rest = x[..., :h], x[..., h:rotary_dim], x[..., rotary_dim:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], dim=-1)


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight (no mean subtraction, no bias)."""

    def __init__(self, d: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _norm(cfg: "Config"):
    if cfg.norm_kind == "rms_norm":
        return RMSNorm(cfg.d_model, cfg.layer_norm_eps)
    return nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)


def argmax_lowest(x: torch.Tensor) -> torch.Tensor:
    """argmax over the last dim; on exact ties the lowest index wins."""
    m = x.max(dim=-1, keepdim=True).values
    idx = torch.arange(x.shape[-1], device=x.device).expand_as(x)
    big = torch.full_like(idx, x.shape[-1])
    return torch.where(x == m, idx, big).min(dim=-1).values


def _activation(name: str):
    if name == "relu":
        return F.relu
    if name == "gelu":
        return lambda t: F.gelu(t)          # exact erf form (torch default)
    if name in ("swish", "swiglu"):        # swiglu: the gate's silu; the FFN multiplies by fc3
        return lambda t: t * torch.sigmoid(t)
    raise ValueError(name)


def canonical_names(cfg: Config, output_bias: bool = False) -> List[str]:
    """All canonical tensor names for cfg, in TernModel.state_dict() order."""
    lin = lambda p: [f"{p}.weight", f"{p}.bias"]
    norm = (lambda p: [f"{p}.weight"]) if cfg.norm_kind == "rms_norm" else lin
    shaw = lambda p: [f"{p}.relative_key.weight", f"{p}.relative_value.weight"] if cfg.shaw else []
    attn = lambda p: sum((lin(f"{p}.{x}") for x in ("q_proj", "k_proj", "v_proj", "out_proj")), [])
    ffn = lambda p: lin(f"{p}.fc1") + lin(f"{p}.fc2") + (
        lin(f"{p}.fc3") if cfg.activation == "swiglu" else [])

    def stack_positions(stack):
        out = []
        if cfg.position == "learned":
            out.append(f"{stack}.embed_positions.weight")
        if cfg.t5_bias:
            out.append(f"{stack}.relative_attention_bias.weight")
        if cfg.layernorm_embedding:
            out += norm(f"{stack}.layernorm_embedding")
        return out

    names = ["encoder.embed_tokens.weight"] + stack_positions("encoder")
    for i in range(cfg.encoder_layers):
        p = f"encoder.layers.{i}"
        names += attn(f"{p}.self_attn") + shaw(f"{p}.self_attn") + norm(f"{p}.self_attn_layer_norm")
        names += ffn(p) + norm(f"{p}.final_layer_norm")
    if cfg.norm == "pre":
        names += norm("encoder.layer_norm")
    if not cfg.shared_embeddings:
        names.append("decoder.embed_tokens.weight")
    names += stack_positions("decoder")
    for i in range(cfg.decoder_layers):
        p = f"decoder.layers.{i}"
        names += attn(f"{p}.self_attn") + shaw(f"{p}.self_attn") + norm(f"{p}.self_attn_layer_norm")
        names += attn(f"{p}.encoder_attn") + norm(f"{p}.encoder_attn_layer_norm")
        names += ffn(p) + norm(f"{p}.final_layer_norm")
    if cfg.norm == "pre":
        names += norm("decoder.layer_norm")
    if not cfg.tied_output:
        names.append("output_projection.weight")
    if output_bias:
        names.append("output_projection.bias")
    return names


# --------------------------------------------------------------------------------------------
# Modules
# --------------------------------------------------------------------------------------------

class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, heads: int, attention_dropout: float = 0.0,
                 cfg: Optional[Config] = None, self_attention: bool = False):
        """cfg + self_attention: the positions that act inside self-attention (Shaw's relative
        key/value tables, registered here; rotary rotations of q and k). Cross-attention and
        absolute positions: plain attention."""
        super().__init__()
        self.heads = heads
        self.d_head = d_model // heads
        # Grouped-query attention (Ainslie et al. 2023): kv_heads K/V heads, each shared by
        # heads / kv_heads consecutive query heads (query head h reads K/V head h // group).
        self.kv_heads = cfg.kv_head_count if cfg is not None else heads
        self.attention_dropout = attention_dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.kv_heads * self.d_head)
        self.v_proj = nn.Linear(d_model, self.kv_heads * self.d_head)
        self.out_proj = nn.Linear(d_model, d_model)
        self.cfg = cfg
        self.shaw = cfg is not None and self_attention and cfg.shaw
        self.rotary = cfg is not None and self_attention and cfg.position == "rotary"
        if self.shaw:
            n = 2 * cfg.relative_max_distance + 1
            self.relative_key = nn.Embedding(n, self.d_head)    # a^K, shared by the heads
            self.relative_value = nn.Embedding(n, self.d_head)  # a^V

    def _split(self, x):                     # [B,T,H*dh] -> [B,H,T,dh]; head h = cols h*dh:(h+1)*dh
        B, T, n = x.shape
        return x.view(B, T, n // self.d_head, self.d_head).transpose(1, 2)

    def kv(self, x):
        return self._split(self.k_proj(x)), self._split(self.v_proj(x))

    def forward(self, x, kv_input=None, mask=None, cache: Optional[dict] = None, static_kv=False,
                offset: int = 0, bias=None):
        """x: queries [B,Tq,d]. kv_input: keys/values source (None = x, self-attention).
        cache (incremental decoding): for self-attention, new K/V are appended to cache['k'/'v'];
        with static_kv (cross-attention), cache['k'/'v'] are computed once and reused.
        offset: position of the first query and of the first new key (self-attention keys sit
        at positions 0..). bias: T5 bias [1, H, Tq, Tk] added to the scaled logits.
        Rotary: q and the new k are rotated before the cache, so the cache holds rotated keys."""
        q = self._split(self.q_proj(x))
        src = x if kv_input is None else kv_input
        Tq = x.shape[1]
        rot = None
        if self.rotary:
            pos = torch.arange(offset, offset + Tq, device=x.device)
            cos, sin = rotary_tables(pos, self.cfg.rotary_dims, self.cfg.rotary_base, q.dtype)
            rot = lambda t: apply_rotary(t, cos, sin, self.cfg.rotary_dims)
            q = rot(q)
        if cache is None:
            k, v = self.kv(src)
            if rot is not None:
                k = rot(k)
        elif static_kv:
            if "k" not in cache:
                cache["k"], cache["v"] = self.kv(src)
            k, v = cache["k"], cache["v"]
        else:
            k_new, v_new = self.kv(src)
            if rot is not None:
                k_new = rot(k_new)
            if "k" in cache:
                k_new = torch.cat([cache["k"], k_new], dim=2)
                v_new = torch.cat([cache["v"], v_new], dim=2)
            cache["k"], cache["v"] = k_new, v_new
            k, v = k_new, v_new
        shaw = None
        if self.shaw:
            qpos = torch.arange(offset, offset + Tq, device=x.device)[:, None]
            kpos = torch.arange(k.shape[2], device=x.device)[None, :]
            kk = self.cfg.relative_max_distance
            idx = torch.clamp(kpos - qpos, -kk, kk) + kk                              # [Tq, Tk]
            shaw = (self.relative_key(idx), self.relative_value(idx))
        if self.kv_heads != self.heads:  # each K/V head serves its group of query heads
            group = self.heads // self.kv_heads
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        out, _ = attention(q, k, v, mask, self.attention_dropout, self.training, bias, shaw)
        B, H, T, dh = out.shape
        return self.out_proj(out.transpose(1, 2).reshape(B, T, H * dh))


class _Layer(nn.Module):
    """What encoder and decoder layers share: self-attention and its norm, the position-wise FFN
    and its norm, and the residual wiring of every sub-layer."""

    def _init_self_attn(self, cfg: Config, attention_dropout):
        self.pre = cfg.norm == "pre"
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.heads, attention_dropout, cfg, True)
        self.self_attn_layer_norm = _norm(cfg)

    def _init_ffn(self, cfg: Config, dropout, activation_dropout):
        d = cfg.d_model
        self.fc1 = nn.Linear(d, cfg.d_ff)
        self.fc2 = nn.Linear(cfg.d_ff, d)
        if cfg.activation == "swiglu":
            self.fc3 = nn.Linear(d, cfg.d_ff)  # SwiGLU's up projection W3
        self.final_layer_norm = _norm(cfg)
        self.act = _activation(cfg.activation)
        self.dropout = nn.Dropout(dropout)
        self.activation_dropout = nn.Dropout(activation_dropout)

    def ffn(self, x):
        h = self.act(self.fc1(x))
        if "fc3" in self._modules:
            h = h * self.fc3(x)
        return self.fc2(self.activation_dropout(h))

    def residual(self, x, sublayer, norm):
        """Post-LN (the paper): norm(x + Sublayer(x)); pre-LN: x + Sublayer(norm(x))."""
        if self.pre:
            return x + self.dropout(sublayer(norm(x)))
        return norm(x + self.dropout(sublayer(x)))


class EncoderLayer(_Layer):
    def __init__(self, cfg: Config, dropout, attention_dropout, activation_dropout):
        super().__init__()
        self._init_self_attn(cfg, attention_dropout)
        self._init_ffn(cfg, dropout, activation_dropout)

    def forward(self, x, mask, bias=None):
        sa = lambda h: self.self_attn(h, mask=mask, bias=bias)
        x = self.residual(x, sa, self.self_attn_layer_norm)
        return self.residual(x, self.ffn, self.final_layer_norm)


class DecoderLayer(_Layer):
    def __init__(self, cfg: Config, dropout, attention_dropout, activation_dropout):
        super().__init__()
        self._init_self_attn(cfg, attention_dropout)
        self.encoder_attn = MultiHeadAttention(cfg.d_model, cfg.heads, attention_dropout, cfg)
        self.encoder_attn_layer_norm = _norm(cfg)
        self._init_ffn(cfg, dropout, activation_dropout)

    def forward(self, x, enc_out, self_mask, cross_mask, cache: Optional[dict] = None,
                offset: int = 0, bias=None):
        sa_cache = None if cache is None else cache.setdefault("self", {})
        ca_cache = None if cache is None else cache.setdefault("cross", {})
        sa = lambda h: self.self_attn(h, mask=self_mask, cache=sa_cache, offset=offset, bias=bias)
        ca = lambda h: self.encoder_attn(h, enc_out, mask=cross_mask, cache=ca_cache,
                                         static_kv=True)
        x = self.residual(x, sa, self.self_attn_layer_norm)
        x = self.residual(x, ca, self.encoder_attn_layer_norm)
        return self.residual(x, self.ffn, self.final_layer_norm)


class _Stack(nn.Module):
    """Common part of Encoder/Decoder: embedding lookup (possibly borrowed) + positions, the
    layers and the pre-LN final norm."""

    def __init__(self, cfg: Config, vocab: int, borrowed: Optional[nn.Embedding], layer, n: int,
                 dropout, attention_dropout, activation_dropout):
        super().__init__()
        self.cfg = cfg
        self._init_embedding(vocab, cfg.d_model, borrowed)
        self._init_positions(cfg)
        self.layers = nn.ModuleList(
            [layer(cfg, dropout, attention_dropout, activation_dropout) for _ in range(n)])
        if cfg.norm == "pre":
            self.layer_norm = _norm(cfg)
        self.dropout = nn.Dropout(dropout)     # on embeddings + positions

    def _init_embedding(self, vocab, d, borrowed: Optional[nn.Embedding]):
        if borrowed is None:
            self.embed_tokens = nn.Embedding(vocab, d)
        else:
            # Keep a reference WITHOUT registering it: no duplicate/alias state_dict key.
            # The Embedding module object is owned (registered) elsewhere, so .to()/.double()
            # on the whole model still converts it, and this reference sees the result.
            object.__setattr__(self, "_borrowed_embed", borrowed)

    def embedding(self) -> nn.Embedding:
        if "embed_tokens" in self._modules:
            return self._modules["embed_tokens"]
        return self.__dict__["_borrowed_embed"]

    def _init_positions(self, cfg: Config):
        """Per-stack position parameters: learned absolute rows, or T5's bias table (shared by
        the stack's layers)."""
        if cfg.position == "learned":
            self.embed_positions = nn.Embedding(cfg.max_positions, cfg.d_model)
        if cfg.t5_bias:
            self.relative_attention_bias = nn.Embedding(cfg.relative_buckets, cfg.heads)
        if cfg.layernorm_embedding:
            self.layernorm_embedding = _norm(cfg)

    def embed(self, ids, offset: int = 0):
        T = ids.shape[1]
        if offset + T > self.cfg.max_positions:
            raise ValueError(f"position {offset + T - 1} >= max_positions {self.cfg.max_positions}")
        w = self.embedding().weight
        x = F.embedding(ids, w) * self.cfg.embedding_scale
        if self.cfg.position == "sinusoidal":
            x = x + sinusoidal_positions(T, self.cfg.d_model, w.dtype, offset).to(w.device)
        elif self.cfg.position == "learned":
            x = x + self.embed_positions(torch.arange(offset, offset + T, device=w.device))
        if self.cfg.layernorm_embedding:
            x = self.layernorm_embedding(x)
        return self.dropout(x)

    def t5_bias(self, q_offset: int, tq: int, tk: int, bidirectional: bool):
        """[1, H, tq, tk]: table[bucket(key - query)] per head, or None without T5 bias."""
        if not self.cfg.t5_bias:
            return None
        w = self.relative_attention_bias.weight
        qpos = torch.arange(q_offset, q_offset + tq, device=w.device)[:, None]
        kpos = torch.arange(tk, device=w.device)[None, :]
        buckets = t5_relative_position_bucket(kpos - qpos, bidirectional, self.cfg.relative_buckets,
                                              self.cfg.relative_max_distance)
        return self.relative_attention_bias(buckets).permute(2, 0, 1)[None]


class Encoder(_Stack):
    def __init__(self, cfg: Config, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0):
        super().__init__(cfg, cfg.src_vocab_size, None, EncoderLayer, cfg.encoder_layers,
                         dropout, attention_dropout, activation_dropout)

    def forward(self, src_ids, src_pad_mask=None):
        x = self.embed(src_ids)
        mask = None if src_pad_mask is None else src_pad_mask[:, None, None, :]   # [B,1,1,S]
        S = src_ids.shape[1]
        bias = self.t5_bias(0, S, S, bidirectional=True)
        for layer in self.layers:
            x = layer(x, mask, bias)
        if self.cfg.norm == "pre":
            x = self.layer_norm(x)
        return x


class Decoder(_Stack):
    def __init__(self, cfg: Config, shared_embed: Optional[nn.Embedding] = None,
                 dropout=0.0, attention_dropout=0.0, activation_dropout=0.0):
        super().__init__(cfg, cfg.tgt_vocab_size, shared_embed, DecoderLayer, cfg.decoder_layers,
                         dropout, attention_dropout, activation_dropout)

    def forward(self, tgt_ids, enc_out, src_pad_mask=None, cache: Optional[dict] = None):
        """Full (cache None): causal mask over tgt_ids. Incremental (cache dict): tgt_ids holds
        only the new token(s) at positions cache['pos'] ..; returns hidden [B,T,d]."""
        offset = 0 if cache is None else cache.get("pos", 0)
        T = tgt_ids.shape[1]
        x = self.embed(tgt_ids, offset)
        # causal: query at position offset+i sees keys 0..offset+i
        Tk = offset + T
        qpos = torch.arange(offset, offset + T, device=x.device)[:, None]
        kpos = torch.arange(Tk, device=x.device)[None, :]
        self_mask = (kpos > qpos)[None, None]                                      # [1,1,T,Tk]
        if not bool(self_mask.any()):
            self_mask = None
        cross_mask = None if src_pad_mask is None else src_pad_mask[:, None, None, :]
        bias = self.t5_bias(offset, T, Tk, bidirectional=False)
        for i, layer in enumerate(self.layers):
            lc = None if cache is None else cache.setdefault(i, {})
            x = layer(x, enc_out, self_mask, cross_mask, lc, offset, bias)
        if cache is not None:
            cache["pos"] = offset + T
        if self.cfg.norm == "pre":
            x = self.layer_norm(x)
        return x


class OutputProjection(nn.Module):
    """Holds only what exists canonically: `weight` iff not tied, `bias` iff output_bias."""

    def __init__(self, cfg: Config, output_bias: bool):
        super().__init__()
        if not cfg.tied_output:
            self.weight = nn.Parameter(torch.empty(cfg.tgt_vocab_size, cfg.d_model))
            nn.init.normal_(self.weight, std=cfg.d_model ** -0.5)
        if output_bias:
            self.bias = nn.Parameter(torch.zeros(cfg.tgt_vocab_size))


class TernModel(nn.Module):
    def __init__(self, cfg: Config, output_bias: bool = False, dropout: float = 0.0,
                 attention_dropout: float = 0.0, activation_dropout: float = 0.0):
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        self.encoder = Encoder(cfg, dropout, attention_dropout, activation_dropout)
        shared = self.encoder.embed_tokens if cfg.shared_embeddings else None
        self.decoder = Decoder(cfg, shared, dropout, attention_dropout, activation_dropout)
        self.has_output_module = (not cfg.tied_output) or output_bias
        if self.has_output_module:
            self.output_projection = OutputProjection(cfg, output_bias)
        self.output_bias = output_bias

    # ---- pieces --------------------------------------------------------------------------
    def output_weight(self) -> torch.Tensor:
        if self.cfg.tied_output:
            return self.decoder.embedding().weight
        return self.output_projection.weight

    def project(self, h):
        b = self.output_projection.bias if self.output_bias else None
        return F.linear(h, self.output_weight(), b)

    def src_pad_mask(self, src_ids):
        return src_ids == self.cfg.pad_id

    # ---- public API ----------------------------------------------------------------------
    def encode(self, src_ids):
        return self.encoder(src_ids, self.src_pad_mask(src_ids))

    def decode_logits(self, enc_out, tgt_in, src_pad_mask=None):
        return self.project(self.decoder(tgt_in, enc_out, src_pad_mask))

    def forward(self, src_ids, tgt_in):
        mask = self.src_pad_mask(src_ids)
        return self.decode_logits(self.encoder(src_ids, mask), tgt_in, mask)

    @torch.no_grad()
    def greedy(self, src_ids, max_len: int, use_cache: bool = True) -> List[List[int]]:
        cfg = self.cfg
        if src_ids.dim() == 1:
            src_ids = src_ids.unsqueeze(0)
        B = src_ids.shape[0]
        mask = self.src_pad_mask(src_ids)
        enc = self.encoder(src_ids, mask)
        dev = src_ids.device
        tokens = torch.full((B, 1), cfg.decoder_start_id, dtype=torch.long, device=dev)
        out: List[List[int]] = [[] for _ in range(B)]
        done = [False] * B
        cache: Optional[dict] = {} if use_cache else None
        for _ in range(max_len):
            if use_cache:
                h = self.decoder(tokens[:, -1:], enc, mask, cache)
            else:
                h = self.decoder(tokens, enc, mask)
            nxt = argmax_lowest(self.project(h[:, -1]))                              # [B]
            if cfg.forced_bos_id >= 0 and tokens.shape[1] == 1:
                nxt = torch.full_like(nxt, cfg.forced_bos_id)
            step_ids = nxt.tolist()  # one host transfer per step (not one per row)
            for b in range(B):
                if done[b]:
                    continue
                t = step_ids[b]
                if t == cfg.eos_id:
                    done[b] = True
                else:
                    out[b].append(t)
            if all(done):
                break
            tokens = torch.cat([tokens, nxt[:, None]], dim=1)
        return out

    @classmethod
    def from_tensors(cls, cfg: Config, tensors: Dict[str, torch.Tensor], strict: bool = True,
                     **kw) -> "TernModel":
        sd = {k: v for k, v in tensors.items() if not k.startswith("expected.")}
        model = cls(cfg, output_bias="output_projection.bias" in sd, **kw)
        model.load_state_dict({k: v.float() for k, v in sd.items()}, strict=strict)
        return model


# --------------------------------------------------------------------------------------------
# safetensors (hand-written)
# --------------------------------------------------------------------------------------------

_ST_DTYPES = {
    torch.float64: ("F64", 8), torch.float32: ("F32", 4), torch.float16: ("F16", 2),
    torch.bfloat16: ("BF16", 2), torch.int64: ("I64", 8), torch.int32: ("I32", 4),
    torch.int16: ("I16", 2), torch.int8: ("I8", 1), torch.uint8: ("U8", 1),
    torch.bool: ("BOOL", 1),
}
_ST_FROM_NAME = {name: (dt, size) for dt, (name, size) in _ST_DTYPES.items()}
# Same-size integer views, used to move raw bytes without numpy dtype support for bf16/bool.
_RAW_VIEW = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}


def _tensor_bytes(t: torch.Tensor) -> bytes:
    import sys
    _, size = _ST_DTYPES[t.dtype]
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bool:
        raw = t.to(torch.uint8)
    else:
        raw = t.view(_RAW_VIEW[size]) if t.dtype != _RAW_VIEW[size] else t
    b = raw.numpy().tobytes() if t.numel() else b""
    if sys.byteorder != "little" and size > 1:
        import array
        a = array.array({8: "q", 4: "i", 2: "h"}[size]); a.frombytes(b); a.byteswap()
        b = a.tobytes()
    return b


def save_safetensors(path: str, tensors: Dict[str, torch.Tensor],
                     metadata: Optional[Dict[str, str]] = None) -> None:
    for k, t in tensors.items():
        if not isinstance(k, str) or k == "__metadata__":
            raise ValueError(f"bad tensor name {k!r}")
        if t.dtype not in _ST_DTYPES:
            raise ValueError(f"{k}: dtype {t.dtype} not supported")
    if metadata is not None:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValueError("metadata must be dict[str, str]")
    # reference layout: by dtype alignment (element size) descending, then name
    order = sorted(tensors, key=lambda k: (-_ST_DTYPES[tensors[k].dtype][1], k))
    header: Dict[str, object] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    blobs = []
    off = 0
    for k in order:
        t = tensors[k]
        b = _tensor_bytes(t)
        header[k] = {"dtype": _ST_DTYPES[t.dtype][0], "shape": list(t.shape),
                     "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)


def load_safetensors(path: str) -> Tuple[Dict[str, torch.Tensor], Dict[str, str]]:
    import sys
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("file too small")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError("header length beyond end of file")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = data[8 + n:]
    metadata = header.pop("__metadata__", None) or {}
    tensors: Dict[str, torch.Tensor] = {}
    for k, info in header.items():
        dt, size = _ST_FROM_NAME[info["dtype"]]
        shape = [int(s) for s in info["shape"]]
        b0, b1 = info["data_offsets"]
        numel = 1
        for s in shape:
            numel *= s
        if not (0 <= b0 <= b1 <= len(body)) or b1 - b0 != numel * size:
            raise ValueError(f"{k}: bad data_offsets {b0},{b1} for shape {shape} {info['dtype']}")
        chunk = body[b0:b1]
        if sys.byteorder != "little" and size > 1:
            import array
            a = array.array({8: "q", 4: "i", 2: "h"}[size]); a.frombytes(chunk); a.byteswap()
            chunk = a.tobytes()
        raw = torch.frombuffer(bytearray(chunk), dtype=_RAW_VIEW[size]) if numel else \
            torch.empty(0, dtype=_RAW_VIEW[size])
        if dt == torch.bool:
            t = raw.to(torch.bool)
        elif dt == _RAW_VIEW[size]:
            t = raw
        else:
            t = raw.view(dt)
        tensors[k] = t.reshape(shape).clone()
    return tensors, metadata
