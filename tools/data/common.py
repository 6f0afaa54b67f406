"""Shared text normalisation for the data pipeline (see tools/data/prepare.sh)."""
import re
import unicodedata

_WS = re.compile(r"\s+")
# Typographic quotes/apostrophes are used inconsistently in the sources; map them to ASCII so
# the model (and BLEU) does not have to guess which variant a reference used.
_TRANS = str.maketrans({
    "\u2019": "'", "\u2018": "'", "\u201a": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"',
    "\u00a0": " ", "\u202f": " ", "\u2009": " ", "\u200b": "", "\u00ad": "",
    "\u2013": "-", "\u2014": "-",
})


def clean(text: str) -> str:
    text = unicodedata.normalize("NFC", text)
    text = text.translate(_TRANS)
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C" or ch in "\t\n")
    return _WS.sub(" ", text).strip()


def key(text: str) -> str:
    """Loose identity used to keep test sentences out of training 'in any form'."""
    return re.sub(r"[\W_]+", "", text.lower())


def is_sentence(text: str) -> bool:
    return bool(re.search(r"[.!?]\"?$", text)) and text[:1].isupper()
