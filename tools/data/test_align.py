#!/usr/bin/env python3
"""Tests for the data tools: sentence splitting, Gale-Church alignment, the lexical score,
description units, the documentation block pairing, message pairs of catalogs and game text,
build.py's corpus choice and exclusions, and the repeated-word loop count
(run: python3 tools/data/test_align.py, or pytest; no torch, about a second)."""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import align  # noqa: E402
import descriptions  # noqa: E402
import docs  # noqa: E402
import game_text  # noqa: E402
from gettext_mo import message_pairs  # noqa: E402
from quality import corpus_chrf, repeat_loops  # noqa: E402


class Split(unittest.TestCase):
    def test_sentences_and_abbreviations(self):
        self.assertEqual(align.split_sentences("Das ist gut. Es geht z. B. so. Version 2. Ende!"),
                         ["Das ist gut.", "Es geht z. B. so.", "Version 2. Ende!"])
        self.assertEqual(align.split_sentences('He said "No." Then he left. e.g. This stays.'),
                         ['He said "No."', "Then he left. e.g. This stays."])
        self.assertEqual(align.split_sentences("one"), ["one"])


class GaleChurch(unittest.TestCase):
    def test_one_to_one(self):
        de = ["Das ist ein kurzer Satz.", "Hier folgt ein deutlich längerer zweiter Satz mit mehr Wörtern."]
        en = ["This is a short sentence.", "Here follows a clearly longer second sentence with more words."]
        self.assertEqual([b[2] for b in align.gale_church(de, en)], [(1, 1), (1, 1)])

    def test_two_to_one(self):
        # the German text says in two sentences what the English says in one
        de = ["Das Programm ist schnell.", "Es ist auch klein.",
              "Es läuft auf allen Rechnern, die Debian unterstützt, ohne weitere Pakete."]
        en = ["The program is fast and small.",
              "It runs on all computers that Debian supports, without further packages."]
        beads = align.gale_church(de, en)
        self.assertEqual([b[2] for b in beads], [(2, 1), (1, 1)])
        self.assertEqual(beads[0][0], "Das Programm ist schnell. Es ist auch klein.")
        self.assertEqual(align.align_paragraph(" ".join(de), " ".join(en))[0][1],
                         "The program is fast and small.")

    def test_empty(self):
        self.assertEqual(align.gale_church([], ["x"]), [])


class Score(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False, encoding="utf-8")
        self.tmp.write("Haus\thouse\tword\t1\nrot\tred\tword\t1\nKatze\tcat\tword\t1\n"
                       "Das Haus ist rot.\tThe house is red.\tsent\t1\n")
        self.tmp.close()
        self.lex = align.Lexicon.from_ding(self.tmp.name)

    def tearDown(self):
        os.unlink(self.tmp.name)

    def test_share_of_translated_words(self):
        self.assertEqual(self.lex.score("Das Haus ist rot", "The house is red"), 1.0)
        self.assertEqual(self.lex.score("Das Haus ist blau", "The house is blue"), 0.5)
        # suffix strip on the German side (Häuser would not match: no umlaut handling)
        self.assertEqual(self.lex.score("Die Katzen", "the cat"), 1.0)
        # identical words (names, numbers) count; stop words only: None
        self.assertEqual(self.lex.score("Debian Haus", "Debian house"), 1.0)
        self.assertIsNone(self.lex.score("und der die", "and the"))
        self.assertEqual(self.lex.score("Das Haus ist rot", "Completely unrelated words"), 0.0)

    def test_sentences_are_not_lexicon_entries(self):
        self.assertNotIn("das", self.lex.map)
        self.assertEqual(self.lex.map["haus"], {"house"})


class Descriptions(unittest.TestCase):
    def test_units(self):
        desc = ["Kurz", " Erster Absatz,", " zweite Zeile.", " .", " * Punkt eins", " * Punkt zwei",
                "  verbatim line", " Schluss."]
        self.assertEqual(descriptions.units(desc),
                         ("Kurz", ["Erster Absatz, zweite Zeile.", "Punkt eins", "Punkt zwei",
                                   "Schluss."]))


class Docs(unittest.TestCase):
    def test_mallard_blocks_and_pairing(self):
        ns = 'xmlns="http://projectmallard.org/1.0/"'
        page_c = (f'<page {ns}><info><desc>Info desc</desc></info><title>Open a file</title>'
                  '<p>Click <gui>Open</gui>. Then choose the file.</p>'
                  '<p>See <link xref="other"/>.</p><list><item><p>One item.</p></item></list></page>')
        page_de = (f'<page {ns}><info><desc>Info</desc></info><title>Eine Datei öffnen</title>'
                   '<p>Klicken Sie auf <gui>Öffnen</gui>. Wählen Sie dann die Datei.</p>'
                   '<p>Siehe <link xref="other"/>.</p><list><item><p>Ein Eintrag.</p></item></list></page>')
        with tempfile.TemporaryDirectory() as d:
            for sub, text in (("C", page_c), ("de", page_de)):
                os.makedirs(os.path.join(d, sub))
                with open(os.path.join(d, sub, "a.page"), "w", encoding="utf-8") as f:
                    f.write(text)
            c = docs.mallard_blocks(os.path.join(d, "C", "a.page"))
            de = docs.mallard_blocks(os.path.join(d, "de", "a.page"))
        self.assertEqual([t for t, _ in c], ["title", "p", "p", "p"])  # info skipped
        self.assertIsNone(c[2][1])  # empty cross-reference: dropped
        self.assertEqual(list(docs.pair_blocks(de, c)),
                         [("Eine Datei öffnen", "Open a file"),
                          ("Klicken Sie auf Öffnen. Wählen Sie dann die Datei.",
                           "Click Open. Then choose the file."),
                          ("Ein Eintrag.", "One item.")])

    def test_html_blocks(self):
        html = ('<html><head><title>x</title></head><body><h2>Title</h2>'
                '<div class="para">First <code>code</code> para.</div><ul><li><p>Item</p></li></ul>'
                '<pre>verbatim</pre><div class="note"><div class="para">Note.</div></div></body></html>')
        with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False) as f:
            f.write(html)
        try:
            blocks = docs.html_blocks(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(blocks, [("h2", "Title"), ("para", "First para."), ("p", "Item"),
                                  ("para", "Note.")])


class ManPages(unittest.TestCase):
    def test_pairs_by_shape(self):
        import manpages
        en = [((0, ""), "DESCRIPTION"), ((7, ""), "Copy SOURCE to DEST. It is fast."),
              ((7, "-a, --archive"), "-a, --archive same as -dR"),
              ((14, ""), "Make a backup of each existing destination file."),
              ((7, ""), "This paragraph is not translated at all here.")]
        de = [((0, ""), "BESCHREIBUNG"), ((7, ""), "QUELLE nach ZIEL kopieren. Es ist schnell."),
              ((7, "-a, --archive"), "-a, --archive genau wie -dR"),
              ((14, ""), "Eine Sicherungskopie jeder vorhandenen Zieldatei erstellen."),
              ((7, ""), "This paragraph is not translated at all here, too.")]
        self.assertEqual(list(manpages.pairs(de, en)), [
            ("QUELLE nach ZIEL kopieren.", "Copy SOURCE to DEST."),
            ("Es ist schnell.", "It is fast."),
            ("genau wie -dR", "same as -dR"),
            ("Eine Sicherungskopie jeder vorhandenen Zieldatei erstellen.",
             "Make a backup of each existing destination file.")])


class Messages(unittest.TestCase):
    def test_message_pairs(self):
        self.assertEqual(list(message_pairs("_Open the door.\nRun!", "Die Tür _öffnen.\nLauf!")),
                         [("Die Tür öffnen.", "Open the door."), ("Lauf!", "Run!")])
        self.assertEqual(list(message_pairs("One.\nTwo.", "Eins und zwei.")), [])  # lines differ
        self.assertEqual(list(message_pairs("%d coins", "%d Münzen")), [])  # format specifier
        self.assertEqual(list(message_pairs("OK", "OK")), [])  # untranslated
        # an inner hyphen is an option name to corpus v2's filter, a word to corpus v3's; v3
        # also removes Naev's BEL colour codes
        self.assertEqual(list(message_pairs("Re-use it.", "Wiederverwenden.")), [])
        self.assertEqual(list(message_pairs("Re-use it.", "Wiederverwenden.", v3=True)),
                         [("Wiederverwenden.", "Re-use it.")])
        self.assertEqual(list(message_pairs("Use --all.", "Nimm --all.", v3=True)), [])
        self.assertEqual(list(message_pairs("Try -v now.", "Versuch -v.", v3=True)), [])
        self.assertEqual(list(message_pairs("\x07oYou won!\x070", "\x07oDu hast gewonnen!\x070",
                                            v3=True)), [("Du hast gewonnen!", "You won!")])

    def test_hedgewars_lua_table(self):
        lua = ('locale = {\n'
               '["Don\'t be foolish, son."] = "Sei kein Narr, Sohn.", -- A_Classic_Fairytale\n'
               '--      ["Untranslated line."] = "",\n'
               '["He said \\"Go!\\"\\nWe ran."]="Er sagte \\"Los!\\"\\nWir rannten.",\n'
               '["+1 point"] = "+1 Punkt",\n'
               '["You can|use the rope again."] = "Du kannst das|Seil wieder benutzen.",\n'
               '["Caf\\195\\169 time."] = "Kaffeezeit.",\n'
               '}\n')
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False, encoding="utf-8") as f:
            f.write(lua)
        try:
            pairs = list(game_text.hedgewars(f.name))
        finally:
            os.unlink(f.name)
        self.assertEqual(pairs, [("Sei kein Narr, Sohn.", "Don't be foolish, son."),
                                 ('Er sagte "Los!"', 'He said "Go!"'), ("Wir rannten.", "We ran."),
                                 ("+1 Punkt", "+1 point"),
                                 # | is a soft wrap; a decimal escape skips the entry
                                 ("Du kannst das Seil wieder benutzen.", "You can use the rope again.")])

    def test_tuxpaint_stamp(self):
        text = "A frog.\naf.utf8='n Padda.\nde.utf8=Ein Frosch.\nde_CH.utf8=Ein Fresch.\n"
        self.assertEqual(list(game_text.tuxpaint_stamp(text)), [("Ein Frosch.", "A frog.")])
        self.assertEqual(list(game_text.tuxpaint_stamp("A frog.\nfr.utf8=Une grenouille.\n")), [])
        self.assertEqual(list(game_text.tuxpaint_stamp("de.utf8=Ein Frosch.\n")), [])


class BuildCorpus(unittest.TestCase):
    """build.py: --corpus 3 adds sources after corpus 2's without changing its held-out sets,
    and --exclude keeps sentences out of training."""

    def build(self, raw, out, *extra):
        import subprocess
        subprocess.run([sys.executable, os.path.join(HERE, "build.py"), raw, out, "--test-size", "2",
                        "--valid-size", "1", *extra], check=True, capture_output=True)
        res = {}
        for split in ("train", "test", "valid"):
            with open(os.path.join(out, split + ".de"), encoding="utf-8") as f:
                res[split] = f.read().splitlines()
        return res

    def test_corpus_and_exclude(self):
        ding = ["Das Haus ist sehr alt.\tThe house is very old.\tsent\t1",
                "Der Hund schläft im Garten.\tThe dog sleeps in the garden.\tsent\t1",
                "Wir essen heute keinen Fisch.\tWe do not eat fish today.\tsent\t1",
                "Die Katze trinkt gerne Milch.\tThe cat likes to drink milk.\tsent\t1",
                "Haus\thouse\tword\t1", "alt\told\tword\t1", "Hund\tdog\tword\t1",
                "Schiff\tship\tword\t1", "bereit\tready\tword\t1"]
        naev = ["Guten Morgen!\tGood morning!\tnaev",
                "Das Schiff ist bereit.\tThe ship is ready.\tnaev",
                "Das Schiff ist sehr alt.\tWe do not eat fish today.\tnaev"]  # misaligned
        with tempfile.TemporaryDirectory() as d:
            raw = os.path.join(d, "raw")
            os.makedirs(raw)
            with open(os.path.join(raw, "ding.tsv"), "w", encoding="utf-8") as f:
                f.write("\n".join(ding) + "\n")
            with open(os.path.join(raw, "naev.tsv"), "w", encoding="utf-8") as f:
                f.write("\n".join(naev) + "\n")
            excl = os.path.join(d, "judged.de")
            with open(excl, "w", encoding="utf-8") as f:
                f.write("Guten Morgen!\n")
            c2 = self.build(raw, os.path.join(d, "c2"))
            c3 = self.build(raw, os.path.join(d, "c3"), "--corpus", "3")
            c3x = self.build(raw, os.path.join(d, "c3x"), "--corpus", "3", "--exclude", excl)
        self.assertEqual(len(c2["test"]), 2)
        self.assertEqual((c2["test"], c2["valid"]), (c3["test"], c3["valid"]))
        self.assertNotIn("Guten Morgen!", c2["train"])
        self.assertIn("Guten Morgen!", c3["train"])
        self.assertIn("Das Schiff ist bereit.", c3["train"])
        # the new source goes through the alignment filter like the others
        self.assertEqual(sorted(set(c3["train"]) - set(c2["train"])),
                         ["Das Schiff ist bereit.", "Guten Morgen!"])
        self.assertNotIn("Guten Morgen!", c3x["train"])
        self.assertIn("Das Schiff ist bereit.", c3x["train"])
        self.assertEqual((c3x["test"], c3x["valid"]), (c2["test"], c2["valid"]))


class UsageErrors(unittest.TestCase):
    """The data tools' exit messages: a wrong kind, option or corpus is named, exit status not 0."""

    def run_tool(self, argv, env=None):
        import subprocess
        return subprocess.run(argv, capture_output=True, text=True, env=env)

    def test_game_text_unknown_kind(self):
        r = self.run_tool([sys.executable, os.path.join(HERE, "game_text.py"), "wesnoth", "x"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("game_text.py: unknown kind 'wesnoth' (hedgewars, tuxpaint)", r.stderr)

    def test_gettext_mo_unknown_option(self):
        r = self.run_tool([sys.executable, os.path.join(HERE, "gettext_mo.py"), "--v4", "a", "b"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("gettext_mo.py: unknown option --v4", r.stderr)

    def test_prepare_corpus_value(self):
        env = dict(os.environ, CORPUS="4")
        with tempfile.TemporaryDirectory() as d:
            r = self.run_tool(["sh", os.path.join(HERE, "prepare.sh"), d], env=env)
            self.assertEqual(os.listdir(d), [])  # refused before anything is fetched or written
        self.assertEqual(r.returncode, 2)
        self.assertIn("prepare.sh: CORPUS must be 2 or 3, not '4'", r.stderr)


class ChrF(unittest.TestCase):
    def test_hand_derived(self):
        self.assertAlmostEqual(corpus_chrf(["a b c"], ["abc"]), 100.0)  # whitespace removed
        # "ab" vs "abc": 1-grams P 2/2 R 2/3, 2-grams P 1/1 R 1/2, 3-grams absent from the
        # hypothesis (order not counted): P 1, R 7/12, F2 = 5PR / (4P + R) = 35/55
        self.assertAlmostEqual(corpus_chrf(["ab"], ["abc"]), 100.0 * 35 / 55)
        # statistics are summed over the corpus before the averages
        # 1-grams P 3/3 R 3/4, 2-grams P 1/1 R 1/2: P 1, R 5/8, F2 = 25/37
        self.assertAlmostEqual(corpus_chrf(["ab", "x"], ["abc", "x"]), 100.0 * 25 / 37)
        self.assertEqual(corpus_chrf(["xyz"], ["abc"]), 0.0)


class Loops(unittest.TestCase):
    def test_repeat_loops(self):
        self.assertEqual(repeat_loops("the the the the house"), 1)
        self.assertEqual(repeat_loops("the house, the house, the house, the house"), 1)
        self.assertEqual(repeat_loops("very very good"), 0)
        self.assertEqual(repeat_loops("Yes, yes, yes."), 0)
        self.assertEqual(repeat_loops(""), 0)


if __name__ == "__main__":
    unittest.main()
