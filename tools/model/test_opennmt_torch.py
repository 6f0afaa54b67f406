#!/usr/bin/python3
"""Self-checks of opennmt_torch.py (the OpenNMT-py Transformer reference), run by ctest in the
native configuration:
  - the sinusoids: interleaved sin / cos with w_i = 10000^(-2i/d), as the fixture's stored pe
    buffers hold them;
  - Shaw's relative attention against a loop over (i, j) written from the paper's equations
    (one table for keys and values, r_ij = clip(j - i, -k, k) + k), grouped K/V heads included;
  - the reference loaded from each committed fixture (tests/fixtures/checkpoints/opennmt{,_rel}/
    model.pt: opt, vocab, model, generator) reproduces its expected.safetensors (encoder output,
    teacher-forced logits, greedy ids), so fixture and reference cannot drift apart;
  - a pad-only change: right padding does not change a sentence's logits.
"""

import argparse
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import opennmt_torch  # noqa: E402
import tern_torch  # noqa: E402


def check_sinusoids():
    t = opennmt_torch.sinusoids(7, 8)
    for p in range(7):
        for i in range(4):
            w = 10000 ** (-2 * i / 8)
            assert abs(float(t[p, 2 * i]) - math.sin(p * w)) < 1e-12
            assert abs(float(t[p, 2 * i + 1]) - math.cos(p * w)) < 1e-12


def check_relative():
    torch.manual_seed(0)
    opt = argparse.Namespace(heads=4, num_kv=2, add_qkvbias=True, max_relative_positions=2)
    attn = opennmt_torch.MultiHeadedAttention(opt, 16, True).double()
    x = torch.randn(1, 5, 16, dtype=torch.float64)
    got = attn(x, x, torch.zeros(1, 1, 1, 5, dtype=torch.float64))
    q = attn.linear_query(x)[0].view(5, 4, 4)
    k = attn.linear_keys(x)[0].view(5, 2, 4)
    v = attn.linear_values(x)[0].view(5, 2, 4)
    R = attn.relative_positions_embeddings.weight
    heads = torch.zeros(5, 4, 4, dtype=torch.float64)
    for h in range(4):
        g = h // 2  # query heads 0, 1 share K/V head 0; 2, 3 head 1
        for i in range(5):
            r = [min(max(j - i, -2), 2) + 2 for j in range(5)]
            e = torch.stack([q[i, h] @ (k[j, g] + R[r[j]]) / 2.0 for j in range(5)])
            a = torch.softmax(e, 0)
            heads[i, h] = sum(a[j] * (v[j, g] + R[r[j]]) for j in range(5))
    want = attn.final_linear(heads.reshape(5, 16))
    assert (got[0] - want).abs().max() < 1e-12


def load(name):
    d = os.path.join(ROOT, "tests", "fixtures", "checkpoints", name)
    ckpt = torch.load(os.path.join(d, "model.pt"))
    opt, vocab = ckpt["opt"], ckpt["vocab"]
    assert isinstance(opt, argparse.Namespace)
    specials = {t: vocab["tgt"].index(t) for t in ("<blank>", "<s>", "</s>")}
    model = opennmt_torch.NMTModel(opt, len(vocab["src"]), len(vocab["tgt"]), specials["<blank>"],
                                   specials["<s>"], specials["</s>"], max_len=64).double()
    sd = {k: v.double() for k, v in ckpt["model"].items()}
    sd.update({"generator." + k: v.double() for k, v in ckpt["generator"].items()})
    model.load_state_dict(sd, strict=True)  # every tensor of the checkpoint, no other
    for stack in ("encoder", "decoder"):
        key = f"{stack}.embeddings.make_embedding.pe.pe"
        if key in ckpt["model"]:
            table = ckpt["model"][key].double()[:, 0]
            assert (table - opennmt_torch.sinusoids(table.shape[0], opt.hidden_size)).abs().max() < 1e-6
    expected, _ = tern_torch.load_safetensors(os.path.join(d, "expected.safetensors"))
    return model, expected


def check_fixture(name):
    model, e = load(name)
    src, tgt = e["src_ids"].long(), e["tgt_in"].long()
    with torch.no_grad():
        enc = model.encode(src)
        logits = model.decode(enc, src, tgt)
        for b, n in enumerate(e["src_lengths"].tolist()):
            assert (enc[b, :n].float() - e["encoder_out"][b, :n]).abs().max() < 1e-5, name
            alone = model.decode(model.encode(src[b:b + 1, :n]), src[b:b + 1, :n], tgt[b:b + 1])
            assert (alone[0] - logits[b]).abs().max() < 1e-9, (name, b)  # padding changes nothing
            ids, _ = model.greedy(src[b:b + 1, :n], e["greedy_ids"].shape[1])
            want = e["greedy_ids"][b, :int(e["greedy_lengths"][b])].tolist()
            assert ids == want, (name, b, ids, want)
    assert (logits.float() - e["logits"]).abs().max() < 1e-5, name


def main():
    torch.set_num_threads(1)
    check_sinusoids()
    check_relative()
    check_fixture("opennmt")
    check_fixture("opennmt_rel")
    print("opennmt_torch: ok")


if __name__ == "__main__":
    main()
