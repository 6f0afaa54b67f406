"""fairseq's `transformer` translation model (Vaswani et al. 2017, "Attention Is All You Need";
fairseq's TransformerModel as its documentation and arch functions describe it: Ott et al.
2019), in plain PyTorch, with the module and parameter names of fairseq's state_dict:

  encoder.embed_tokens.weight, decoder.embed_tokens.weight (one Parameter with
    share_all_embeddings)
  {encoder,decoder}.embed_positions.weight      learned: max_positions + pad + 1 rows, the t-th
                                                non-pad token at row pad + 1 + t
  {encoder,decoder}.embed_positions._float_tensor  sinusoidal (a buffer; the table is computed)
  {encoder,decoder}.layernorm_embedding.*       with layernorm_embedding
  encoder.layers.N.{self_attn.{k,v,q,out}_proj, self_attn_layer_norm, fc1, fc2, final_layer_norm}
  decoder.layers.N.{self_attn, self_attn_layer_norm, encoder_attn, encoder_attn_layer_norm, fc1,
                    fc2, final_layer_norm}
  {encoder,decoder}.layer_norm.*                with *_normalize_before (the stack's final norm)
  decoder.output_projection.weight              [V, d] (the decoder's table when
                                                share_decoder_input_output_embed)
  {encoder,decoder}.version                     a buffer (tensor([3.]))

  x_0 = embed_scale * E[tokens] + P[positions] (embed_scale sqrt(d) unless no_scale_embedding),
  then layernorm_embedding; post-LN layers x = LN(x + f(x)) by default, pre-LN x = x + f(LN(x))
  with *_normalize_before. Attention scales q by d_head^-0.5 after its bias; LayerNorm eps 1e-5.
  Sinusoids: fairseq's SinusoidalPositionalEmbedding (the m2m100_torch table). Generation
  starts the decoder from </s> (eos, id 2), as fairseq's SequenceGenerator does when no bos is
  given. The fairseq package is not used (nor installed here).
"""

import math

import torch
import torch.nn as nn

from m2m100_torch import ACTIVATIONS, Attention, fairseq_sinusoids, make_positions


class Layer(nn.Module):
    def __init__(self, a, side, cross):
        super().__init__()
        d, ffn = a[side + "_embed_dim"], a[side + "_ffn_embed_dim"]
        self.pre = a[side + "_normalize_before"]
        self.self_attn = Attention(d, a[side + "_attention_heads"])
        self.self_attn_layer_norm = nn.LayerNorm(d)
        if cross:
            self.encoder_attn = Attention(d, a[side + "_attention_heads"])
            self.encoder_attn_layer_norm = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.final_layer_norm = nn.LayerNorm(d)
        self.act = ACTIVATIONS[a["activation_fn"]]

    def sub(self, x, norm, f):
        if self.pre:
            return x + f(norm(x))
        return norm(x + f(x))

    def forward(self, x, mask, enc=None, cross_mask=None):
        x = self.sub(x, self.self_attn_layer_norm, lambda h: self.self_attn(h, h, mask))
        if enc is not None:
            x = self.sub(x, self.encoder_attn_layer_norm,
                         lambda h: self.encoder_attn(h, enc, cross_mask))
        return self.sub(x, self.final_layer_norm, lambda h: self.fc2(self.act(self.fc1(h))))


class Stack(nn.Module):
    def __init__(self, a, side, vocab, embed):
        super().__init__()
        d = a[side + "_embed_dim"]
        self.a, self.side, self.pad = a, side, 1
        self.embed_tokens = embed if embed is not None else nn.Embedding(vocab, d, padding_idx=1)
        self.learned = a[side + "_learned_pos"]
        n_pos = a["max_source_positions" if side == "encoder" else "max_target_positions"]
        if self.learned:
            self.embed_positions = nn.Embedding(n_pos + self.pad + 1, d, padding_idx=self.pad)
        else:
            self.embed_positions = nn.Module()
            # fairseq keeps an uninitialized FloatTensor(1) here; zero, so the fixture is reproducible
            self.embed_positions.register_buffer("_float_tensor", torch.zeros(1))
        if a["layernorm_embedding"]:
            self.layernorm_embedding = nn.LayerNorm(d)
        self.layers = nn.ModuleList(Layer(a, side, side == "decoder")
                                    for _ in range(a[side + "_layers"]))
        if a[side + "_normalize_before"]:
            self.layer_norm = nn.LayerNorm(d)
        self.register_buffer("version", torch.Tensor([3]))
        self.scale = 1.0 if a["no_scale_embedding"] else math.sqrt(d)

    def embed(self, ids):
        pos = make_positions(ids, self.pad)
        x = self.scale * self.embed_tokens(ids)
        if self.learned:
            x = x + self.embed_positions(pos)
        else:
            table = fairseq_sinusoids(int(pos.max()) + 1, self.embed_tokens.weight.shape[1],
                                      self.pad, x.dtype)
            x = x + table[pos]
        if self.a["layernorm_embedding"]:
            x = self.layernorm_embedding(x)
        return x

    def finish(self, x):
        return self.layer_norm(x) if self.a[self.side + "_normalize_before"] else x


class FairseqTransformer(nn.Module):
    """a: fairseq's args as a dict (all keys the arch functions set); vocab sizes of the source
    and target dictionaries."""

    def __init__(self, a, src_vocab, tgt_vocab):
        super().__init__()
        self.a = a
        self.encoder = Stack(a, "encoder", src_vocab, None)
        shared = self.encoder.embed_tokens if a["share_all_embeddings"] else None
        self.decoder = Stack(a, "decoder", tgt_vocab, shared)
        d = a["decoder_embed_dim"]
        self.decoder.output_projection = nn.Linear(d, tgt_vocab, bias=False)
        if a["share_decoder_input_output_embed"] or a["share_all_embeddings"]:
            self.decoder.output_projection.weight = self.decoder.embed_tokens.weight

    @staticmethod
    def key_mask(src, dtype):
        m = torch.zeros(src.shape, dtype=dtype)
        m[src == 1] = float("-inf")
        return m[:, None, None, :]

    def encode(self, src):
        x = self.encoder.embed(src)
        mask = self.key_mask(src, x.dtype)
        for layer in self.encoder.layers:
            x = layer(x, mask)
        return self.encoder.finish(x)

    def decode(self, enc, src, tgt):
        T = tgt.shape[1]
        x = self.decoder.embed(tgt)
        causal = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), diagonal=1)
        cross = self.key_mask(src, x.dtype)
        for layer in self.decoder.layers:
            x = layer(x, causal, enc, cross)
        return self.decoder.output_projection(self.decoder.finish(x))
