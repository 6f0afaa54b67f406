"""OpenNMT-py's Transformer (Klein et al. 2017, "OpenNMT: Open-Source Toolkit for Neural Machine
Translation"; the model of Vaswani et al. 2017 in its pre-LN form) in plain PyTorch: written from
OpenNMT-py's documentation (the options of docs/source/options/train.md, the FAQ on v2 -> v3
checkpoints) and the papers, with the module names of OpenNMT-py 3.x's NMTModel, so that a
state_dict of this model has exactly the names of such a checkpoint's "model" and "generator":

  encoder.embeddings.make_embedding.emb_luts.0.weight  [V_src, d]
  encoder.embeddings.make_embedding.pe.pe              [max_len, 1, d] sinusoids (a buffer)
  encoder.transformer.N.self_attn.{linear_keys,linear_values,linear_query,final_linear}.*
  encoder.transformer.N.self_attn.relative_positions_embeddings.weight  [2k+1, d_head] (Shaw)
  encoder.transformer.N.layer_norm.*                   before self-attention
  encoder.transformer.N.feed_forward.{w_1,w_2,w_3,layer_norm}.*         (w_3: gated activations)
  encoder.layer_norm.*
  decoder.embeddings.make_embedding.{emb_luts.0.weight, pe.pe}
  decoder.transformer_layers.N.{self_attn, context_attn, layer_norm_1, layer_norm_2,
                                feed_forward}.*
  decoder.layer_norm.*
  generator.{weight,bias}                              (its own dict in the checkpoint)

The math (option names are OpenNMT-py's):
  x_0 = E[ids] * sqrt(d) + PE[pos]      with position_encoding (positions from 0); without it
                                        x_0 = E[ids] (no scaling: OpenNMT-py scales inside its
                                        PositionalEncoding module only)
  encoder layer: x = x + final_linear(attn(layer_norm(x)))
                 x = x + w_2(act(w_1(n)) [* w_3(n)]), n = feed_forward.layer_norm(x)
  decoder layer: x = x + self_attn(layer_norm_1(x)) (causal)
                 x = x + context_attn(layer_norm_2(x), encoder output)
                 then the feed-forward block as above
  each stack ends with its layer_norm; logits = generator(decoder output)
Attention scales q by d_head^-0.5. max_relative_positions = k > 0: Shaw et al.'s relative
positions in every self-attention (encoder and decoder, not the context attention), one table
for keys and values: e_ij = q_i . (k_j + R[r_ij]) / sqrt(d_head), z_i = sum_j a_ij (v_j +
R[r_ij]), r_ij = clip(j - i, -k, k) + k. num_kv: grouped-query attention (K/V heads). LayerNorm
("standard") or RMSNorm ("rms"), eps norm_eps. Sources carry no </s>; the decoder starts from
<s> (decoder_start_token) and stops at </s>.

OpenNMT-py is not used (nor installed here).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu,
               "fast_gelu": lambda x: F.gelu(x, approximate="tanh"),
               "gated-silu": F.silu}
GATED = {"gated-silu"}


def sinusoids(max_len, d, layout="SinusoidalInterleaved", dtype=torch.float64):
    """[max_len, d]: interleaved sin(p w_i) at 2i, cos(p w_i) at 2i + 1, w_i = 10000^(-2i/d)."""
    assert layout == "SinusoidalInterleaved"
    pos = torch.arange(max_len, dtype=dtype)[:, None]
    w = torch.exp(torch.arange(0, d, 2, dtype=dtype) * -(math.log(10000.0) / d))
    pe = torch.zeros(max_len, d, dtype=dtype)
    pe[:, 0::2] = torch.sin(pos * w)
    pe[:, 1::2] = torch.cos(pos * w)
    return pe


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def norm(opt, d):
    eps = getattr(opt, "norm_eps", 1e-6)
    return RMSNorm(d, eps) if getattr(opt, "layer_norm", "standard") == "rms" else nn.LayerNorm(d, eps=eps)


class PositionalEncoding(nn.Module):
    def __init__(self, d, max_len):
        super().__init__()
        self.register_buffer("pe", sinusoids(max_len, d).unsqueeze(1))  # [max_len, 1, d]


class Elementwise(nn.ModuleList):
    pass


class Embeddings(nn.Module):
    def __init__(self, opt, vocab, d, max_len):
        super().__init__()
        self.position_encoding = opt.position_encoding
        self.d = d
        self.make_embedding = nn.Sequential()
        self.make_embedding.add_module("emb_luts", Elementwise([nn.Embedding(vocab, d)]))
        if self.position_encoding:
            self.make_embedding.add_module("pe", PositionalEncoding(d, max_len))

    def forward(self, ids):
        x = self.make_embedding.emb_luts[0](ids)
        if self.position_encoding:
            pe = sinusoids(ids.shape[1], self.d, dtype=x.dtype)
            x = x * math.sqrt(self.d) + pe[None]
        return x


class MultiHeadedAttention(nn.Module):
    def __init__(self, opt, d, relative):
        super().__init__()
        self.heads = opt.heads
        self.dh = d // opt.heads
        self.kv = getattr(opt, "num_kv", 0) or opt.heads
        bias = getattr(opt, "add_qkvbias", False)
        self.linear_keys = nn.Linear(d, self.kv * self.dh, bias=bias)
        self.linear_values = nn.Linear(d, self.kv * self.dh, bias=bias)
        self.linear_query = nn.Linear(d, d, bias=bias)
        self.final_linear = nn.Linear(d, d, bias=bias)
        self.k = opt.max_relative_positions if relative else 0
        if self.k > 0:
            self.relative_positions_embeddings = nn.Embedding(2 * self.k + 1, self.dh)

    def forward(self, q_in, kv_in, mask):
        B, Tq, _ = q_in.shape
        Tk = kv_in.shape[1]
        q = self.linear_query(q_in).view(B, Tq, self.heads, self.dh).transpose(1, 2) / math.sqrt(self.dh)
        k = self.linear_keys(kv_in).view(B, Tk, self.kv, self.dh).transpose(1, 2)
        v = self.linear_values(kv_in).view(B, Tk, self.kv, self.dh).transpose(1, 2)
        rep = self.heads // self.kv
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        scores = q @ k.transpose(-1, -2)
        if self.k > 0:
            # Queries are positions Tk - Tq .. Tk - 1 (all of them when teacher-forced).
            qi = torch.arange(Tk - Tq, Tk)[:, None]
            kj = torch.arange(Tk)[None, :]
            R = self.relative_positions_embeddings((kj - qi).clamp(-self.k, self.k) + self.k)
            scores = scores + torch.einsum("bhqd,qkd->bhqk", q, R)
        a = torch.softmax(scores + mask, dim=-1)
        out = a @ v
        if self.k > 0:
            out = out + torch.einsum("bhqk,qkd->bhqd", a, R)
        return self.final_linear(out.transpose(1, 2).reshape(B, Tq, -1))


class PositionwiseFeedForward(nn.Module):
    def __init__(self, opt, d):
        super().__init__()
        bias = getattr(opt, "add_ffnbias", False)
        act = getattr(opt, "pos_ffn_activation_fn", "relu")
        self.act = ACTIVATIONS[act]
        self.w_1 = nn.Linear(d, opt.transformer_ff, bias=bias)
        self.w_2 = nn.Linear(opt.transformer_ff, d, bias=bias)
        if act in GATED:
            self.w_3 = nn.Linear(d, opt.transformer_ff, bias=bias)
        self.layer_norm = norm(opt, d)

    def forward(self, x):
        n = self.layer_norm(x)
        h = self.act(self.w_1(n))
        if hasattr(self, "w_3"):
            h = h * self.w_3(n)
        return x + self.w_2(h)


class EncoderLayer(nn.Module):
    def __init__(self, opt, d):
        super().__init__()
        self.self_attn = MultiHeadedAttention(opt, d, True)
        self.feed_forward = PositionwiseFeedForward(opt, d)
        self.layer_norm = norm(opt, d)

    def forward(self, x, mask):
        n = self.layer_norm(x)
        return self.feed_forward(x + self.self_attn(n, n, mask))


class DecoderLayer(nn.Module):
    def __init__(self, opt, d):
        super().__init__()
        self.self_attn = MultiHeadedAttention(opt, d, True)
        self.context_attn = MultiHeadedAttention(opt, d, False)
        self.feed_forward = PositionwiseFeedForward(opt, d)
        self.layer_norm_1 = norm(opt, d)
        self.layer_norm_2 = norm(opt, d)

    def forward(self, x, mask, enc, cross):
        n = self.layer_norm_1(x)
        x = x + self.self_attn(n, n, mask)
        x = x + self.context_attn(self.layer_norm_2(x), enc, cross)
        return self.feed_forward(x)


class Encoder(nn.Module):
    def __init__(self, opt, vocab, d, max_len):
        super().__init__()
        self.embeddings = Embeddings(opt, vocab, d, max_len)
        self.transformer = nn.ModuleList(EncoderLayer(opt, d) for _ in range(opt.enc_layers))
        self.layer_norm = norm(opt, d)


class Decoder(nn.Module):
    def __init__(self, opt, vocab, d, max_len):
        super().__init__()
        self.embeddings = Embeddings(opt, vocab, d, max_len)
        self.transformer_layers = nn.ModuleList(DecoderLayer(opt, d) for _ in range(opt.dec_layers))
        self.layer_norm = norm(opt, d)


class NMTModel(nn.Module):
    """opt: an argparse.Namespace with OpenNMT-py's option names. state_dict(): the checkpoint's
    "model" entry; generator.state_dict(): its "generator" entry (OpenNMT-py saves them apart)."""

    def __init__(self, opt, src_vocab, tgt_vocab, pad, bos, eos, max_len=5000):
        super().__init__()
        d = opt.hidden_size
        self.encoder = Encoder(opt, src_vocab, d, max_len)
        self.decoder = Decoder(opt, tgt_vocab, d, max_len)
        if opt.share_embeddings:
            self.decoder.embeddings.make_embedding.emb_luts[0].weight = \
                self.encoder.embeddings.make_embedding.emb_luts[0].weight
        self.generator = nn.Linear(d, tgt_vocab)
        if opt.share_decoder_embeddings:
            self.generator.weight = self.decoder.embeddings.make_embedding.emb_luts[0].weight
        self.pad, self.bos, self.eos = pad, bos, eos

    def model_state_dict(self):
        return {k: v for k, v in self.state_dict().items() if not k.startswith("generator.")}

    def key_mask(self, src):
        m = torch.zeros(src.shape, dtype=self.generator.weight.dtype)
        m[src == self.pad] = float("-inf")
        return m[:, None, None, :]

    def encode(self, src):
        x, mask = self.encoder.embeddings(src), self.key_mask(src)
        for layer in self.encoder.transformer:
            x = layer(x, mask)
        return self.encoder.layer_norm(x)

    def decode(self, enc, src, tgt):
        T = tgt.shape[1]
        x = self.decoder.embeddings(tgt)
        causal = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), diagonal=1)
        cross = self.key_mask(src)
        for layer in self.decoder.transformer_layers:
            x = layer(x, causal, enc, cross)
        return self.generator(self.decoder.layer_norm(x))

    def greedy(self, src, max_len):
        """One sentence [1, S]: from <s>, argmax (lowest id on ties) until </s> or max_len
        tokens. Returns (ids without <s> and </s>, smallest top1-top2 gap)."""
        enc = self.encode(src)
        toks, out, margin = [self.bos], [], float("inf")
        for _ in range(max_len):
            lg = self.decode(enc, src, torch.tensor([toks]))[0, -1]
            top = torch.topk(lg, 2).values
            margin = min(margin, float(top[0] - top[1]))
            t = int(torch.nonzero(lg == lg.max())[0])
            if t == self.eos:
                break
            out.append(t)
            toks.append(t)
        return out, margin
