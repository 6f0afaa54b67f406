#!/bin/sh
# Build the German-English demo corpus from Debian packages (see examples/translation/DATA.md).
#   sudo tools/data/prepare.sh [OUT_DIR]        (default /var/cache/tern/data)
# Steps: install the source packages (apt-get, needs root), extract pairs from
#   1. Ding (trans-de-en: /usr/share/trans/de-en)                      -> raw/ding.tsv
#   2. LibreOffice help (libreoffice-help-de/-en-us: HTML under
#      /usr/share/libreoffice/help/{de,en-US}/text, aligned by file + paragraph id) -> raw/lohelp.tsv
#   3. gettext catalogs /usr/share/locale/de/LC_MESSAGES/*.mo            -> raw/gettext.tsv
#   4. Debian package descriptions: apt's Translation-de / Translation-en indexes, fetched with a
#      private apt configuration (OUT/apt: its own lists and cache, Acquire::Languages de,en;
#      /etc/apt is not touched), matched by Description-md5            -> raw/descriptions.tsv
#   5. game catalogs (.mo) of cataclysm-dda-data, widelands-data, wesnoth-1.16-data
#                                                 -> raw/{cataclysm,widelands,wesnoth}.tsv
#   6. GNOME help (gnome-user-docs, Mallard C/ vs de/)                  -> raw/gnome_help.tsv
#   7. Debian Administrator's Handbook (debian-handbook, HTML en-US vs de-DE) -> raw/handbook.tsv
#   8. manpages-de vs the English man pages installed on the machine (groff-rendered, paragraph
#      shapes aligned with difflib, then sentences)                     -> raw/manpages.tsv
#   (5-8: the .debs are fetched with `apt-get download` into OUT/debs and only the needed files
#   are unpacked with dpkg-deb into OUT/pkgroot; nothing is installed. ~600 MB of downloads,
#   widelands-data alone 381 MB.)
#   9. only with CORPUS=3 (the next model's corpus; the default CORPUS=2 is the shipped
#      model's): game dialogue from the .mo catalogs of the 16 Wesnoth campaigns
#      (wesnoth-1.16-{did,...,utbs}), freedroidrpg-data, naev-data and warzone2100-data, the
#      Lua table of hedgewars-data, the stamp descriptions of tuxpaint-stamps-default, and the
#      GIMP manual (gimp-help-de/-en, HTML block by block); their messages are filtered by
#      corpus v3's rules (gettext_mo.py --v3: hyphenated words kept, which v2's sources drop)
#                    -> raw/{wesnoth_campaigns,freedroidrpg,naev,warzone2100,hedgewars,tuxpaint,gimp_help}.tsv
#      (another ~1.3 GB of downloads). The held-out sets are the same as CORPUS=2's; the
#      judged sentences (testset/everyday_short.de) are kept out of its training set.
# then clean/dedupe/filter/split (build.py, fixed seed: Ding test/valid as before, plus the
# everyday and technical test/valid sets), and copy the held-out sets into
# examples/translation/testset/. SPM=1 also trains a new joint SentencePiece model (SPM_VOCAB,
# default 16000 unigram pieces, the shipped model's since v2's accelerator run; pad=0 bos=1 eos=2
# unk=3) and writes it to SPM_OUT (default: it replaces examples/translation/spm.model); the
# default SPM=0 keeps the shipped one, so that training continues from the committed weights.
# (libopenblas0-serial is for training speed: python3-torch otherwise uses the reference BLAS.)
# Everything runs niced; deterministic for a given set of package versions.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-/var/cache/tern/data}
PY=/usr/bin/python3
SPM=${SPM:-0}
CORPUS=${CORPUS:-2}  # 2: the shipped model's corpus; 3: with step 9's sources
case $CORPUS in 2 | 3) ;; *) echo "prepare.sh: CORPUS must be 2 or 3, not '$CORPUS'" >&2; exit 2 ;; esac
SPM_VOCAB=${SPM_VOCAB:-16000}  # with SPM=1: pieces of the new model (16000: the shipped one, v2)
SPM_OUT=${SPM_OUT:-$ROOT/examples/translation/spm.model}  # with SPM=1: where the new model goes
mkdir -p "$OUT/raw"

if [ "$(id -u)" = 0 ]; then
  apt-get -q update >/dev/null  # a fresh machine has no package lists (apt-get download needs them too)
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    trans-de-en libreoffice-help-de libreoffice-help-en-us libopenblas0-serial \
    python3-torch python3-sentencepiece python3-numpy sentencepiece >/dev/null
else
  echo "not root: assuming trans-de-en libreoffice-help-de libreoffice-help-en-us are installed" >&2
fi

nice "$PY" "$HERE/ding.py" /usr/share/trans/de-en >"$OUT/raw/ding.tsv"
nice "$PY" "$HERE/lohelp.py" /usr/share/libreoffice/help >"$OUT/raw/lohelp.tsv"
nice "$PY" "$HERE/gettext_mo.py" /usr/share/locale/de/LC_MESSAGES "$OUT/raw/gettext_pkgs.tsv" >"$OUT/raw/gettext.tsv"
dpkg-query -W trans-de-en libreoffice-help-de libreoffice-help-en-us >"$OUT/raw/package_versions.txt"

# 4. package descriptions (private apt state: the image's apt config fetches no translations)
APTD=$OUT/apt
mkdir -p "$APTD/lists/partial" "$APTD/cache/archives/partial" "$APTD/parts"
printf '%s\n' "Dir::Etc::Parts \"$APTD/parts\";" "Dir::State::Lists \"$APTD/lists\";" \
  "Dir::Cache \"$APTD/cache\";" 'Acquire::Languages { "de"; "en"; };' \
  'Acquire::GzipIndexes "true";' >"$APTD/apt.conf"
APT_CONFIG=$APTD/apt.conf apt-get -q update >"$OUT/raw/apt-update.log" 2>&1
ls "$APTD/lists" | grep Translation >>"$OUT/raw/package_versions.txt"
nice "$PY" "$HERE/descriptions.py" "$APTD/lists" >"$OUT/raw/descriptions.tsv"

# 5-7. download and unpack (not install) the game data and documentation packages
DEBS="cataclysm-dda-data widelands-data wesnoth-1.16-data gnome-user-docs debian-handbook manpages-de"
mkdir -p "$OUT/debs" "$OUT/pkgroot"
(cd "$OUT/debs" && apt-get -q download $DEBS >"$OUT/raw/apt-download.log" 2>&1)
unpack() {  # unpack NAME PACKAGE PATTERN...
  d=$OUT/pkgroot/$1
  deb=$(ls "$OUT/debs/$2"_*.deb | tail -n 1)
  echo "$(basename "$deb")" >>"$OUT/raw/package_versions.txt"
  rm -rf "$d"
  mkdir -p "$d"
  cp_pkg=$2
  shift 2
  # the license file where the package has one (gimp-help-de's is gimp-help-common's)
  # (grep reads the whole listing: with -q it would stop early and dpkg-deb complain)
  if dpkg-deb -c "$deb" | grep " \./usr/share/doc/$cp_pkg/copyright\$" >/dev/null; then
    set -- "$@" "./usr/share/doc/$cp_pkg/copyright"
  fi
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$d" --wildcards "$@"
}
unpack cataclysm cataclysm-dda-data './usr/share/locale/de/*'
unpack wesnoth wesnoth-1.16-data './usr/share/games/wesnoth/1.16/locale/de/*'
unpack widelands widelands-data '*/locale/de/*'
unpack gnome-user-docs gnome-user-docs './usr/share/help/C/*.page' './usr/share/help/de/*.page'
unpack debian-handbook debian-handbook './usr/share/doc/debian-handbook/html/de-DE/*.html' \
  './usr/share/doc/debian-handbook/html/en-US/*.html'
unpack manpages-de manpages-de './usr/share/man/de/*'
R=$OUT/pkgroot
nice "$PY" "$HERE/gettext_mo.py" "$R/cataclysm/usr/share/locale/de/LC_MESSAGES" /dev/null \
  cataclysm-dda-data >"$OUT/raw/cataclysm.tsv"
nice "$PY" "$HERE/gettext_mo.py" "$R/widelands/usr/share/games/widelands/data/locale/de/LC_MESSAGES" \
  /dev/null widelands-data >"$OUT/raw/widelands.tsv"
nice "$PY" "$HERE/gettext_mo.py" "$R/wesnoth/usr/share/games/wesnoth/1.16/locale/de/LC_MESSAGES" \
  /dev/null wesnoth-1.16-data >"$OUT/raw/wesnoth.tsv"
nice "$PY" "$HERE/docs.py" mallard "$R/gnome-user-docs/usr/share/help" >"$OUT/raw/gnome_help.tsv"
nice "$PY" "$HERE/docs.py" html "$R/debian-handbook/usr/share/doc/debian-handbook/html/en-US" \
  "$R/debian-handbook/usr/share/doc/debian-handbook/html/de-DE" >"$OUT/raw/handbook.tsv"
# German man pages vs the English pages installed here (which ones exist depends on the machine)
nice "$PY" "$HERE/manpages.py" "$R/manpages-de/usr/share/man/de" /usr/share/man >"$OUT/raw/manpages.tsv"

# 9. corpus 3's sources
EXCLUDE=/dev/null  # CORPUS=3: the judged sentences (a file of sentences kept out of training)
if [ "$CORPUS" = 3 ]; then
  CAMPAIGNS="did dm dw ei httt l low nr sof sota sotbe thot trow tsg ttb utbs"
  DEBS3="freedroidrpg-data naev-data warzone2100-data hedgewars-data tuxpaint-stamps-default"
  DEBS3="$DEBS3 gimp-help-de gimp-help-en gimp-help-common"
  for c in $CAMPAIGNS; do DEBS3="$DEBS3 wesnoth-1.16-$c"; done
  (cd "$OUT/debs" && apt-get -q download $DEBS3 >>"$OUT/raw/apt-download.log" 2>&1)
  rm -rf "$OUT/pkgroot/wesnoth_campaigns"
  for c in $CAMPAIGNS; do  # every campaign's catalog into one directory (unpack would clear it)
    deb=$(ls "$OUT/debs/wesnoth-1.16-${c}"_*.deb | tail -n 1)
    echo "$(basename "$deb")" >>"$OUT/raw/package_versions.txt"
    mkdir -p "$OUT/pkgroot/wesnoth_campaigns"
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$OUT/pkgroot/wesnoth_campaigns" --wildcards \
      './usr/share/games/wesnoth/1.16/locale/de/*'
  done
  unpack freedroidrpg freedroidrpg-data './usr/share/locale/de/*'
  unpack naev naev-data './usr/share/naev/dat/gettext/de/*'
  unpack warzone2100 warzone2100-data './usr/share/locale/de/*'
  unpack hedgewars hedgewars-data './usr/share/games/hedgewars/Data/Locale/de.lua'
  unpack tuxpaint tuxpaint-stamps-default './usr/share/tuxpaint/stamps/*.txt'
  unpack gimp-help-de gimp-help-de './usr/share/gimp/2.0/help/de/*.html'
  unpack gimp-help-en gimp-help-en './usr/share/gimp/2.0/help/en/*.html'
  unpack gimp-help-common gimp-help-common  # its license file only (unpack adds it)
  nice "$PY" "$HERE/gettext_mo.py" "$R/wesnoth_campaigns/usr/share/games/wesnoth/1.16/locale/de/LC_MESSAGES" \
    /dev/null wesnoth-1.16-campaigns --v3 >"$OUT/raw/wesnoth_campaigns.tsv"
  nice "$PY" "$HERE/gettext_mo.py" "$R/freedroidrpg/usr/share/locale/de/LC_MESSAGES" /dev/null \
    freedroidrpg-data --v3 >"$OUT/raw/freedroidrpg.tsv"
  nice "$PY" "$HERE/gettext_mo.py" "$R/naev/usr/share/naev/dat/gettext/de/LC_MESSAGES" /dev/null \
    naev-data --v3 >"$OUT/raw/naev.tsv"
  nice "$PY" "$HERE/gettext_mo.py" "$R/warzone2100/usr/share/locale/de/LC_MESSAGES" /dev/null \
    warzone2100-data --v3 >"$OUT/raw/warzone2100.tsv"
  nice "$PY" "$HERE/game_text.py" hedgewars "$R/hedgewars/usr/share/games/hedgewars/Data/Locale/de.lua" \
    >"$OUT/raw/hedgewars.tsv"
  nice "$PY" "$HERE/game_text.py" tuxpaint "$R/tuxpaint/usr/share/tuxpaint/stamps" >"$OUT/raw/tuxpaint.tsv"
  nice "$PY" "$HERE/docs.py" html "$R/gimp-help-en/usr/share/gimp/2.0/help/en" \
    "$R/gimp-help-de/usr/share/gimp/2.0/help/de" >"$OUT/raw/gimp_help.tsv"
  EXCLUDE=$ROOT/examples/translation/testset/everyday_short.de
fi

nice "$PY" "$HERE/build.py" "$OUT/raw" "$OUT" --corpus "$CORPUS" --exclude "$EXCLUDE"

mkdir -p "$ROOT/examples/translation/testset"
for s in test test_everyday test_technical valid_everyday valid_technical; do
  cp "$OUT/$s.de" "$OUT/$s.en" "$ROOT/examples/translation/testset/"
done

if [ "$SPM" = 1 ]; then
  mkdir -p "$OUT/spm"
  cat "$OUT/train.de" "$OUT/train.en" >"$OUT/spm/input.txt"
  (cd "$OUT/spm" && nice spm_train --input=input.txt --model_prefix=spm --vocab_size="$SPM_VOCAB" \
    --model_type=unigram --character_coverage=0.9999 --pad_id=0 --bos_id=1 --eos_id=2 --unk_id=3 \
    --input_sentence_size=2000000 --shuffle_input_sentence=true --num_threads=1 \
    --seed_sentencepiece_size=1000000 >spm.log 2>&1)
  cp "$OUT/spm/spm.model" "$SPM_OUT"
fi
echo "corpus in $OUT (counts: $OUT/counts.json)"
