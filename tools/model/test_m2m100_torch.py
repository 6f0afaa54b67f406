#!/usr/bin/python3
"""Self-checks of m2m100_torch.py (the M2M100 / NLLB reference), run by ctest in the native
configuration:
  - fairseq's position rule: the t-th non-pad token at padding_idx + 1 + t, pads at padding_idx;
    the table's columns sin(p w_i) then cos(p w_i), w_i = 10000^(-i/(d/2-1)), the padding row 0;
  - the reference loaded from each committed fixture (tests/fixtures/checkpoints/{nllb,m2m100})
    reproduces that fixture's expected.safetensors (encoder output, teacher-forced logits, greedy
    ids with the target language forced), so fixture and reference cannot drift apart;
  - a pad-only change: right padding does not change a sentence's logits.
"""

import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import m2m100_torch  # noqa: E402
import tern_torch  # noqa: E402


def check_positions():
    ids = torch.tensor([[5, 6, 2, 1, 1]])
    assert m2m100_torch.make_positions(ids, 1).tolist() == [[2, 3, 4, 1, 1]]
    t = m2m100_torch.fairseq_sinusoids(6, 8, 1)
    assert torch.all(t[1] == 0)
    w1 = 10000 ** (-1 / 3)
    assert abs(float(t[3, 1]) - math.sin(3 * w1)) < 1e-12
    assert abs(float(t[3, 5]) - math.cos(3 * w1)) < 1e-12


def load(name, weights):
    d = os.path.join(ROOT, "tests", "fixtures", "checkpoints", name)
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    model = m2m100_torch.M2M100(cfg).double()
    path = os.path.join(d, weights)
    if weights.endswith(".safetensors"):
        sd, _ = tern_torch.load_safetensors(path)
    else:
        sd = torch.load(path)
    sd = {k: v.double() for k, v in sd.items() if "embed_positions" not in k
          and k not in ("model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight")}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert not unexpected, unexpected
    assert set(missing) <= {"lm_head.weight"}, missing  # tied: the same Parameter as model.shared
    expected, _ = tern_torch.load_safetensors(os.path.join(d, "expected.safetensors"))
    return model, expected


def check_fixture(name, weights):
    model, e = load(name, weights)
    src, tgt = e["src_ids"].long(), e["tgt_in"].long()
    with torch.no_grad():
        enc = model.encode(src)
        logits = model.decode(enc, src, tgt)
        for b, n in enumerate(e["src_lengths"].tolist()):
            assert (enc[b, :n].float() - e["encoder_out"][b, :n]).abs().max() < 1e-5, name
            alone = model.decode(model.encode(src[b:b + 1, :n]), src[b:b + 1, :n], tgt[b:b + 1])
            assert (alone[0] - logits[b]).abs().max() < 1e-9, (name, b)  # padding changes nothing
            ids, _ = model.greedy(src[b:b + 1, :n], int(e["forced_bos_id"][0]), e["greedy_ids"].shape[1])
            want = e["greedy_ids"][b, :int(e["greedy_lengths"][b])].tolist()
            assert ids == want, (name, b, ids, want)
    assert (logits.float() - e["logits"]).abs().max() < 1e-5, name


def main():
    torch.set_num_threads(1)
    check_positions()
    check_fixture("nllb", "model.safetensors")
    check_fixture("m2m100", "pytorch_model.bin")
    print("m2m100_torch: ok")


if __name__ == "__main__":
    main()
