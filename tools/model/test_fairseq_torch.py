#!/usr/bin/python3
"""Self-checks of fairseq_torch.py (the fairseq transformer reference), run by ctest in the
native configuration:
  - each committed fixture (tests/fixtures/checkpoints/{fairseq,fairseq_cfg}/checkpoint_best.pt,
    read with torch.load: the extra_state meters need stand-in classes of fairseq's names) loads
    into the reference with exactly its state_dict names and reproduces its expected.safetensors
    (encoder output, teacher-forced logits, greedy ids from </s>), so fixture and reference
    cannot drift apart;
  - right padding does not change a sentence's logits;
  - the options: args (a Namespace) in one, cfg["model"] (a dict) in the other; the dictionaries'
    sizes (4 specials + entries) equal the embedding tables' rows;
  - the tables' tying: share_all_embeddings makes one Parameter, share_decoder_input_output_embed
    ties the output projection to the decoder's table.
"""

import os
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import fairseq_torch  # noqa: E402
import tern_torch  # noqa: E402


def stand_in_meters():
    pkg = types.ModuleType("fairseq")
    mod = types.ModuleType("fairseq.meters")
    pkg.meters = mod
    sys.modules["fairseq"], sys.modules["fairseq.meters"] = pkg, mod
    for name in ("AverageMeter", "TimeMeter", "StopwatchMeter"):
        setattr(mod, name, type(name, (), {"__module__": "fairseq.meters"}))


def dict_size(path):
    with open(path) as f:
        return 4 + sum(1 for line in f if line.strip())


def check_fixture(name):
    d = os.path.join(ROOT, "tests", "fixtures", "checkpoints", name)
    ckpt = torch.load(os.path.join(d, "checkpoint_best.pt"))
    if ckpt.get("args") is not None:
        a = vars(ckpt["args"])
    else:
        a = ckpt["cfg"]["model"]
    assert type(ckpt["extra_state"]["train_meters"]["train_loss"]).__name__ == "AverageMeter"
    sd = ckpt["model"]
    src_v = sd["encoder.embed_tokens.weight"].shape[0]
    tgt_v = sd["decoder.embed_tokens.weight"].shape[0]
    assert src_v == dict_size(os.path.join(d, "dict.de.txt")), name
    assert tgt_v == dict_size(os.path.join(d, "dict.en.txt")), name
    model = fairseq_torch.FairseqTransformer(a, src_v, tgt_v).double()
    assert set(model.state_dict()) == set(sd), set(model.state_dict()) ^ set(sd)
    model.load_state_dict({k: v.double() for k, v in sd.items()})
    if a["share_all_embeddings"]:
        assert model.decoder.embed_tokens.weight is model.encoder.embed_tokens.weight
    if a["share_decoder_input_output_embed"]:
        assert model.decoder.output_projection.weight is model.decoder.embed_tokens.weight
    e, _ = tern_torch.load_safetensors(os.path.join(d, "expected.safetensors"))
    src, tgt = e["src_ids"].long(), e["tgt_in"].long()
    assert int(tgt[0, 0]) == 2  # the decoder starts from </s>
    with torch.no_grad():
        enc = model.encode(src)
        logits = model.decode(enc, src, tgt)
        for b, n in enumerate(e["src_lengths"].tolist()):
            assert (enc[b, :n].float() - e["encoder_out"][b, :n]).abs().max() < 1e-5, name
            s = src[b:b + 1, :n]
            alone = model.decode(model.encode(s), s, tgt[b:b + 1])
            assert (alone[0] - logits[b]).abs().max() < 1e-9, (name, b)
            toks, out = [2], []
            for _ in range(e["greedy_ids"].shape[1]):
                lg = model.decode(model.encode(s), s, torch.tensor([toks]))[0, -1]
                t = int(torch.nonzero(lg == lg.max())[0])
                if t == 2:
                    break
                out.append(t)
                toks.append(t)
            want = e["greedy_ids"][b, :int(e["greedy_lengths"][b])].tolist()
            assert out == want, (name, b, out, want)
    assert (logits.float() - e["logits"]).abs().max() < 1e-5, name


def main():
    torch.set_num_threads(1)
    stand_in_meters()
    check_fixture("fairseq")
    check_fixture("fairseq_cfg")
    print("fairseq_torch: ok")


if __name__ == "__main__":
    main()
