"""T5 (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a Unified Text-to-Text
Transformer") and its successors T5 v1.1, mT5 (Xue et al. 2021) and Flan-T5 (Chung et al. 2022)
in plain PyTorch, written from the papers and the published model description (Mesh TensorFlow's
transformer, the T5 model docs). Module and parameter names are those of a Hugging Face
T5ForConditionalGeneration checkpoint, so a state_dict of this model has exactly its names:

  shared.weight                                    [V, d]   one embedding for both stacks
  {encoder,decoder}.block.N.layer.0.SelfAttention.{q,k,v}.weight   [H * d_kv, d]
  {encoder,decoder}.block.N.layer.0.SelfAttention.o.weight         [d, H * d_kv]
  {encoder,decoder}.block.0.layer.0.SelfAttention.relative_attention_bias.weight  [buckets, H]
                                                   block 0 only: computed once, every layer adds it
  {encoder,decoder}.block.N.layer.0.layer_norm.weight              [d]
  decoder.block.N.layer.1.EncDecAttention.{q,k,v,o}.weight, layer.1.layer_norm.weight
  {enc: layer.1, dec: layer.2}.DenseReluDense.{wi,wo}.weight        (feed_forward_proj "relu")
                                  DenseReluDense.{wi_0,wi_1,wo}    ("gated-gelu": v1.1 / mT5 / Flan)
  {encoder,decoder}.final_layer_norm.weight        [d]
  lm_head.weight                                   [V, d]   its own table unless tied (v1.0)

The network, as T5 defines it (no biases anywhere, no absolute positions, no embedding scale):
  layer norm: T5's RMS norm, x / sqrt(mean(x^2) + eps) * weight (no mean, no bias);
  pre-norm residual blocks, a final norm per stack: x += Sub(norm(x)); out = final_norm(x);
  attention logits q . k + b[bucket(j - i)][h] + mask, NOT divided by sqrt(d_kv) (T5's
    initialization absorbs the factor); the bias table of block 0 of a stack serves all its
    layers: bidirectional buckets in the encoder, unidirectional (only looking back) in the
    decoder's self-attention, none in cross-attention;
  FFN: relu: wo(relu(wi x)); gated-gelu: wo(gelu_tanh(wi_0 x) * wi_1 x) (gelu_new, the tanh form);
  output: tied (v1.0): logits = (h * d_model^-0.5) shared^T; untied (v1.1): logits = h lm_head^T.

d_kv * num_heads may differ from d_model (T5 v1.1 small: 6 heads of 64 with d_model 512).
Decoding starts from decoder_start_token_id = pad (0); EOS is 1. The bucket function and the
RMS norm are tern_torch's (t5_relative_position_bucket, RMSNorm).

The transformers package is not used (nor installed here).
"""

import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tern_torch import RMSNorm, t5_relative_position_bucket  # noqa: E402

# T5Config's defaults for the keys a config.json may leave out.
DEFAULTS = {
    "vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6,
    "num_decoder_layers": None, "num_heads": 8, "relative_attention_num_buckets": 32,
    "relative_attention_max_distance": 128, "layer_norm_epsilon": 1e-6,
    "feed_forward_proj": "relu", "tie_word_embeddings": True, "pad_token_id": 0, "eos_token_id": 1,
}


def config_value(cfg, key):
    v = cfg.get(key)
    return DEFAULTS[key] if v is None else v


def gelu_new(x):
    """The tanh approximation of GELU (Hendrycks & Gimpel 2016), T5 v1.1's gate."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class T5Attention(nn.Module):
    def __init__(self, cfg, has_relative_attention_bias):
        super().__init__()
        d, self.heads, self.d_kv = config_value(cfg, "d_model"), config_value(cfg, "num_heads"), config_value(cfg, "d_kv")
        inner = self.heads * self.d_kv
        self.q = nn.Linear(d, inner, bias=False)
        self.k = nn.Linear(d, inner, bias=False)
        self.v = nn.Linear(d, inner, bias=False)
        self.o = nn.Linear(inner, d, bias=False)
        self.buckets = config_value(cfg, "relative_attention_num_buckets")
        self.max_distance = config_value(cfg, "relative_attention_max_distance")
        if has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(self.buckets, self.heads)

    def compute_bias(self, q_len, k_len, bidirectional):
        """[1, H, q_len, k_len]: the bias of query i (position i) for key j (position j)."""
        rel = torch.arange(k_len)[None, :] - torch.arange(q_len)[:, None]
        buckets = t5_relative_position_bucket(rel, bidirectional, self.buckets, self.max_distance)
        return self.relative_attention_bias(buckets).permute(2, 0, 1)[None]

    def forward(self, x, kv, mask, position_bias):
        B, Tq, _ = x.shape

        def split(t):
            return t.view(B, -1, self.heads, self.d_kv).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(kv)), split(self.v(kv))
        scores = q @ k.transpose(-1, -2) + mask  # no 1/sqrt(d_kv)
        if position_bias is not None:
            scores = scores + position_bias
        out = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, Tq, self.heads * self.d_kv)
        return self.o(out)


class T5LayerSelfAttention(nn.Module):
    def __init__(self, cfg, has_relative_attention_bias):
        super().__init__()
        self.SelfAttention = T5Attention(cfg, has_relative_attention_bias)
        self.layer_norm = RMSNorm(config_value(cfg, "d_model"), config_value(cfg, "layer_norm_epsilon"))

    def forward(self, x, mask, position_bias):
        return x + self.SelfAttention(self.layer_norm(x), self.layer_norm(x), mask, position_bias)


class T5LayerCrossAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.EncDecAttention = T5Attention(cfg, False)
        self.layer_norm = RMSNorm(config_value(cfg, "d_model"), config_value(cfg, "layer_norm_epsilon"))

    def forward(self, x, enc, mask):
        return x + self.EncDecAttention(self.layer_norm(x), enc, mask, None)


class DenseReluDense(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, ff = config_value(cfg, "d_model"), config_value(cfg, "d_ff")
        self.gated = config_value(cfg, "feed_forward_proj") == "gated-gelu"
        if self.gated:
            self.wi_0 = nn.Linear(d, ff, bias=False)
            self.wi_1 = nn.Linear(d, ff, bias=False)
        else:
            assert config_value(cfg, "feed_forward_proj") == "relu"
            self.wi = nn.Linear(d, ff, bias=False)
        self.wo = nn.Linear(ff, d, bias=False)

    def forward(self, x):
        if self.gated:
            return self.wo(gelu_new(self.wi_0(x)) * self.wi_1(x))
        return self.wo(F.relu(self.wi(x)))


class T5LayerFF(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.DenseReluDense = DenseReluDense(cfg)
        self.layer_norm = RMSNorm(config_value(cfg, "d_model"), config_value(cfg, "layer_norm_epsilon"))

    def forward(self, x):
        return x + self.DenseReluDense(self.layer_norm(x))


class T5Block(nn.Module):
    def __init__(self, cfg, decoder, has_relative_attention_bias):
        super().__init__()
        self.layer = nn.ModuleList([T5LayerSelfAttention(cfg, has_relative_attention_bias)])
        if decoder:
            self.layer.append(T5LayerCrossAttention(cfg))
        self.layer.append(T5LayerFF(cfg))

    def forward(self, x, mask, position_bias, enc=None, cross_mask=None):
        x = self.layer[0](x, mask, position_bias)
        if enc is not None:
            x = self.layer[1](x, enc, cross_mask)
        return self.layer[-1](x)


class T5Stack(nn.Module):
    def __init__(self, cfg, decoder, embed_tokens):
        super().__init__()
        n = config_value(cfg, "num_layers")
        if decoder and cfg.get("num_decoder_layers") is not None:
            n = cfg["num_decoder_layers"]
        self.decoder = decoder
        self.embed_tokens = embed_tokens
        self.block = nn.ModuleList([T5Block(cfg, decoder, i == 0) for i in range(n)])
        self.final_layer_norm = RMSNorm(config_value(cfg, "d_model"), config_value(cfg, "layer_norm_epsilon"))

    def forward(self, ids, mask, enc=None, cross_mask=None):
        x = self.embed_tokens(ids)
        T = ids.shape[1]
        # Layer 0's bias, shared by every layer of the stack.
        bias = self.block[0].layer[0].SelfAttention.compute_bias(T, T, bidirectional=not self.decoder)
        for block in self.block:
            x = block(x, mask, bias, enc, cross_mask)
        return self.final_layer_norm(x)


class T5ForConditionalGeneration(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d, vocab = config_value(cfg, "d_model"), config_value(cfg, "vocab_size")
        self.shared = nn.Embedding(vocab, d)
        self.encoder = T5Stack(cfg, False, self.shared)
        self.decoder = T5Stack(cfg, True, self.shared)
        self.tied = config_value(cfg, "tie_word_embeddings")
        self.lm_head = nn.Linear(d, vocab, bias=False)
        if self.tied:
            self.lm_head.weight = self.shared.weight
        self.pad = config_value(cfg, "pad_token_id")

    def key_mask(self, src):
        m = torch.zeros(src.shape, dtype=self.shared.weight.dtype)
        m[src == self.pad] = float("-inf")
        return m[:, None, None, :]

    def encode(self, src):
        return self.encoder(src, self.key_mask(src))

    def decode(self, enc, src, tgt):
        """Teacher-forced logits [B, T, V] for decoder input tgt (starting with the start id)."""
        T = tgt.shape[1]
        causal = torch.triu(torch.full((T, T), float("-inf"), dtype=enc.dtype), diagonal=1)
        h = self.decoder(tgt, causal, enc, self.key_mask(src))
        if self.tied:
            h = h * config_value(self.cfg, "d_model") ** -0.5  # the rescale before the tied output
        return self.lm_head(h)
