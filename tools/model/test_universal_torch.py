#!/usr/bin/python3
"""Self-checks of tools/model/universal_torch.py:  /usr/bin/python3 tools/model/test_universal_torch.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tern_torch as tt  # noqa: E402
import universal_torch as ut  # noqa: E402


def make(act, norm="pre", layout="concatenated", steps=4, seed=0):
    torch.manual_seed(seed)
    cfg = ut.UniversalConfig(d_model=16, heads=2, d_ff=24, src_vocab_size=20, tgt_vocab_size=20,
                             universal_steps=steps, act_threshold=act, norm=norm,
                             sinusoid_layout=layout)
    return cfg, ut.UniversalModel(cfg).double().eval()


def test_names():
    cfg, m = make(0.9)
    names = set(m.state_dict())
    for stack in ("encoder", "decoder"):
        assert f"{stack}.halting.weight" in names and f"{stack}.halting.bias" in names
        assert m.state_dict()[f"{stack}.halting.weight"].shape == (1, 16)
    assert not any(".layers.1." in n for n in names)
    cfg, m = make(0.0)
    assert not any("halting" in n for n in m.state_dict())


def test_incremental_equals_full():
    src = torch.tensor([[5, 6, 7, 2], [8, 9, 2, 0]])
    tgt = torch.tensor([[1, 5, 6, 7], [1, 7, 8, 9]])
    for act in (0.0, 0.9):
        for norm in ("pre", "post"):
            cfg, m = make(act, norm)
            with torch.no_grad():
                enc = m.encode(src)
                mask = m.src_pad_mask(src)
                full = m.decode_logits(enc, tgt, mask)
                cache = {}
                inc = torch.cat([m.project(m.decoder(tgt[:, i:i + 1], enc, mask, cache))
                                 for i in range(tgt.shape[1])], 1)
                assert torch.allclose(full, inc, atol=1e-10), (act, norm)
                assert m.greedy(src, 6) == m.greedy(src, 6, use_cache=False)


def test_act_weights_and_steps():
    # Threshold close to 1 with halting biased low: every position runs all T steps, and the
    # output is still a convex combination (weights sum to 1 via the last-step remainder).
    cfg, m = make(0.99)
    with torch.no_grad():
        m.encoder.halting.weight.zero_()
        m.encoder.halting.bias.fill_(-5.0)       # p ~ 0.0067 per step
        m.act_log = []
        src = torch.tensor([[5, 6, 7, 2]])
        m.encode(src)
        _, steps, _ = m.act_log[0]
        assert steps.tolist() == [[4, 4, 4, 4]]
        # p = 1 at once: halts at step 0 with weight 1 -> output = Block(s_0) (then the final norm).
        m.encoder.halting.bias.fill_(50.0)
        m.act_log = []
        out = m.encode(src)
        assert m.act_log[0][1].tolist() == [[1, 1, 1, 1]]
        x = torch.nn.functional.embedding(src, m.encoder.embed_tokens.weight) * cfg.embedding_scale
        s0 = x + ut.sinusoid_table(4, 16, cfg.sinusoid_layout) + ut.sinusoid_table(1, 16, cfg.sinusoid_layout, 0)
        want = m.encoder.layer_norm(m.encoder.layers[0](s0, None))
        assert torch.allclose(out, want, atol=1e-12)


def test_no_act_is_plain_recurrence():
    cfg, m = make(0.0, "post", "interleaved", steps=3)
    src = torch.tensor([[5, 6, 2]])
    with torch.no_grad():
        x = torch.nn.functional.embedding(src, m.encoder.embed_tokens.weight) * cfg.embedding_scale
        for t in range(3):
            x = m.encoder.layers[0](x + tt.sinusoidal_positions(3, 16) + tt.sinusoidal_positions(1, 16, offset=t), None)
        assert torch.allclose(m.encode(src), x, atol=1e-12)


def test_tables():
    # concatenated = tensor2tensor's get_timing_signal_1d: sin(p * 10000^(-i/(half-1))) | cos(...)
    pe = ut.sinusoid_table(3, 8, "concatenated")
    assert abs(float(pe[2, 1]) - float(torch.sin(torch.tensor(2.0, dtype=torch.float64) * 10000 ** (-1 / 3)))) < 1e-12
    assert torch.equal(ut.sinusoid_table(3, 8, "interleaved"), tt.sinusoidal_positions(3, 8))


if __name__ == "__main__":
    torch.set_num_threads(1)
    test_names()
    test_incremental_equals_full()
    test_act_weights_and_steps()
    test_no_act_is_plain_recurrence()
    test_tables()
    print("ALL OK")
