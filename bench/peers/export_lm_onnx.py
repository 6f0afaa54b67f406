#!/usr/bin/python3
"""Export a Hugging Face LLaMA-layout checkpoint (bench/models/make_lm.py) to ONNX for the ONNX
Runtime language-model peer (bench/peers/ort_lm_bench.js). One graph for prefill and steps,
written with torch.onnx.export from tools/model/llama_torch.py's modules (same weights, same
math), every axis that varies dynamic:
  lm_step.onnx  ids [B, T] int64 (T new tokens per row), past_k, past_v [L, B, KV, P, dh]
                (P earlier positions; 0 for a prefill) -> logits [B, V] of the last new token,
                present_k, present_v [L, B, KV, P + T, dh]. Rotary angles are computed in the
                graph from the positions P .. P + T - 1 (float32); the causal mask covers the
                new tokens. Traced with B 2, T 3, P 2, so that nothing is folded to a constant.
  argmax.onnx   logits [R, V] -> ids [R] (export_onnx.py's), greedy's choice.
plus meta.json. --int8 also writes OUT-int8 with every constant-weight MatMul / Gemm rewritten
to com.microsoft.DynamicQuantizeMatMul (export_onnx.py's quantize_graph: activations quantized
at run time, weights int8 per output column); attention's MatMuls stay fp32, as in tern.

Usage: export_lm_onnx.py --checkpoint model.safetensors --config config.json --out DIR [--int8]
"""
import argparse
import json
import math
import os
import shutil
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "model"))
sys.path.insert(0, HERE)
import llama_torch  # noqa: E402
import tern_torch  # noqa: E402
from export_onnx import OPSET, export_argmax, quantize_graph  # noqa: E402


class StepGraph(nn.Module):
    def __init__(self, model, cfg):
        super().__init__()
        self.m, self.cfg = model, cfg
        d = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = cfg.get("num_key_value_heads") or self.heads
        self.dh = cfg.get("head_dim") or d // self.heads
        rot = model.model.layers[0].self_attn.rotary_emb
        inv = 1.0 / (float(rot.base) ** (torch.arange(0, self.dh, 2, dtype=torch.float64) / self.dh))
        self.register_buffer("inv_freq", llama_torch.scaled_inv_freq(inv, rot.scaling).float())

    def forward(self, ids, past_k, past_v):
        B, T = ids.shape
        P = past_k.shape[3]
        positions = (torch.arange(T) + P).float()
        freqs = positions[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        # Query i (position P + i) sees keys 0 .. P + i.
        hidden = torch.arange(P + T)[None, :] > (torch.arange(T)[:, None] + P)
        group = self.heads // self.kv_heads
        x = self.m.model.embed_tokens(ids) * self.m.model.scale
        keys_out, values_out = [], []
        for i, layer in enumerate(self.m.model.layers):
            a = layer.self_attn
            h = layer.input_layernorm(x)
            q = a.q_proj(h).view(B, T, self.heads, self.dh).transpose(1, 2)
            k = a.k_proj(h).view(B, T, self.kv_heads, self.dh).transpose(1, 2)
            v = a.v_proj(h).view(B, T, self.kv_heads, self.dh).transpose(1, 2)
            q, k = llama_torch.apply_rotary_pos_emb(q, k, cos, sin)
            k = torch.cat((past_k[i], k), dim=2)
            v = torch.cat((past_v[i], v), dim=2)
            keys_out.append(k)
            values_out.append(v)
            # Each K/V head serves `group` consecutive query heads (repeat_interleave, written
            # as expand + reshape: torch 1.13 exports repeat_interleave with traced sizes).
            kk = k[:, :, None].expand(-1, -1, group, -1, -1).reshape(B, self.heads, -1, self.dh)
            vv = v[:, :, None].expand(-1, -1, group, -1, -1).reshape(B, self.heads, -1, self.dh)
            w = (q @ kk.transpose(-1, -2)) / math.sqrt(self.dh)
            w = w.masked_fill(hidden, float("-inf"))
            o = (torch.softmax(w, dim=-1) @ vv).transpose(1, 2).reshape(B, T, self.heads * self.dh)
            x = x + a.o_proj(o)
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        logits = self.m.lm_head(self.m.model.norm(x[:, -1]))
        return logits, torch.stack(keys_out), torch.stack(values_out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--int8", action="store_true")
    args = ap.parse_args()
    with open(args.config) as f:
        cfg = json.load(f)
    model = llama_torch.LlamaForCausalLM(cfg)
    state, _ = tern_torch.load_safetensors(args.checkpoint)
    model.load_state_dict(state, strict=False)
    if cfg.get("tie_word_embeddings"):  # an initializer of its own for the output MatMul
        head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        head.weight = nn.Parameter(model.model.embed_tokens.weight.detach().clone())
        model.lm_head = head
    graph = StepGraph(model.eval(), cfg).eval()
    L = cfg["num_hidden_layers"]
    past = torch.zeros(L, 2, graph.kv_heads, 2, graph.dh)
    os.makedirs(args.out, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(graph, (torch.tensor([[5, 6, 7], [8, 9, 10]]), past, past),
                          os.path.join(args.out, "lm_step.onnx"), opset_version=OPSET,
                          do_constant_folding=True, input_names=["ids", "past_k", "past_v"],
                          output_names=["logits", "present_k", "present_v"],
                          dynamic_axes={"ids": {0: "B", 1: "T"}, "past_k": {1: "B", 3: "P"},
                                        "past_v": {1: "B", 3: "P"}, "logits": {0: "B"},
                                        "present_k": {1: "B", 3: "PT"},
                                        "present_v": {1: "B", 3: "PT"}})
    export_argmax(os.path.join(args.out, "argmax.onnx"), cfg["vocab_size"])
    meta = dict(layers=L, kv_heads=graph.kv_heads, d_head=graph.dh, vocab=cfg["vocab_size"],
                precision="fp32", checkpoint=os.path.abspath(args.checkpoint))
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    if args.int8:
        q_dir = args.out.rstrip("/") + "-int8"
        os.makedirs(q_dir, exist_ok=True)
        count = quantize_graph(os.path.join(args.out, "lm_step.onnx"), os.path.join(q_dir, "lm_step.onnx"))
        shutil.copyfile(os.path.join(args.out, "argmax.onnx"), os.path.join(q_dir, "argmax.onnx"))
        with open(os.path.join(q_dir, "meta.json"), "w") as f:
            json.dump(dict(meta, precision="int8", dynamic_quantize_matmul=count), f, indent=1)
        print(f"wrote {q_dir}: {count} DynamicQuantizeMatMul nodes", file=sys.stderr)


if __name__ == "__main__":
    main()
