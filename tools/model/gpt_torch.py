"""GPT-2 (Radford et al. 2019, "Language Models are Unsupervised Multitask Learners") in plain
PyTorch, written from the published definition (OpenAI's gpt-2 model.py; the module and
parameter names of Hugging Face transformers' modeling_gpt2.py, so a state_dict of this model
has exactly the names of a GPT2LMHeadModel checkpoint):

  h_0 = W_e[tokens] + W_p[positions]                         (transformer.wte, transformer.wpe)
  block: a = h + c_proj(attn(c_attn(ln_1(h))))               (pre-LN, causal self-attention)
         h = a + mlp.c_proj(gelu_new(mlp.c_fc(ln_2(a))))
  logits = ln_f(h_L) W_e^T                                   (lm_head tied to wte)

Conv1D is GPT-2's linear layer with its weight stored [in, out] (y = x W + b), the transpose
of nn.Linear. c_attn produces Q, K and V side by side along the output dimension. gelu_new is
the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Attention scores are
scaled by 1/sqrt(d_head); future positions are masked.

The transformers package is not used (nor installed here). The attention core and greedy
continuation are shared with llama_torch.py (causal_lm.py). tools/fixtures/make_gpt2_fixture.py
builds a small random model with it to test tern's gpt2 converter and decoder-only runtime.
"""

import math

import torch
import torch.nn as nn

import causal_lm


class Conv1D(nn.Module):
    """y = x W + b with W [nx, nf] (transformers.pytorch_utils.Conv1D)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], self.nf)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Attention(nn.Module):
    def __init__(self, n_embd, n_head, n_positions):
        super().__init__()
        self.n_head = n_head
        self.c_attn = Conv1D(3 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, n_embd)
        # The causal mask as a buffer, as GPT-2 checkpoints carry it ("attn.bias").
        self.register_buffer("bias", torch.tril(torch.ones(n_positions, n_positions, dtype=torch.bool))
                             .view(1, 1, n_positions, n_positions))

    def forward(self, x):
        T, C = x.shape[1], x.shape[2]
        q, k, v = (causal_lm.split_heads(t, self.n_head) for t in self.c_attn(x).split(C, dim=2))
        return self.c_proj(causal_lm.causal_attention(q, k, v, ~self.bias[:, :, :T, :T]))


class MLP(nn.Module):
    def __init__(self, n_inner, n_embd):
        super().__init__()
        self.c_fc = Conv1D(n_inner, n_embd)
        self.c_proj = Conv1D(n_embd, n_inner)

    def forward(self, x):
        return self.c_proj(gelu_new(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, eps = cfg["n_embd"], cfg["layer_norm_epsilon"]
        inner = cfg.get("n_inner") or 4 * d
        self.ln_1 = nn.LayerNorm(d, eps=eps)
        self.attn = Attention(d, cfg["n_head"], cfg["n_positions"])
        self.ln_2 = nn.LayerNorm(d, eps=eps)
        self.mlp = MLP(inner, d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["n_embd"]
        self.wte = nn.Embedding(cfg["vocab_size"], d)
        self.wpe = nn.Embedding(cfg["n_positions"], d)
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg["n_layer"]))
        self.ln_f = nn.LayerNorm(d, eps=cfg["layer_norm_epsilon"])

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        x = self.wte(ids) + self.wpe(pos)[None]
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class GPT2LMHeadModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.transformer = Transformer(cfg)
        self.lm_head = nn.Linear(cfg["n_embd"], cfg["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied

    def forward(self, ids):
        """ids [B, T] -> logits [B, T, V]."""
        return self.lm_head(self.transformer(ids))
