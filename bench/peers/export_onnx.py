#!/usr/bin/env python3
"""Export a tern checkpoint to ONNX for the ONNX Runtime peer (bench/peers/ort_bench.js).

Three graphs, written with torch.onnx.export from tools/model/tern_torch.py's modules (the same
weights and math as tern), every batch axis dynamic (B: sentences, or sentences x beams for the
decoder step):
  encoder.onnx       src_ids [B, S] int64 -> enc_out [B, S, d]
  cross_kv.onnx      enc_out [B, S, d] -> cross_k, cross_v [L, B, H, S, dh] (every decoder
                     layer's cross-attention K/V, computed once per source)
  decoder_step.onnx  token [B, 1] int64, position [1] int64 (the step, the same for every
                     row), past_k, past_v [L, B, H, T, dh], cross_k, cross_v [L, B, H, S, dh]
                     -> logits [B, V], present_k, present_v [L, B, H, T+1, dh]
  beam_topk.onnx     logits [R, V], k [1] int64 -> values, indices [R, k]: the k largest
                     log-softmax values of each row (LogSoftmax + TopK, ties: lower index
                     first), the per-row part of a beam step (ort_bench.js --beam), so that
                     ONNX Runtime's vectorized kernels do the exponentials, not JavaScript
  argmax.onnx        logits [R, V] -> ids [R] int64: each row's argmax (ArgMax, lowest index on
                     ties), greedy's choice of the next tokens (ort_bench.js: faster than a
                     JavaScript loop over batch x vocabulary logits)
plus meta.json (config, shapes, "dynamic_batch": true; ort_bench.js refuses --batch / --beam
with an older export). No padding mask: the benchmark's sources of one batch have the same
length. Positional encodings are a constant table in the graphs. Traced with batch 2, so that
no size-1 batch is folded into a constant.

--int8 then rewrites every MatMul / Gemm whose weight is a constant into
com.microsoft.DynamicQuantizeMatMul (activations quantized per tensor at run time by ONNX
Runtime; weights int8, symmetric, one scale per output column, which that op supports), with
the following bias Add folded into the op. Attention's activation x activation MatMuls stay
fp32, as in tern. The embedding Gather keeps its fp32 table (a Gather has no int8 form here).

Usage: export_onnx.py --checkpoint model.safetensors [--config config.json] --out DIR [--int8]
"""
import argparse
import json
import math
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "model"))
sys.path.insert(0, HERE)
import tern_torch  # noqa: E402
from torch_bench import load_into, read_config  # noqa: E402

OPSET = 14


def split_heads(x, heads):  # [B, T, d] -> [B, H, T, dh]
    b, t, d = x.shape
    return x.reshape(b, t, heads, d // heads).transpose(1, 2)


def merge_heads(x):  # [B, H, T, dh] -> [B, T, d]
    b, h, t, dh = x.shape
    return x.transpose(1, 2).reshape(b, t, h * dh)


def attend(q, k, v):
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.matmul(torch.softmax(scores, dim=-1), v)


class EncoderGraph(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m
        cfg = m.cfg
        self.register_buffer("pe", tern_torch.sinusoidal_positions(cfg.max_positions, cfg.d_model, torch.float32))

    def forward(self, src_ids):
        enc = self.m.encoder
        x = F.embedding(src_ids, enc.embedding().weight) * self.m.cfg.embedding_scale
        x = x + self.pe[: src_ids.shape[1]].unsqueeze(0)
        for layer in enc.layers:
            x = layer(x, None)
        if self.m.cfg.norm == "pre":
            x = enc.layer_norm(x)
        return x


class CrossKVGraph(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, enc_out):
        ks, vs = [], []
        for layer in self.m.decoder.layers:
            k, v = layer.encoder_attn.kv(enc_out)
            ks.append(k)
            vs.append(v)
        return torch.stack(ks), torch.stack(vs)


class DecoderStepGraph(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m
        cfg = m.cfg
        self.register_buffer("pe", tern_torch.sinusoidal_positions(cfg.max_positions, cfg.d_model, torch.float32))
        # Gemm (2-D input, transB) over the embedding table itself: no transposed copy.
        self.register_buffer("out_bias", m.output_projection.bias.detach().clone() if m.output_bias
                             else torch.zeros(cfg.tgt_vocab_size))

    def forward(self, token, position, past_k, past_v, cross_k, cross_v):
        cfg = self.m.cfg
        dec = self.m.decoder
        h = cfg.heads
        x = F.embedding(token, dec.embedding().weight) * cfg.embedding_scale
        x = x + torch.index_select(self.pe, 0, position).unsqueeze(0)
        pre = cfg.norm == "pre"
        new_k, new_v = [], []
        for i, layer in enumerate(dec.layers):
            sa = layer.self_attn
            y = layer.self_attn_layer_norm(x) if pre else x
            q = split_heads(sa.q_proj(y), h)
            k = torch.cat([past_k[i], split_heads(sa.k_proj(y), h)], dim=2)
            v = torch.cat([past_v[i], split_heads(sa.v_proj(y), h)], dim=2)
            new_k.append(k)
            new_v.append(v)
            a = sa.out_proj(merge_heads(attend(q, k, v)))
            x = x + a if pre else layer.self_attn_layer_norm(x + a)
            ea = layer.encoder_attn
            y = layer.encoder_attn_layer_norm(x) if pre else x
            a = ea.out_proj(merge_heads(attend(split_heads(ea.q_proj(y), h), cross_k[i], cross_v[i])))
            x = x + a if pre else layer.encoder_attn_layer_norm(x + a)
            y = layer.final_layer_norm(x) if pre else x
            a = layer.ffn(y)
            x = x + a if pre else layer.final_layer_norm(x + a)
        if pre:
            x = dec.layer_norm(x)
        logits = F.linear(x.reshape(-1, cfg.d_model), self.m.output_weight(), self.out_bias)
        return logits, torch.stack(new_k), torch.stack(new_v)


def export(m, out_dir):
    cfg = m.cfg
    L, H, dh, d = cfg.decoder_layers, cfg.heads, cfg.d_head, cfg.d_model
    src = torch.tensor([[5] * 7 + [cfg.eos_id], [6] * 7 + [cfg.eos_id]], dtype=torch.long)
    kw = dict(opset_version=OPSET, do_constant_folding=True)
    enc_graph = EncoderGraph(m).eval()
    torch.onnx.export(enc_graph, (src,), os.path.join(out_dir, "encoder.onnx"),
                      input_names=["src_ids"], output_names=["enc_out"],
                      dynamic_axes={"src_ids": {0: "B", 1: "S"}, "enc_out": {0: "B", 1: "S"}}, **kw)
    enc = enc_graph(src)
    torch.onnx.export(CrossKVGraph(m).eval(), (enc,), os.path.join(out_dir, "cross_kv.onnx"),
                      input_names=["enc_out"], output_names=["cross_k", "cross_v"],
                      dynamic_axes={"enc_out": {0: "B", 1: "S"}, "cross_k": {1: "B", 3: "S"},
                                    "cross_v": {1: "B", 3: "S"}}, **kw)
    ck, cv = CrossKVGraph(m)(enc)
    past = torch.zeros(L, 2, H, 3, dh)
    torch.onnx.export(DecoderStepGraph(m).eval(),
                      (torch.tensor([[1], [1]]), torch.tensor([3]), past, past, ck, cv),
                      os.path.join(out_dir, "decoder_step.onnx"),
                      input_names=["token", "position", "past_k", "past_v", "cross_k", "cross_v"],
                      output_names=["logits", "present_k", "present_v"],
                      dynamic_axes={"token": {0: "B"}, "past_k": {1: "B", 3: "T"}, "past_v": {1: "B", 3: "T"},
                                    "cross_k": {1: "B", 3: "S"}, "cross_v": {1: "B", 3: "S"},
                                    "logits": {0: "B"}, "present_k": {1: "B", 3: "T1"},
                                    "present_v": {1: "B", 3: "T1"}},
                      **kw)
    return dict(layers=L, heads=H, d_head=dh, d_model=d, dynamic_batch=True)


# --- int8: MatMul/Gemm with a constant weight -> com.microsoft.DynamicQuantizeMatMul ---------

def quantize_graph(path_in, path_out):
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(path_in)
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    new_inits, remove_nodes, replaced = [], set(), 0
    nodes = list(g.node)
    out_nodes = []
    for n in nodes:
        if id(n) in remove_nodes:
            continue
        w = bias = None
        a = n.input[0] if n.input else None
        out = n.output[0] if n.output else None
        if n.op_type == "MatMul" and n.input[1] in inits:
            w = numpy_helper.to_array(inits[n.input[1]])  # [K, N]
            if w.ndim != 2:
                w = None
            else:
                # Fold a following bias Add (the Linear's bias) into the op.
                users = consumers.get(out, [])
                if len(users) == 1 and users[0].op_type == "Add":
                    add = users[0]
                    other = add.input[1] if add.input[0] == out else add.input[0]
                    if other in inits and numpy_helper.to_array(inits[other]).shape == (w.shape[1],):
                        bias = numpy_helper.to_array(inits[other])
                        remove_nodes.add(id(add))
                        out = add.output[0]
        elif n.op_type == "Gemm" and n.input[1] in inits:
            attrs = {x.name: helper.get_attribute_value(x) for x in n.attribute}
            if attrs.get("transA", 0) == 0 and attrs.get("alpha", 1.0) == 1.0 and attrs.get("beta", 1.0) == 1.0:
                w = numpy_helper.to_array(inits[n.input[1]])
                if attrs.get("transB", 0):
                    w = w.T
                if len(n.input) > 2 and n.input[2] in inits:
                    bias = numpy_helper.to_array(inits[n.input[2]])
                    if bias.shape != (w.shape[1],):
                        w = None
                elif len(n.input) > 2:
                    w = None
        if w is None:
            out_nodes.append(n)
            continue
        w = np.ascontiguousarray(w.astype(np.float32))
        scale = np.abs(w).max(axis=0) / 127.0
        scale[scale == 0] = 1.0
        q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
        base = f"q{replaced}"
        new_inits += [numpy_helper.from_array(q, base + "_w"),
                      numpy_helper.from_array(scale.astype(np.float32), base + "_scale"),
                      numpy_helper.from_array(np.zeros(w.shape[1], np.int8), base + "_zp")]
        inputs = [a, base + "_w", base + "_scale", base + "_zp"]
        if bias is not None:
            new_inits.append(numpy_helper.from_array(bias.astype(np.float32), base + "_bias"))
            inputs.append(base + "_bias")
        out_nodes.append(helper.make_node("DynamicQuantizeMatMul", inputs, [out], name=base,
                                          domain="com.microsoft"))
        replaced += 1
    del g.node[:]
    g.node.extend(out_nodes)
    # Drop initializers nothing uses any more.
    used = {i for n in g.node for i in n.input} | {o.name for o in g.output}
    keep = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep + new_inits)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    if model.ByteSize() > 1_800_000_000:  # protobuf's 2 GB limit (LLaMA 1B's shape): weights beside it
        onnx.save(model, path_out, save_as_external_data=True, all_tensors_to_one_file=True,
                  location=os.path.basename(path_out) + ".data")
    else:
        onnx.save(model, path_out)
    return replaced


def export_beam_topk(path, vocab):
    """LogSoftmax over the last axis, then TopK (largest, sorted) with k as an input."""
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("LogSoftmax", ["logits"], ["log_probs"], axis=-1),
         helper.make_node("TopK", ["log_probs", "k"], ["values", "indices"], axis=-1, largest=1, sorted=1)],
        "beam_topk",
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["R", vocab]),
         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("values", TensorProto.FLOAT, ["R", "k"]),
         helper.make_tensor_value_info("indices", TensorProto.INT64, ["R", "k"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def export_argmax(path, vocab):
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("ArgMax", ["logits"], ["ids"], axis=-1, keepdims=0, select_last_index=0)],
        "argmax",
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["R", vocab])],
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["R"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--config")
    ap.add_argument("--out", required=True, help="output directory (fp32 graphs; int8 ones in OUT-int8 with --int8)")
    ap.add_argument("--int8", action="store_true", help="also write the DynamicQuantizeMatMul graphs to OUT-int8")
    args = ap.parse_args()

    cfg = read_config(args.checkpoint, args.config)
    with torch.no_grad():
        m = tern_torch.TernModel(cfg).eval()
        load_into(m, args.checkpoint)
    os.makedirs(args.out, exist_ok=True)
    with torch.no_grad():
        shapes = export(m, args.out)
    export_beam_topk(os.path.join(args.out, "beam_topk.onnx"), cfg.tgt_vocab_size)
    shapes["beam_topk"] = "beam_topk.onnx"
    export_argmax(os.path.join(args.out, "argmax.onnx"), cfg.tgt_vocab_size)
    shapes["argmax"] = "argmax.onnx"
    meta = dict(shapes, config=cfg.to_dict(), precision="fp32", checkpoint=os.path.abspath(args.checkpoint))
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"wrote {args.out}/{{encoder,cross_kv,decoder_step,beam_topk,argmax}}.onnx", file=sys.stderr)
    if args.int8:
        q_dir = args.out.rstrip("/") + "-int8"
        os.makedirs(q_dir, exist_ok=True)
        counts = {}
        for name in ("encoder", "cross_kv", "decoder_step"):
            counts[name] = quantize_graph(os.path.join(args.out, name + ".onnx"), os.path.join(q_dir, name + ".onnx"))
        for name in ("beam_topk", "argmax"):  # no weights: the same graphs
            shutil.copyfile(os.path.join(args.out, name + ".onnx"), os.path.join(q_dir, name + ".onnx"))
        meta = dict(meta, precision="int8", dynamic_quantize_matmul=counts)
        with open(os.path.join(q_dir, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        print(f"wrote {q_dir}: DynamicQuantizeMatMul nodes {counts}", file=sys.stderr)


if __name__ == "__main__":
    main()
