"""Sensitive personal numbers, each validated by its checksum (python-stdnum): payment
cards, IBANs, US Social Security numbers, and national ids found next to their context word.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from stdnum import iban as std_iban
from stdnum import luhn, numdb
from stdnum.br import cpf as br_cpf
from stdnum.ca import sin as ca_sin
from stdnum.de import idnr as de_idnr
from stdnum.es import dni as es_dni
from stdnum.es import nie as es_nie
from stdnum.fr import nir as fr_nir
from stdnum.gb import nhs as gb_nhs
from stdnum.in_ import aadhaar as in_aadhaar
from stdnum.it import codicefiscale as it_cf
from stdnum.nl import bsn as nl_bsn
from stdnum.pl import pesel as pl_pesel
from stdnum.se import personnummer as se_pnr
from stdnum.us import ssn as us_ssn

from shared.safety.engine import WORDCHAR, Detector, RuleTable, Scan, word_set

TABLE = RuleTable()


# --- personal data: payment cards --------------------------------------------------------------

_CARD_RE = re.compile(r"\d(?:[ \-]?\d){11,18}")
_CARD_SPLIT_RE = re.compile(r"[ \-]")


def _plausible_issuer(d: str) -> bool:
    """The issuer prefix (IIN) and length of a real card brand."""
    n = len(d)
    p2, p3, p4, p6 = int(d[:2]), int(d[:3]), int(d[:4]), int(d[:6])
    if d[0] == "4":
        return n in (13, 16, 19)  # Visa
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return n == 16  # Mastercard
    if p2 in (34, 37):
        return n == 15  # American Express
    if p4 == 6011 or 644 <= p3 <= 649 or p2 == 65 or 622126 <= p6 <= 622925:
        return 16 <= n <= 19  # Discover
    if p2 == 62 or 2200 <= p4 <= 2204 or 3528 <= p4 <= 3589:
        return 16 <= n <= 19  # UnionPay, Mir, JCB
    if 300 <= p3 <= 305 or p2 in (36, 38, 39) or p4 == 3095:
        return 14 <= n <= 19  # Diners Club
    if p2 in (50, 56, 57, 58, 63, 67):
        return 13 <= n <= 19  # Maestro
    return False


def _payment_card(scan: Scan) -> bool:
    if scan.digits < 13:
        return False
    text = scan.ascii
    for start in scan.starts(b"0000"):  # every card number starts with four digits
        if start and (text[start - 1] in WORDCHAR or text[start - 1] in ".-/"):
            continue  # inside a word, a decimal, a range, a path
        match = _CARD_RE.match(text, start)
        if match is None:
            continue
        end = match.end()
        if end < len(text) and (
            text[end] in WORDCHAR
            or text[end] in "-/"
            or text.startswith(".", end)
            and text[end + 1 : end + 2].isdigit()
        ):
            continue
        groups = _CARD_SPLIT_RE.split(match.group(0))
        for i in range(len(groups)):
            for j in range(len(groups), i, -1):
                part = groups[i:j]
                digits = "".join(part)
                if not 13 <= len(digits) <= 19:
                    continue
                if len(part) > 1 and not all(3 <= len(g) <= 6 for g in part):
                    continue
                if _plausible_issuer(digits) and luhn.is_valid(digits):
                    return True
    return False


TABLE.add("payment_card", "a payment card number", _payment_card)

# --- personal data: IBAN ----------------------------------------------------------------------

_IBAN_RE = re.compile(r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]{1,4}){3,8}")


def _iban_lengths() -> dict[str, int]:
    """Country code -> IBAN length, from stdnum's copy of the SWIFT IBAN registry."""
    lengths = {}
    for _, country, _, props, _ in numdb.get("iban").prefixes:
        bban = props.get("bban", "")
        lengths[country] = 4 + sum(int(n) for n in re.findall(r"\d+", bban))
    return lengths


_IBAN_LENGTHS = _iban_lengths()


def _mod97(value: str) -> bool:
    """The IBAN checksum alone: a cheap test before stdnum's full validation."""
    rearranged = value[4:] + value[:4]
    if not rearranged.isalnum() or not rearranged.isascii():
        return False
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _iban(scan: Scan) -> bool:
    if scan.digits < 8:
        return False
    text = scan.ascii
    for start in scan.starts(b"AA00"):
        length = _IBAN_LENGTHS.get(text[start : start + 2])
        if length is None or start and text[start - 1] in WORDCHAR:
            continue
        match = _IBAN_RE.match(text, start)
        if match is None:
            continue
        # Group by group until the country's length: the match may have taken in the start
        # of the next word ("... 0130 00 The"), which must be left out.
        value, end = "", start
        for part in match.group(0).split(" "):
            value += part
            end += len(part) + (end > start)
            if len(value) >= length:
                break
        if len(value) != length or end < len(text) and text[end] in WORDCHAR:
            continue
        if _mod97(value) and std_iban.is_valid(value):
            return True
    return False


TABLE.add("iban", "an IBAN (bank account number)", _iban)

# --- personal data: US SSN and national ids ---------------------------------------------------


def _ssn_formatted(scan: Scan) -> bool:
    if scan.digits < 9:
        return False
    text, shape = scan.ascii, scan.shape
    i = shape.find(b"000-00-0000")
    while i != -1:
        left = i == 0 or shape[i - 1] not in b"0Aa_-"
        right = i + 11 == len(shape) or shape[i + 11] not in b"0Aa_-"
        if left and right and us_ssn.is_valid(text[i : i + 11]):
            return True
        i = shape.find(b"000-00-0000", i + 1)
    return False


TABLE.add("us_ssn", "a US Social Security number", _ssn_formatted)


@dataclass(frozen=True)
class _IdKind:
    rule: str
    reason: str
    words: frozenset[bytes]  # one of these words must be in the text
    context: re.Pattern[str]  # where it is mentioned
    candidate: re.Pattern[str]  # what the number looks like
    valid: Callable[[str], bool]  # its checksum (stdnum)


_NINO_BAD_PREFIX = frozenset(["BG", "GB", "NK", "KN", "TN", "NT", "ZZ"])
_SEPARATORS_RE = re.compile(r"[\s.\-/]")


def _nino_valid(value: str) -> bool:
    v = _SEPARATORS_RE.sub("", value).upper()
    return v[:2] not in _NINO_BAD_PREFIX and v[1] != "O"


def _compact(validator: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda value: validator(_SEPARATORS_RE.sub("", value))


def _id(
    rule: str, reason: str, words: str, context: str, candidate: str, valid: Callable[[str], bool]
) -> _IdKind:
    return _IdKind(rule, reason, word_set(words), re.compile(context), re.compile(candidate), valid)


_NUM_L = r"(?<![\w\-])"  # a number's left edge
_NUM_R = r"(?![\w\-])"  # and its right edge
_ID_KINDS: tuple[_IdKind, ...] = (
    _id(
        "us_ssn",
        "a US Social Security number",
        "ssn ss social",
        r"(?i)\bSSN\b|social\s+security\s+(?:number|no\b|#)|\bSS#",
        rf"{_NUM_L}\d{{3}}[ \-]?\d{{2}}[ \-]?\d{{4}}{_NUM_R}",
        _compact(us_ssn.is_valid),
    ),
    _id(
        "national_id",
        "a UK National Insurance number",
        "insurance ni nino",
        r"(?i)national\s+insurance|\bNI\s*(?:no\b|number|#)|\bNINO\b",
        r"(?i)\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b",
        _nino_valid,
    ),
    _id(
        "national_id",
        "a UK NHS number",
        "nhs",
        r"\bNHS\b",
        rf"{_NUM_L}\d{{3}}[ \-]?\d{{3}}[ \-]?\d{{4}}{_NUM_R}",
        _compact(gb_nhs.is_valid),
    ),
    _id(
        "national_id",
        "a Dutch citizen service number (BSN)",
        "bsn burgerservicenummer sofinummer citizen",
        r"(?i)\bBSN\b|burgerservicenummer|sofinummer|citizen\s+service\s+number",
        rf"{_NUM_L}(?:\d{{4}}\.?\d{{2}}\.?\d{{3}}|\d{{9}}){_NUM_R}",
        _compact(nl_bsn.is_valid),
    ),
    _id(
        "national_id",
        "a German tax id (Steuer-ID)",
        "steuer steuerid steueridentifikationsnummer identifikationsnummer idnr tax",
        r"(?i)steuer-?\s?id|steueridentifikationsnummer|identifikationsnummer|\bIdNr\b"
        r"|tax\s+id(?:entification)?",
        rf"{_NUM_L}\d{{2}} ?\d{{3}} ?\d{{3}} ?\d{{3}}{_NUM_R}",
        _compact(de_idnr.is_valid),
    ),
    _id(
        "national_id",
        "a French social security number (NIR)",
        "nir sécurité securite sécu secu insee vitale social",
        r"(?i)\bNIR\b|s[ée]curit[ée]\s+sociale|num[ée]ro\s+de\s+s[ée]cu|\bINSEE\b"
        r"|carte\s+vitale|social\s+security",
        rf"(?i){_NUM_L}[12] ?\d{{2}} ?\d{{2}} ?(?:\d{{2}}|2[AB]) ?\d{{3}} ?\d{{3}} ?\d{{2}}"
        rf"{_NUM_R}",
        fr_nir.is_valid,
    ),
    _id(
        "national_id",
        "a Spanish DNI/NIE",
        "dni nie nif documento",
        r"\bDNI\b|\bNIE\b|\bNIF\b|(?i:documento\s+nacional)",
        rf"(?i){_NUM_L}(?:\d{{8}}|[XYZ]-?\d{{7}})-?[A-Z]{_NUM_R}",
        lambda v: es_dni.is_valid(v) or es_nie.is_valid(v),
    ),
    _id(
        "national_id",
        "an Italian fiscal code (codice fiscale)",
        "codice cf fiscal tax",
        r"(?i)codice\s+fiscale|\bCF\b|fiscal\s+code|tax\s+code",
        r"(?i)\b[A-Z]{6}\d{2}[A-Z]\d{2}[A-Z]\d{3}[A-Z]\b",
        lambda v: it_cf.is_valid(v.upper()),
    ),
    _id(
        "national_id",
        "an Indian Aadhaar number",
        "aadhaar aadhar uidai",
        r"(?i)aadhaa?r|\bUIDAI\b",
        rf"{_NUM_L}[2-9]\d{{3}}[ \-]?\d{{4}}[ \-]?\d{{4}}{_NUM_R}",
        _compact(in_aadhaar.is_valid),
    ),
    _id(
        "national_id",
        "a Canadian Social Insurance Number",
        "sin social",
        r"\bSIN\b|(?i:social\s+insurance)",
        rf"{_NUM_L}\d{{3}}[ \-]?\d{{3}}[ \-]?\d{{3}}{_NUM_R}",
        _compact(ca_sin.is_valid),
    ),
    _id(
        "national_id",
        "a Brazilian CPF",
        "cpf",
        r"\bCPF\b",
        rf"{_NUM_L}\d{{3}}\.?\d{{3}}\.?\d{{3}}-?\d{{2}}{_NUM_R}",
        _compact(br_cpf.is_valid),
    ),
    _id(
        "national_id",
        "a Polish PESEL",
        "pesel",
        r"(?i)\bPESEL\b",
        rf"{_NUM_L}\d{{11}}{_NUM_R}",
        pl_pesel.is_valid,
    ),
    _id(
        "national_id",
        "a Swedish personal identity number",
        "personnummer personal",
        r"(?i)personnummer|personal\s+identity\s+number",
        rf"{_NUM_L}(?:\d{{2}})?\d{{6}}[\-+]?\d{{4}}{_NUM_R}",
        se_pnr.is_valid,
    ),
)
_ID_WINDOW = 60


def _id_detector(kind: _IdKind) -> Detector:
    def detect(scan: Scan) -> bool:
        if scan.digits < 6 or not kind.words & scan.words:
            return False
        text = scan.text
        for ctx in kind.context.finditer(text):
            start = max(0, ctx.start() - _ID_WINDOW)
            for cand in kind.candidate.finditer(text, start, ctx.end() + _ID_WINDOW):
                if kind.valid(cand.group(0)):
                    return True
        return False

    return detect


for _kind in _ID_KINDS:
    TABLE.add(_kind.rule, _kind.reason, _id_detector(_kind))
