#!/usr/bin/python3
"""PyTorch peer of `tern bench` on a language model (issue 15's benchmark): the same Hugging
Face LLaMA-layout checkpoint through tools/model/llama_torch.py (LlamaForCausalLM: the
project's reference, same math and names), with a K/V cache written here (the reference itself
recomputes the prefix), a batch of --batch prompts of --prompt-length ids (row b's id[i] = 4 +
((b * length + i) * 7919 + 17) mod (vocab - 4), as tern bench), then exactly --tokens greedy
tokens per prompt (EOS does not stop them, as tern bench).

  --mode fp32   the model as is, torch.set_num_threads(--threads).
  --mode int8   torch.ao.quantization.quantize_dynamic(qint8) on every nn.Linear; the tied
                output projection is an nn.Linear copy of the embedding, so it is quantized like
                every other matrix, as in tern's int8 model. The quantized engine (onednn or
                qnnpack, Debian's torch has no fbgemm) is printed in the JSON.

Timed like tern bench: prefill_ms = the prompts through every layer (K/V into the cache) and
the first logits with their argmax; decode_ms_per_token = one later step of the whole batch
(embedding, layers, output projection, argmax). Prints one JSON object with tern bench's keys.
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "model"))
import llama_torch  # noqa: E402
import tern_torch  # noqa: E402


def bench_prompts(length, vocab, batch):
    span = vocab - 4
    return [[4 + ((b * length + i) * 7919 + 17) % span for i in range(length)] for b in range(batch)]


class CachedLlama:
    """Greedy generation with a preallocated K/V cache over a llama_torch.LlamaForCausalLM."""

    def __init__(self, model, cfg, batch, positions):
        self.m, self.cfg = model, cfg
        d = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = cfg.get("num_key_value_heads") or self.heads
        self.dh = cfg.get("head_dim") or d // self.heads
        layers = len(model.model.layers)
        shape = (batch, self.kv_heads, positions, self.dh)
        self.k = [torch.zeros(shape) for _ in range(layers)]
        self.v = [torch.zeros(shape) for _ in range(layers)]
        rot = model.model.layers[0].self_attn.rotary_emb
        self.cos, self.sin = rot(torch.arange(positions), torch.float32)

    def forward(self, ids, start):
        """ids [B, T] at positions start.. -> logits of the last position [B, V]."""
        B, T = ids.shape
        x = self.m.model.embed_tokens(ids) * self.m.model.scale
        cos, sin = self.cos[start:start + T], self.sin[start:start + T]
        end = start + T
        group = self.heads // self.kv_heads
        mask = None
        if T > 1:
            mask = torch.triu(torch.ones(T, end, dtype=torch.bool), diagonal=start + 1)
        for i, layer in enumerate(self.m.model.layers):
            a = layer.self_attn
            h = layer.input_layernorm(x)
            q = a.q_proj(h).view(B, T, self.heads, self.dh).transpose(1, 2)
            k = a.k_proj(h).view(B, T, self.kv_heads, self.dh).transpose(1, 2)
            v = a.v_proj(h).view(B, T, self.kv_heads, self.dh).transpose(1, 2)
            q, k = llama_torch.apply_rotary_pos_emb(q, k, cos, sin)
            self.k[i][:, :, start:end] = k
            self.v[i][:, :, start:end] = v
            keys = self.k[i][:, :, :end].repeat_interleave(group, dim=1)
            values = self.v[i][:, :, :end].repeat_interleave(group, dim=1)
            w = (q @ keys.transpose(-1, -2)) / math.sqrt(self.dh)
            if mask is not None:
                w = w.masked_fill(mask, float("-inf"))
            o = (torch.softmax(w, dim=-1) @ values).transpose(1, 2).reshape(B, T, -1)
            x = x + a.o_proj(o)
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return self.m.lm_head(self.m.model.norm(x[:, -1]))


def peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--mode", choices=("fp32", "int8"), default="fp32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prompt-length", type=int, default=128)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with open(args.config) as f:
        cfg = json.load(f)
    t_load = time.perf_counter()
    model = llama_torch.LlamaForCausalLM(cfg)
    state, _ = tern_torch.load_safetensors(args.checkpoint)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if "rotary_emb" not in k and k != "lm_head.weight"]
    if missing or unexpected:
        raise SystemExit(f"checkpoint mismatch: missing {missing[:3]}, unexpected {unexpected[:3]}")
    model.eval()
    engine = None
    if args.mode == "int8":
        if cfg.get("tie_word_embeddings"):  # an nn.Linear of its own, so it is quantized too
            head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
            head.weight = nn.Parameter(model.model.embed_tokens.weight.detach().clone())
            model.lm_head = head
        for e in ("onednn", "qnnpack"):
            if e in torch.backends.quantized.supported_engines:
                torch.backends.quantized.engine = engine = e
                break
        model = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    load_ms = (time.perf_counter() - t_load) * 1e3
    prompts = torch.tensor(bench_prompts(args.prompt_length, cfg["vocab_size"], args.batch))
    positions = args.prompt_length + args.tokens
    prefill, per_token, totals = [], [], []
    ids = None
    with torch.no_grad():
        runner = CachedLlama(model, cfg, args.batch, positions)
        for r in range(args.warmup + args.repeat):
            t0 = time.perf_counter()
            nxt = runner.forward(prompts, 0).argmax(-1)
            t1 = time.perf_counter()
            out = [nxt]
            for t in range(1, args.tokens):
                nxt = runner.forward(nxt[:, None], args.prompt_length + t - 1).argmax(-1)
                out.append(nxt)
            t2 = time.perf_counter()
            ids = torch.stack(out, dim=1)
            if r < args.warmup:
                continue
            prefill.append((t1 - t0) * 1e3)
            totals.append((t2 - t0) * 1e3)
            if args.tokens > 1:
                per_token.append((t2 - t1) * 1e3 / (args.tokens - 1))
    pre, step, total = (statistics.median(v) if v else 0.0 for v in (prefill, per_token, totals))
    j = {
        "engine": "pytorch", "mode": args.mode, "quantized_engine": engine,
        "threads": args.threads, "prompt_length": args.prompt_length, "tokens": args.tokens,
        "batch": args.batch, "repeat": args.repeat, "warmup": args.warmup,
        "load_prepare_ms": load_ms, "prefill_ms": pre,
        "prefill_tokens_per_s": args.batch * args.prompt_length * 1e3 / pre if pre else 0.0,
        "decode_ms_per_token": step,
        "decode_tokens_per_s": args.batch * 1e3 / step if step else 0.0,
        "total_ms": total,
        "tokens_per_s": args.batch * args.tokens * 1e3 / total if total else 0.0,
        "peak_rss_bytes": peak_rss(),
        "ids": ids[0].tolist(),
    }
    if args.batch > 1:
        j["ids_batch"] = ids.reshape(-1).tolist()
    print(json.dumps(j))


if __name__ == "__main__":
    main()
