// The JavaScript side of the tokenizer agreement test (agreement_test.sh), with Hugging Face's
// @huggingface/tokenizers (pure JavaScript, installed from package-lock.json by `npm ci`).
//
//   node agreement.mjs texts CORPUS TEXTS_JSONL
//       The texts to compare, one JSON string per line: every line of the corpus, then the
//       lines in blocks of 16 joined by "\n" (even blocks) or "\r\n" (odd blocks), so that line
//       breaks and their runs are tokenized too, then 4000 seeded random texts of the corpus's
//       code points, line breaks, contractions and special tokens.
//   node agreement.mjs compare TOKENIZER_JSON TEXTS_JSONL TERN_IDS_JSONL
//       Encodes every text with the tokenizer.json (add_special_tokens false, and true) and
//       requires tern's ids to be the same, and tern's ids to decode back to the text exactly
//       (to its NFC, with the NFC normalizer).
//       Exit 1 on any difference, printing the first ones.
//
// Known differences of this package from the Rust tokenizers (which tern follows), kept out
// of the comparison: its Digits pre-tokenizer splits ASCII digits only (JavaScript's \d), the
// Rust one every \p{N} character (char::is_numeric), so for a tokenizer with a Digits step the
// texts with other numbers are left out and counted; the corpus has no U+FEFF or U+0085, where
// its ByteLevel split (JavaScript's \s) and White_Space differ.
import { readFileSync, writeFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";

function readJsonLines(path) {
  const text = readFileSync(path, "utf8");
  return text.split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l));
}

// A seeded 32-bit PRNG (mulberry32), so the random texts are the same on every run.
function random(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function texts(corpusPath, outPath) {
  const lines = readFileSync(corpusPath, "utf8").split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const out = [...lines];
  for (let k = 0; k * 16 < lines.length; ++k) {
    out.push(lines.slice(k * 16, k * 16 + 16).join(k % 2 === 0 ? "\n" : "\r\n"));
  }
  const blocks = out.length - lines.length;
  // Random texts from the corpus's own code points (so only characters the corpus admits), line
  // breaks, contractions and the fixtures' special tokens, in orders no real text has.
  const pool = [...new Set([...lines.join("")])];
  pool.push("\n", "\r\n", "'s", "'LL", "<|endoftext|>", "<|im_start|>", "<|im_end|>",
            "<|begin_of_text|>", "<mask>", "<sep>", "<tool_call>", "</tool_call>");
  // Every second one without numbers other than ASCII digits, which the Digits comparison
  // leaves out (see compare).
  const asciiDigits = pool.filter((c) => !/[^\P{N}0-9]/u.test(c));
  const next = random(15);
  for (let i = 0; i < 4000; ++i) {
    const from = i % 2 === 0 ? pool : asciiDigits;
    let t = "";
    for (let n = Math.floor(next() * 60); n > 0; --n) t += from[Math.floor(next() * from.length)];
    out.push(t);
  }
  writeFileSync(outPath, out.map((t) => JSON.stringify(t)).join("\n") + "\n");
  console.log(`${out.length} texts (${lines.length} lines, ${blocks} blocks, 4000 random)`);
}

function hasDigits(node) {
  if (Array.isArray(node)) return node.some(hasDigits);
  if (node && typeof node === "object") {
    return node.type === "Digits" || Object.values(node).some(hasDigits);
  }
  return false;
}

function same(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function compare(tokenizerPath, textsPath, ternPath) {
  const json = JSON.parse(readFileSync(tokenizerPath, "utf8"));
  const tokenizer = new Tokenizer(json, { clean_up_tokenization_spaces: false });
  const all = readJsonLines(textsPath);
  const tern = readJsonLines(ternPath);
  if (tern.length !== all.length) {
    console.log(`FAILED: tern encoded ${tern.length} texts, there are ${all.length}`);
    return 1;
  }
  const digits = hasDigits(json.pre_tokenizer);
  // With the NFC normalizer the round trip gives the text in NFC (String.prototype.normalize,
  // ICU's implementation), between the added tokens.
  const nfc = json.normalizer?.type === "NFC";
  const otherNumber = /[^\P{N}0-9]/u;
  let compared = 0;
  let skipped = 0;
  const failures = [];
  // The text a round trip gives: the white space an lstrip token absorbs before it, or an
  // rstrip token after it, is gone.
  const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const strips = (json.added_tokens ?? []).filter((a) => a.lstrip || a.rstrip);
  const withoutStrippedSpace = (text) => {
    for (const a of strips) {
      const c = escape(a.content);
      if (a.lstrip) text = text.replace(new RegExp(`\\p{White_Space}+(?=${c})`, "gu"), "");
      if (a.rstrip) text = text.replace(new RegExp(`(?<=${c})\\p{White_Space}+`, "gu"), "");
    }
    return text;
  };
  // With NFC, the text between the added tokens that are not normalized (found leftmost-
  // longest) comes back in NFC, those tokens as they are: a mark after a token does not
  // compose with the token's last character.
  const plainTokens = (json.added_tokens ?? []).filter((a) => !a.normalized).map((a) => a.content);
  const nfcRoundTrip = (text) => {
    let out = "";
    let gap = "";
    for (let pos = 0; pos < text.length; ) {
      let best = "";
      for (const c of plainTokens) {
        if (c.length > best.length && text.startsWith(c, pos)) best = c;
      }
      if (best === "") {
        gap += text[pos++];
        continue;
      }
      out += gap.normalize("NFC") + best;
      gap = "";
      pos += best.length;
    }
    return out + gap.normalize("NFC");
  };
  const show = (ids) => JSON.stringify(ids.map((id) => tokenizer.id_to_token(id)));
  for (let i = 0; i < all.length; ++i) {
    const text = all[i];
    if (digits && otherNumber.test(text)) {
      ++skipped;
      continue;
    }
    ++compared;
    const js = tokenizer.encode(text, { add_special_tokens: false }).ids;
    const jsSpecial = tokenizer.encode(text, { add_special_tokens: true }).ids;
    const t = tern[i];
    let problem = null;
    if (!same(js, t.ids)) {
      problem = `ids differ:\n    js   ${JSON.stringify(js)}\n         ${show(js)}` +
        `\n    tern ${JSON.stringify(t.ids)}\n         ${show(t.ids)}`;
    } else if (!same(jsSpecial, t.special)) {
      problem = `ids with special tokens differ: js ${JSON.stringify(jsSpecial)}, ` +
        `tern ${JSON.stringify(t.special)}`;
    } else if (t.ids.length > 0) {
      const back = tokenizer.decode(t.ids, { skip_special_tokens: false });
      const expected = nfc ? nfcRoundTrip(withoutStrippedSpace(text)) : withoutStrippedSpace(text);
      if (back !== expected) {
        problem = `tern's ids decode (JavaScript) to ${JSON.stringify(back)}, not ` +
          JSON.stringify(expected);
      }
    }
    if (problem) failures.push(`  text ${i} ${JSON.stringify(text)}: ${problem}`);
  }
  const name = tokenizerPath;
  const note = skipped ? ` (${skipped} texts with non-ASCII numbers left out: Digits step)` : "";
  if (failures.length > 0) {
    console.log(`FAILED: ${name}: ${failures.length} of ${compared} texts differ${note}`);
    for (const f of failures.slice(0, 10)) console.log(f);
    return 1;
  }
  if (compared === 0) {
    console.log(`FAILED: ${name}: no text compared`);
    return 1;
  }
  console.log(`ok: ${name}: ${compared} texts, identical ids (with and without special ` +
    `tokens), exact round trips${note}`);
  return 0;
}

const [command, ...args] = process.argv.slice(2);
if (command === "texts" && args.length === 2) {
  texts(...args);
} else if (command === "compare" && args.length === 3) {
  process.exitCode = compare(...args);
} else {
  console.error("usage: agreement.mjs texts CORPUS OUT | compare TOKENIZER_JSON TEXTS TERN_IDS");
  process.exitCode = 2;
}
