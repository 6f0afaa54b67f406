"""M2M100 (Fan et al. 2020, "Beyond English-Centric Multilingual Machine Translation") and
NLLB-200 (NLLB Team 2022, "No Language Left Behind"), the dense models, in plain PyTorch: written
from the papers, fairseq's transformer as they describe it, and the Hugging Face model docs, with
the module and parameter names of transformers' M2M100ForConditionalGeneration, so a state_dict
of this model has exactly the names of such a checkpoint:

  x_0 = E[tokens] * sqrt(d_model) (scale_embedding) + P[positions]   (model.shared = E)
  encoder layer (pre-LN): x = x + out_proj(attn(self_attn_layer_norm(x)))
                          x = x + fc2(relu(fc1(final_layer_norm(x))))
  decoder layer:          the same with encoder_attn / encoder_attn_layer_norm between them
  each stack ends with its layer_norm; logits = decoder_out E^T (lm_head tied to model.shared)

Positions are fairseq's sinusoidal table (SinusoidalPositionalEmbedding): row p holds
sin(p w_i) for i < d/2, then cos(p w_i), w_i = 10000^(-i/(d/2-1)); the padding row is zero.
Positions are counted fairseq's way (utils.make_positions): the t-th non-pad token of a sequence
is at padding_idx + 1 + t, a pad at padding_idx. Attention scales q by d_head^-0.5 (biases
included); LayerNorm eps 1e-5.

Multilingual use: the source is [src_lang_code] tokens </s> (NLLB, non-legacy) or __xx__ tokens
</s> (M2M100); the decoder starts from decoder_start_token_id (</s>) and its first generated
token is forced to the target language code (generate's forced_bos_token_id).

The transformers package is not used (nor installed here).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def fairseq_sinusoids(n_pos, d, padding_idx=None, dtype=torch.float64):
    """fairseq's SinusoidalPositionalEmbedding.get_embedding: [n_pos, d]."""
    half = d // 2
    step = math.log(10000.0) / (half - 1)
    freq = torch.exp(torch.arange(half, dtype=dtype) * -step)
    angle = torch.arange(n_pos, dtype=dtype)[:, None] * freq[None, :]
    table = torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)
    if d % 2:
        table = torch.cat([table, torch.zeros(n_pos, 1, dtype=dtype)], dim=1)
    if padding_idx is not None:
        table[padding_idx] = 0
    return table


def make_positions(ids, padding_idx):
    """fairseq's utils.make_positions: padding_idx + 1 + t for the t-th non-pad token."""
    mask = ids.ne(padding_idx).long()
    return torch.cumsum(mask, dim=1) * mask + padding_idx


ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "swish": F.silu, "silu": F.silu}


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.k_proj, self.v_proj, self.q_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x, kv, mask):
        B, Tq, D = x.shape
        dh = D // self.heads
        q = self.q_proj(x) * dh ** -0.5
        k, v = self.k_proj(kv), self.v_proj(kv)
        q, k, v = (t.view(B, -1, self.heads, dh).transpose(1, 2) for t in (q, k, v))
        out = torch.softmax(q @ k.transpose(-1, -2) + mask, dim=-1) @ v
        return self.out_proj(out.transpose(1, 2).reshape(B, Tq, D))


class EncoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, ffn = cfg["d_model"], cfg["encoder_ffn_dim"]
        self.self_attn = Attention(d, cfg["encoder_attention_heads"])
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.final_layer_norm = nn.LayerNorm(d)
        self.act = ACTIVATIONS[cfg.get("activation_function", "relu")]

    def forward(self, x, mask):
        h = self.self_attn_layer_norm(x)
        x = x + self.self_attn(h, h, mask)
        return x + self.fc2(self.act(self.fc1(self.final_layer_norm(x))))


class DecoderLayer(EncoderLayer):
    def __init__(self, cfg):
        super().__init__(cfg)
        d = cfg["d_model"]
        self.encoder_attn = Attention(d, cfg["decoder_attention_heads"])
        self.encoder_attn_layer_norm = nn.LayerNorm(d)

    def forward(self, x, mask, enc, cross_mask):
        h = self.self_attn_layer_norm(x)
        x = x + self.self_attn(h, h, mask)
        x = x + self.encoder_attn(self.encoder_attn_layer_norm(x), enc, cross_mask)
        return x + self.fc2(self.act(self.fc1(self.final_layer_norm(x))))


class Stack(nn.Module):
    def __init__(self, cfg, layer, n):
        super().__init__()
        self.layers = nn.ModuleList(layer(cfg) for _ in range(n))
        self.layer_norm = nn.LayerNorm(cfg["d_model"])


class Seq2Seq(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.shared = nn.Embedding(cfg["vocab_size"], cfg["d_model"])
        self.encoder = Stack(cfg, EncoderLayer, cfg["encoder_layers"])
        self.decoder = Stack(cfg, DecoderLayer, cfg["decoder_layers"])


class M2M100(nn.Module):
    """state_dict names: model.shared.weight, model.encoder.layers.N.*, model.encoder.layer_norm.*,
    model.decoder.*, lm_head.weight (the same Parameter as model.shared.weight unless
    tie_word_embeddings is false)."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.model = Seq2Seq(cfg)
        self.lm_head = nn.Linear(cfg["d_model"], cfg["vocab_size"], bias=False)
        if cfg.get("tie_word_embeddings", True):
            self.lm_head.weight = self.model.shared.weight
        self.pad = cfg.get("pad_token_id", 1)
        self.scale = math.sqrt(cfg["d_model"]) if cfg.get("scale_embedding", True) else 1.0

    def embed(self, ids):
        table = fairseq_sinusoids(int(ids.shape[1]) + self.pad + 1, self.cfg["d_model"], self.pad,
                                  self.model.shared.weight.dtype)
        return self.model.shared(ids) * self.scale + table[make_positions(ids, self.pad)]

    def key_mask(self, src):
        m = torch.zeros(src.shape, dtype=self.model.shared.weight.dtype)
        m[src == self.pad] = float("-inf")
        return m[:, None, None, :]

    def encode(self, src):
        x, mask = self.embed(src), self.key_mask(src)
        for layer in self.model.encoder.layers:
            x = layer(x, mask)
        return self.model.encoder.layer_norm(x)

    def decode(self, enc, src, tgt):
        T = tgt.shape[1]
        x = self.embed(tgt)
        causal = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), diagonal=1)
        cross = self.key_mask(src)
        for layer in self.model.decoder.layers:
            x = layer(x, causal, enc, cross)
        return self.lm_head(self.model.decoder.layer_norm(x))

    def greedy(self, src, forced_bos, max_len):
        """One sentence [1, S]: the decoder starts from decoder_start_token_id, its first token is
        forced_bos (not returned), then argmax (lowest id on ties) until EOS or max_len tokens.
        Returns (ids without start, forced token and EOS; smallest top1-top2 gap of the free
        steps)."""
        start = self.cfg.get("decoder_start_token_id", 2)
        eos = self.cfg.get("eos_token_id", 2)
        enc = self.encode(src)
        toks, out, margin = [start, forced_bos], [], float("inf")
        for _ in range(max_len):
            lg = self.decode(enc, src, torch.tensor([toks]))[0, -1]
            top = torch.topk(lg, 2).values
            margin = min(margin, float(top[0] - top[1]))
            t = int(torch.nonzero(lg == lg.max())[0])
            if t == eos:
                break
            out.append(t)
            toks.append(t)
        return out, margin
