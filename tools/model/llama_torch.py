"""LLaMA (Touvron et al. 2023, "LLaMA: Open and Efficient Foundation Language Models") in plain
PyTorch, written from the published definition (Meta's llama/model.py; the module and parameter
names of Hugging Face transformers' modeling_llama.py, so a state_dict of this model has exactly
the names of a LlamaForCausalLM checkpoint):

  h_0 = E[tokens]                                            (model.embed_tokens, no scale)
  layer: a = h + o_proj(attn(rope(q_proj(n)), rope(k_proj(n)), v_proj(n))), n = input_layernorm(h)
         h = a + down_proj(silu(gate_proj(m)) * up_proj(m)),    m = post_attention_layernorm(a)
  logits = norm(h_L) W_lm^T                                  (lm_head, untied by default)

RMSNorm (Zhang & Sennrich 2019): x / sqrt(mean(x^2) + eps) * weight, no bias, no mean.
Every linear layer is nn.Linear without bias. Attention is causal, scaled by 1/sqrt(d_head).

Rotary positions (RoPE, Su et al. 2021) in the "rotate_half" form of transformers:
inv_freq_i = theta^(-2i/d_head), i < d_head/2; the angle of position p is p * inv_freq_i for
dimension i AND dimension i + d_head/2 (cos/sin tables are cat(freqs, freqs)), and
  rope(x) = x * cos + rotate_half(x) * sin,  rotate_half(x) = cat(-x[d/2:], x[:d/2]),
i.e. dimension i is rotated together with dimension i + d_head/2.

Meta's original code rotates adjacent pairs (2i, 2i+1) as complex numbers instead
(`apply_rotary_emb` with `torch.view_as_complex`). transformers' convert_llama_weights_to_hf.py
reorders the rows of every q_proj / k_proj weight (`permute`) so that its rotate_half form
computes exactly the same attention: a Hugging Face checkpoint's q/k weights are stored in the
rotate_half layout, which is tern's rotary pairing. `meta_attention_scores` and `permute` below
let tools/fixtures/make_llama_fixture.py check that equivalence numerically.

Scaled rotary frequencies (config.json's rope_scaling, as transformers' rope_init_fn applies
them to inv_freq), written here from their definitions:
  linear (position interpolation, Chen et al. 2023): inv_freq_i / factor;
  llama3 (Meta's LLaMA 3.1 apply_scaling): with wavelength w_i = 2 pi / inv_freq_i, L =
    original_max_position_embeddings, w_hi = L / high_freq_factor, w_lo = L / low_freq_factor:
    w_i < w_hi keeps inv_freq_i, w_i > w_lo divides it by factor, and in between
    (1 - s) inv_freq_i / factor + s inv_freq_i with s = (L / w_i - low) / (high - low).

The families that share this layout (config.json model_type): llama (LLaMA 1/2/3, TinyLlama,
SmolLM), mistral (the same network, with sliding-window attention where config.json's
sliding_window is set: the query at position i attends to keys i - sliding_window + 1 .. i,
as Mistral's reference code and transformers' sliding-window mask do), qwen2 (Qwen2 /
Qwen2.5: q_proj, k_proj and v_proj have biases, o_proj has none) and gemma (Gemma 1, Gemma
Team 2024, as transformers' modeling_gemma.py computes it):
  h_0 = E[tokens] * sqrt(hidden_size)      (the normalizer as a tensor of the activations'
                                            dtype: float64 here; see docs/converter.md)
  RMSNorm gain (1 + weight) instead of weight (computed in float32 there: float64 here)
  MLP: down_proj(gelu_tanh(gate_proj(m)) * up_proj(m))   (GeGLU, the tanh GELU)
  head_dim from config.json: q_proj [heads * head_dim, d], o_proj [d, heads * head_dim],
  attention scaled by 1/sqrt(head_dim); the output layer is the embedding (tied).

In older transformers versions every attention layer carried a persistent buffer
`model.layers.N.self_attn.rotary_emb.inv_freq` in its state_dict (newer ones keep one
non-persistent `model.rotary_emb.inv_freq`); this model saves the per-layer buffer so the
converter's handling of it is tested.

The transformers package is not used (nor installed here). The attention core and greedy
continuation are shared with gpt_torch.py (causal_lm.py).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import causal_lm


class LlamaRMSNorm(nn.Module):
    def __init__(self, d, eps, plus_one=False):
        super().__init__()
        # Gemma stores w with the norm multiplying by (1 + w) (its weights start at zero).
        self.weight = nn.Parameter(torch.zeros(d) if plus_one else torch.ones(d))
        self.eps, self.plus_one = eps, plus_one

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        gain = 1.0 + self.weight if self.plus_one else self.weight
        return gain * (x * torch.rsqrt(variance + self.eps))


def is_gemma(cfg):
    return cfg.get("model_type") == "gemma"


def scaled_inv_freq(inv, scaling):
    """inv_freq [dim/2] scaled per config.json's rope_scaling (None: unchanged)."""
    if not scaling:
        return inv
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "default":
        return inv
    if kind == "linear":
        return inv / scaling["factor"]
    if kind == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        out = []
        for f in inv.tolist():
            wavelen = 2 * math.pi / f
            if wavelen < old / high:
                out.append(f)
            elif wavelen > old / low:
                out.append(f / factor)
            else:
                smooth = (old / wavelen - low) / (high - low)
                out.append((1 - smooth) * f / factor + smooth * f)
        return torch.tensor(out, dtype=inv.dtype)
    raise ValueError(f"rope_scaling type {kind!r} not implemented")


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, base, scaling=None):
        super().__init__()
        # float32 as transformers computes it (the buffer a checkpoint may carry).
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", scaled_inv_freq(inv_freq, scaling))
        self.dim, self.base, self.scaling = dim, base, scaling

    def forward(self, positions, dtype):
        # The angles in float64 from the exact frequencies, so the reference is not limited by
        # float32 angle rounding at large positions.
        inv = 1.0 / (float(self.base) ** (torch.arange(0, self.dim, 2, dtype=torch.float64) / self.dim))
        inv = scaled_inv_freq(inv, self.scaling)
        freqs = positions.to(torch.float64)[:, None] * inv[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    """q, k [B, H, T, dh]; cos, sin [T, dh]."""
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class LlamaAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        # Grouped-query attention (LLaMA 2 70B, LLaMA 3; Ainslie et al. 2023): num_key_value_heads
        # K/V heads, each shared by heads / kv_heads consecutive query heads (transformers'
        # repeat_kv).
        self.kv_heads = cfg.get("num_key_value_heads") or self.heads
        self.dh = cfg.get("head_dim") or d // self.heads  # Gemma: heads * head_dim != d
        bias = cfg.get("model_type") == "qwen2"  # Qwen2: q/k/v biases, none on o_proj
        self.q_proj = nn.Linear(d, self.heads * self.dh, bias=bias)
        self.k_proj = nn.Linear(d, self.kv_heads * self.dh, bias=bias)
        self.v_proj = nn.Linear(d, self.kv_heads * self.dh, bias=bias)
        self.o_proj = nn.Linear(self.heads * self.dh, d, bias=False)
        self.rotary_emb = LlamaRotaryEmbedding(self.dh, cfg.get("rope_theta", 10000.0),
                                               cfg.get("rope_scaling"))
        self.window = cfg.get("sliding_window") if cfg.get("model_type") == "mistral" else None

    def forward(self, x):
        q = causal_lm.split_heads(self.q_proj(x), self.heads)
        k, v = (causal_lm.split_heads(p(x), self.kv_heads) for p in (self.k_proj, self.v_proj))
        cos, sin = self.rotary_emb(torch.arange(x.shape[1]), x.dtype)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        group = self.heads // self.kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        T = x.shape[1]
        hidden = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # the future
        if self.window:  # and the keys window or more positions back
            hidden |= torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-self.window)
        return self.o_proj(causal_lm.causal_attention(q, k, v, hidden))


class LlamaMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, ff = cfg["hidden_size"], cfg["intermediate_size"]
        self.gate_proj = nn.Linear(d, ff, bias=False)
        self.up_proj = nn.Linear(d, ff, bias=False)
        self.down_proj = nn.Linear(ff, d, bias=False)
        self.gemma = is_gemma(cfg)

    def forward(self, x):
        if self.gemma:  # GeGLU
            return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, eps = cfg["hidden_size"], cfg["rms_norm_eps"]
        self.self_attn = LlamaAttention(cfg)
        self.mlp = LlamaMLP(cfg)
        self.input_layernorm = LlamaRMSNorm(d, eps, is_gemma(cfg))
        self.post_attention_layernorm = LlamaRMSNorm(d, eps, is_gemma(cfg))

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList(LlamaDecoderLayer(cfg) for _ in range(cfg["num_hidden_layers"]))
        self.norm = LlamaRMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"], is_gemma(cfg))
        self.scale = math.sqrt(cfg["hidden_size"]) if is_gemma(cfg) else 1.0

    def forward(self, ids):
        x = self.embed_tokens(ids) * self.scale
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.model = LlamaModel(cfg)
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        if cfg.get("tie_word_embeddings", False):
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, ids):
        """ids [B, T] -> logits [B, T, V]."""
        return self.lm_head(self.model(ids))


# --- Meta's layout, for the rotate_half equivalence check --------------------------------------

def permute(w, n_heads):
    """transformers' convert_llama_weights_to_hf.py: Meta's q/k weight [d, d] (rows of each head
    in interleaved pairs) -> the rotate_half layout of a Hugging Face checkpoint."""
    dim1, dim2 = w.shape
    return w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)


def meta_attention_scores(x, wq, wk, n_heads, theta):
    """Meta's llama/model.py attention scores q.k/sqrt(dh) [H, T, T] of x [T, d] with Meta-layout
    weights: RoPE on adjacent pairs (2i, 2i+1) as complex numbers (precompute_freqs_cis,
    apply_rotary_emb). No mask, no softmax: the scores are what the rotation changes."""
    T, d = x.shape
    dh = d // n_heads
    freqs = 1.0 / (theta ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
    angles = torch.outer(torch.arange(T, dtype=torch.float64), freqs)
    cis = torch.polar(torch.ones_like(angles), angles)  # [T, dh/2]
    q = (x @ wq.T).view(T, n_heads, dh // 2, 2)
    k = (x @ wk.T).view(T, n_heads, dh // 2, 2)
    q = torch.view_as_real(torch.view_as_complex(q.contiguous()) * cis[:, None, :]).reshape(T, n_heads, dh)
    k = torch.view_as_real(torch.view_as_complex(k.contiguous()) * cis[:, None, :]).reshape(T, n_heads, dh)
    return torch.einsum("thd,shd->hts", q, k) / math.sqrt(dh)


def hf_attention_scores(x, wq, wk, n_heads, theta):
    """The same scores with Hugging Face (rotate_half) weights and rotation."""
    T, d = x.shape
    dh = d // n_heads
    rot = LlamaRotaryEmbedding(dh, theta)
    cos, sin = rot(torch.arange(T), x.dtype)
    q = (x @ wq.T).view(T, n_heads, dh).transpose(0, 1)
    k = (x @ wk.T).view(T, n_heads, dh).transpose(0, 1)
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    return (q @ k.transpose(-1, -2)) / math.sqrt(dh)
