#!/bin/sh
# Build the German-English demo corpus from Debian packages (see examples/translation/DATA.md).
#   sudo tools/data/prepare.sh [OUT_DIR]        (default /var/cache/tern/data)
# Steps: install the source packages (apt-get, needs root), extract pairs from
#   1. Ding (trans-de-en: /usr/share/trans/de-en)                      -> raw/ding.tsv
#   2. LibreOffice help (libreoffice-help-de/-en-us: HTML under
#      /usr/share/libreoffice/help/{de,en-US}/text, aligned by file + paragraph id) -> raw/lohelp.tsv
#   3. gettext catalogs /usr/share/locale/de/LC_MESSAGES/*.mo            -> raw/gettext.tsv
# then clean/dedupe/filter/split (build.py, fixed seed), train the joint SentencePiece model
# (8000 unigram pieces, pad=0 bos=1 eos=2 unk=3) unless SPM=0, and copy the held-out test set
# and spm.model into examples/translation/.
# (libopenblas0-serial is for training speed: python3-torch otherwise uses the reference BLAS.)
# Everything runs niced; deterministic for a given set of installed package versions.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-/var/cache/tern/data}
PY=/usr/bin/python3
SPM=${SPM:-1}
mkdir -p "$OUT/raw"

if [ "$(id -u)" = 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    trans-de-en libreoffice-help-de libreoffice-help-en-us libopenblas0-serial >/dev/null
else
  echo "not root: assuming trans-de-en libreoffice-help-de libreoffice-help-en-us are installed" >&2
fi

nice "$PY" "$HERE/ding.py" /usr/share/trans/de-en >"$OUT/raw/ding.tsv"
nice "$PY" "$HERE/lohelp.py" /usr/share/libreoffice/help >"$OUT/raw/lohelp.tsv"
nice "$PY" "$HERE/gettext_mo.py" /usr/share/locale/de/LC_MESSAGES "$OUT/raw/gettext_pkgs.tsv" >"$OUT/raw/gettext.tsv"
dpkg-query -W trans-de-en libreoffice-help-de libreoffice-help-en-us >"$OUT/raw/package_versions.txt"
nice "$PY" "$HERE/build.py" "$OUT/raw" "$OUT"

mkdir -p "$ROOT/examples/translation/testset"
cp "$OUT/test.de" "$OUT/test.en" "$ROOT/examples/translation/testset/"

if [ "$SPM" = 1 ]; then
  mkdir -p "$OUT/spm"
  cat "$OUT/train.de" "$OUT/train.en" >"$OUT/spm/input.txt"
  (cd "$OUT/spm" && nice spm_train --input=input.txt --model_prefix=spm --vocab_size=8000 \
    --model_type=unigram --character_coverage=0.9999 --pad_id=0 --bos_id=1 --eos_id=2 --unk_id=3 \
    --input_sentence_size=2000000 --shuffle_input_sentence=true --num_threads=1 \
    --seed_sentencepiece_size=1000000 >spm.log 2>&1)
  cp "$OUT/spm/spm.model" "$ROOT/examples/translation/spm.model"
fi
echo "corpus in $OUT (counts: $OUT/counts.json)"
