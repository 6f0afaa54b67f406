"""What the decoder-only references (gpt_torch.py, llama_torch.py) compute alike: the causal
self-attention core between their projections, and greedy continuation of a prompt.

The projections stay in each model (GPT-2's fused Conv1D c_attn, LLaMA's separate bias-free
q/k/v_proj followed by the rotation), so their parameter names remain those of the checkpoints
they mirror. No K/V cache: the references recompute the whole prefix at every step, which is
what the runtime's cached decoding is compared against.
"""

import math

import torch


def split_heads(x, heads):
    """[B, T, C] -> [B, H, T, C/H]; head h is columns h*dh:(h+1)*dh."""
    B, T, C = x.shape
    return x.view(B, T, heads, C // heads).transpose(1, 2)


def causal_attention(q, k, v, future=None):
    """softmax(q k^T / sqrt(dh), future keys masked) v with the heads merged back.
    q, k, v [B, H, T, dh] -> [B, T, H*dh]. future: bool [.., T, T], True where the key comes
    after the query (default: the upper triangle)."""
    T, dh = q.shape[-2], q.shape[-1]
    if future is None:
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    w = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
    w = w.masked_fill(future, float("-inf"))
    a = torch.softmax(w, dim=-1) @ v
    B, H = a.shape[0], a.shape[1]
    return a.transpose(1, 2).reshape(B, T, H * dh)


def greedy(model, prompt, max_new, eos):
    """Greedy continuation of one prompt (list of ids) by model(ids [1, T]) -> logits [1, T, V]:
    argmax, lowest id on ties; stops after EOS (not included). Returns (ids, smallest top-1
    minus top-2 logit gap along the way)."""
    toks, out, margin = list(prompt), [], float("inf")
    with torch.no_grad():
        for _ in range(max_new):
            lg = model(torch.tensor([toks]))[0, -1]
            top = torch.topk(lg, 2).values
            margin = min(margin, float(top[0] - top[1]))
            t = int(torch.nonzero(lg == lg.max())[0])
            if t == eos:
                break
            out.append(t)
            toks.append(t)
    return out, margin
