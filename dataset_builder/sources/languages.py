"""Language codes and names for the multilingual sources (ISO 639-3 / FLORES codes -> ISO 639-1, English name)."""
from __future__ import annotations

# ISO 639-3 -> (ISO 639-1 where one exists, English name). Covers FLORES-200 devtest in the mirror
# and the Tatoeba languages used here.
LANGUAGES = {
    "afr": ("af", "Afrikaans"), "amh": ("am", "Amharic"), "ara": ("ar", "Arabic"), "arb": ("ar", "Arabic"),
    "ben": ("bn", "Bengali"), "bul": ("bg", "Bulgarian"), "cat": ("ca", "Catalan"), "ces": ("cs", "Czech"),
    "cmn": ("zh", "Chinese"), "dan": ("da", "Danish"), "deu": ("de", "German"), "ell": ("el", "Greek"),
    "eng": ("en", "English"), "est": ("et", "Estonian"), "eus": ("eu", "Basque"), "fin": ("fi", "Finnish"),
    "fra": ("fr", "French"), "gle": ("ga", "Irish"), "glg": ("gl", "Galician"), "heb": ("he", "Hebrew"),
    "hin": ("hi", "Hindi"), "hrv": ("hr", "Croatian"), "hun": ("hu", "Hungarian"), "hye": ("hy", "Armenian"),
    "ind": ("id", "Indonesian"), "isl": ("is", "Icelandic"), "ita": ("it", "Italian"), "jpn": ("ja", "Japanese"),
    "kat": ("ka", "Georgian"), "kaz": ("kk", "Kazakh"), "kor": ("ko", "Korean"), "lit": ("lt", "Lithuanian"),
    "lvs": ("lv", "Latvian"), "mkd": ("mk", "Macedonian"), "mar": ("mr", "Marathi"),
    "nld": ("nl", "Dutch"), "nno": ("nn", "Norwegian Nynorsk"), "nob": ("nb", "Norwegian Bokmal"),
    "pes": ("fa", "Persian"), "pol": ("pl", "Polish"), "por": ("pt", "Portuguese"), "ron": ("ro", "Romanian"),
    "rus": ("ru", "Russian"), "slk": ("sk", "Slovak"), "slv": ("sl", "Slovenian"), "spa": ("es", "Spanish"),
    "srp": ("sr", "Serbian"), "swe": ("sv", "Swedish"), "swh": ("sw", "Swahili"), "tam": ("ta", "Tamil"),
    "tel": ("te", "Telugu"), "tha": ("th", "Thai"), "tur": ("tr", "Turkish"), "ukr": ("uk", "Ukrainian"),
    "urd": ("ur", "Urdu"), "vie": ("vi", "Vietnamese"), "yor": ("yo", "Yoruba"), "zho": ("zh", "Chinese"),
    "zsm": ("ms", "Malay"), "mal": ("ml", "Malayalam"), "epo": ("eo", "Esperanto"), "bel": ("be", "Belarusian"),
    "aze": ("az", "Azerbaijani"), "uzb": ("uz", "Uzbek"), "tat": ("tt", "Tatar"), "cym": ("cy", "Welsh"),
    "gla": ("gd", "Scottish Gaelic"), "bre": ("br", "Breton"), "tgl": ("tl", "Tagalog"), "khm": ("km", "Khmer"),
}
# ISO 639-1 -> English name for sources keyed by two-letter codes (XQuAD, MMATH).
NAMES_BY_ISO1 = {iso1: name for iso1, name in LANGUAGES.values()}
NAMES_BY_ISO1.update({"zh": "Chinese", "ar": "Arabic", "lv": "Latvian"})
