#!/usr/bin/env python3
"""Tests for tools/data/bleu.py (run: python3 tools/data/test_bleu.py, or pytest).

Expected values are derived by hand in the comments (and one published sacreBLEU example).
"""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bleu import corpus_bleu, tokenize_13a  # noqa: E402


class TestBLEU(unittest.TestCase):
    def test_identical_is_100(self):
        s = ["The cat sat on the mat.", "It's 3.14, isn't it?"]
        self.assertAlmostEqual(corpus_bleu(s, [s]).score, 100.0, places=10)

    def test_manual_precisions(self):
        # hyp: the cat sat on the mat | ref: the cat sat on a mat   (6 tokens each, BP = 1)
        # 1-grams 5/6 (second "the" clipped), 2-grams 3/5, 3-grams 2/4, 4-grams 1/3
        # BLEU = (5/6 * 3/5 * 1/2 * 1/3)^(1/4) = (1/12)^(1/4)
        b = corpus_bleu(["the cat sat on the mat"], [["the cat sat on a mat"]])
        self.assertEqual(b.counts, [5, 3, 2, 1])
        self.assertEqual(b.totals, [6, 5, 4, 3])
        self.assertAlmostEqual(b.bp, 1.0)
        self.assertAlmostEqual(b.score, 100 * (1 / 12) ** 0.25, places=10)  # 53.7285

    def test_corpus_level_aggregation(self):
        # the case above plus an identical 4-token sentence: counts are summed before the mean
        # 1: 9/10, 2: 6/8, 3: 4/6, 4: 2/4
        b = corpus_bleu(["the cat sat on the mat", "a b c d"],
                        [["the cat sat on a mat", "a b c d"]])
        self.assertEqual(b.counts, [9, 6, 4, 2])
        self.assertEqual(b.totals, [10, 8, 6, 4])
        self.assertAlmostEqual(b.score, 100 * (0.9 * 0.75 * (4 / 6) * 0.5) ** 0.25, places=10)

    def test_exp_smoothing(self):
        # hyp a b c d | ref a b x d: 1-grams 3/4, 2-grams 1/3, 3-grams 0/2, 4-grams 0/1
        # 'exp' smoothing: first zero order -> 100/(2*2) = 25%, second -> 100/(4*1) = 25%
        # BLEU = (3/4 * 1/3 * 1/4 * 1/4)^(1/4) = (1/64)^(1/4) = 35.355...
        b = corpus_bleu(["a b c d"], [["a b x d"]])
        self.assertAlmostEqual(b.precisions[2], 25.0)
        self.assertAlmostEqual(b.precisions[3], 25.0)
        self.assertAlmostEqual(b.score, 100 * (1 / 64) ** 0.25, places=10)

    def test_brevity_penalty(self):
        # all precisions 100%, hyp_len 4 < ref_len 6: BP = exp(1 - 6/4)
        b = corpus_bleu(["a b c d"], [["a b c d e f"]])
        self.assertAlmostEqual(b.bp, math.exp(-0.5))
        self.assertAlmostEqual(b.score, 100 * math.exp(-0.5), places=10)

    def test_too_short_is_zero(self):
        # no 3-grams at all in the hypothesis: sacreBLEU's loop stops, precision stays 0 -> 0
        self.assertEqual(corpus_bleu(["the cat"], [["the cat sat on the mat"]]).score, 0.0)
        self.assertEqual(corpus_bleu([""], [["the cat"]]).score, 0.0)

    def test_tokenizer_13a(self):
        self.assertEqual(tokenize_13a("Hello, world! It's 3.14 and 1,000-2."),
                         "Hello , world ! It's 3.14 and 1,000 - 2 .")
        self.assertEqual(tokenize_13a('He said "no" (twice) &amp; left.'),
                         'He said " no " ( twice ) & left .')
        self.assertEqual(tokenize_13a("e-mail a/b x:y"), "e-mail a / b x : y")

    def test_case_sensitive(self):
        self.assertLess(corpus_bleu(["The Cat sat on the mat"], [["the cat sat on the mat"]]).score,
                        100.0)

    def test_sacrebleu_readme_example(self):
        # sacreBLEU README: BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944
        # hyp_len = 17 ref_len = 18), two reference streams
        refs = [["The dog bit the man.", "It was not unexpected.", "The man bit him first."],
                ["The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."]]
        sys_ = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
        b = corpus_bleu(sys_, refs)
        self.assertEqual((b.sys_len, b.ref_len), (17, 18))
        self.assertEqual([round(p, 1) for p in b.precisions], [82.4, 50.0, 45.5, 37.5])
        self.assertAlmostEqual(b.score, 48.53, places=2)


if __name__ == "__main__":
    unittest.main()
