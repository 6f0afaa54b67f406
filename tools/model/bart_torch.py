"""BART (Lewis et al. 2019, "BART: Denoising Sequence-to-Sequence Pre-training for Natural
Language Generation, Translation, and Comprehension") and mBART (Liu et al. 2020, "Multilingual
Denoising Pre-training for Neural Machine Translation"; mBART-50: Tang et al. 2020) in plain
PyTorch, written from the papers and the Hugging Face model documentation, with the parameter
names of a Hugging Face BartForConditionalGeneration / MBartForConditionalGeneration checkpoint,
so that this module's state_dict is such a checkpoint:

  model.shared.weight                          [V, d]  token embeddings of both stacks
  model.{encoder,decoder}.embed_tokens.weight          the same table (tied)
  model.{encoder,decoder}.embed_positions.weight  [max_position_embeddings + 2, d]
      learned positions with an offset of 2 (fairseq's padding offset): position p uses row p + 2
  model.{encoder,decoder}.layernorm_embedding.{weight,bias}
      LayerNorm(embed * scale + positions), before the first layer
  model.encoder.layers.N.{self_attn.{q,k,v,out}_proj, self_attn_layer_norm, fc1, fc2,
                          final_layer_norm}
  model.decoder.layers.N.{self_attn, self_attn_layer_norm, encoder_attn, encoder_attn_layer_norm,
                          fc1, fc2, final_layer_norm}
  model.{encoder,decoder}.layer_norm           mBART only: the final norm of each pre-LN stack
  lm_head.weight                               tied to model.shared.weight
  final_logits_bias                            [1, V], added to the logits

The two networks:
  BART   post-LN: x = LN(x + SubLayer(x)); embeddings not scaled (scale_embedding false).
  mBART  pre-LN:  x = x + SubLayer(LN(x)), then the stack's final layer_norm; embeddings scaled
         by sqrt(d_model) (scale_embedding true).
Both: attention softmax(q k^T / sqrt(d_head)) with biased projections, FFN fc2(gelu(fc1 x)) with
the exact (erf) GELU, LayerNorm eps 1e-5, logits = h lm_head^T + final_logits_bias. Decoding
starts from decoder_start_token_id (</s>, id 2); mBART-50 then forces the target language code
as the first generated token (forced_bos_token_id), which `greedy` takes as `forced_bos`.

The transformers package is not used (nor installed here); the attention core is tern_torch's.
"""

import math
from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

import tern_torch

POSITION_OFFSET = 2  # BartLearnedPositionalEmbedding's offset: position p is row p + 2


def _activation(name: str):
    if name == "gelu":
        return F.gelu  # exact erf form
    if name == "relu":
        return F.relu
    raise ValueError(f"activation_function {name!r} not modelled here")


class Attention(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.q_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)

    def forward(self, x, kv, mask):
        B, Tq, d = x.shape
        split = lambda t: t.view(B, -1, self.heads, d // self.heads).transpose(1, 2)
        out, _ = tern_torch.attention(split(self.q_proj(x)), split(self.k_proj(kv)),
                                      split(self.v_proj(kv)), mask)
        return self.out_proj(out.transpose(1, 2).reshape(B, Tq, d))


class Layer(nn.Module):
    def __init__(self, cfg: dict, cross: bool):
        super().__init__()
        d, heads = cfg["d_model"], cfg["encoder_attention_heads"]
        self.pre = cfg.get("normalize_before", False)
        self.act = _activation(cfg.get("activation_function", "gelu"))
        self.self_attn = Attention(d, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d)
        if cross:
            self.encoder_attn = Attention(d, heads)
            self.encoder_attn_layer_norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, cfg["encoder_ffn_dim"])
        self.fc2 = nn.Linear(cfg["encoder_ffn_dim"], d)
        self.final_layer_norm = nn.LayerNorm(d)

    def residual(self, x, sublayer, norm):
        return x + sublayer(norm(x)) if self.pre else norm(x + sublayer(x))

    def forward(self, x, mask, enc=None, cross_mask=None):
        x = self.residual(x, lambda h: self.self_attn(h, h, mask), self.self_attn_layer_norm)
        if enc is not None:
            x = self.residual(x, lambda h: self.encoder_attn(h, enc, cross_mask),
                              self.encoder_attn_layer_norm)
        return self.residual(x, lambda h: self.fc2(self.act(self.fc1(h))), self.final_layer_norm)


class Stack(nn.Module):
    def __init__(self, cfg: dict, shared: nn.Embedding, cross: bool, layers: int):
        super().__init__()
        d = cfg["d_model"]
        object.__setattr__(self, "_shared", shared)  # tied: registered once, as model.shared
        self.scale = math.sqrt(d) if cfg.get("scale_embedding", False) else 1.0
        self.embed_positions = nn.Embedding(cfg["max_position_embeddings"] + POSITION_OFFSET, d)
        self.layers = nn.ModuleList([Layer(cfg, cross) for _ in range(layers)])
        self.layernorm_embedding = nn.LayerNorm(d)
        if cfg.get("normalize_before", False):
            self.layer_norm = nn.LayerNorm(d)

    def forward(self, ids, mask, enc=None, cross_mask=None):
        positions = torch.arange(ids.shape[1]) + POSITION_OFFSET
        x = self._shared(ids) * self.scale + self.embed_positions(positions)
        x = self.layernorm_embedding(x)
        for layer in self.layers:
            x = layer(x, mask, enc, cross_mask)
        return self.layer_norm(x) if "layer_norm" in self._modules else x


class Seq2Seq(nn.Module):
    """model.* and final_logits_bias; the state_dict has the checkpoint's names (the tied
    copies model.{encoder,decoder}.embed_tokens.weight and lm_head.weight are added by
    `state_dict_with_tied`)."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.cfg = cfg
        self.model = nn.Module()
        self.model.shared = nn.Embedding(cfg["vocab_size"], cfg["d_model"])
        self.model.encoder = Stack(cfg, self.model.shared, False, cfg["encoder_layers"])
        self.model.decoder = Stack(cfg, self.model.shared, True, cfg["decoder_layers"])
        self.register_buffer("final_logits_bias", torch.zeros(1, cfg["vocab_size"]))

    def state_dict_with_tied(self):
        sd = dict(self.state_dict())
        for name in ("model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight",
                     "lm_head.weight"):
            sd[name] = sd["model.shared.weight"]
        return sd

    def key_mask(self, src):
        m = torch.zeros(src.shape, dtype=self.model.shared.weight.dtype)
        m[src == self.cfg["pad_token_id"]] = float("-inf")
        return m[:, None, None, :]

    def encode(self, src):
        return self.model.encoder(src, self.key_mask(src))

    def decode(self, enc, src, tgt):
        T = tgt.shape[1]
        causal = torch.triu(torch.full((T, T), float("-inf"), dtype=enc.dtype), diagonal=1)
        h = self.model.decoder(tgt, causal, enc, self.key_mask(src))
        return F.linear(h, self.model.shared.weight) + self.final_logits_bias

    @torch.no_grad()
    def greedy(self, src, max_len: int, forced_bos: Optional[int] = None) -> List[int]:
        """One sentence [1, S]: decoding from decoder_start_token_id, the first token forced to
        `forced_bos` when given (it is then part of the output), argmax (lowest id on ties)
        until EOS; the ids exclude the start token and EOS."""
        enc = self.encode(src)
        toks, out = [self.cfg["decoder_start_token_id"]], []
        for step in range(max_len):
            logits = self.decode(enc, src, torch.tensor([toks]))[0, -1]
            t = forced_bos if step == 0 and forced_bos is not None else int(
                tern_torch.argmax_lowest(logits))
            if t == self.cfg["eos_token_id"]:
                break
            out.append(t)
            toks.append(t)
        return out
