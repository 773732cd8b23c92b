"""The documented table of substituent abbreviations the R-group engine understands.

Every value is a fragment SMILES with exactly one attachment point ``*``: the atom bonded
to ``*`` is the one that joins the template.  ``H`` is special: binding it removes the
attachment point and leaves an implicit hydrogen.  Lookup is case-sensitive because
chemists' abbreviations are (``Bu`` is butyl, ``BU`` is nothing); a few common
spellings (``i-Pr``, ``t-Bu``, ``n-Bu``) are listed explicitly rather than guessed.

The table is deliberately small and explicit: an abbreviation that is not here, and not a
substituted-phenyl formula that adds up (:func:`aryl_formula`, notation read exactly), is
refused by :func:`labrecord.chemdata.rgroup.instantiate` with the offending text, never
guessed.  docs/extraction.md prints the table.
"""
from __future__ import annotations

import re
from typing import Any

#: abbreviation -> fragment SMILES with one attachment point (``H`` -> no atom)
ABBREVIATIONS: dict[str, str] = {
    "H": "[H]*",
    "D": "[2H]*",
    # halogens and small heteroatom groups
    "F": "F*", "Cl": "Cl*", "Br": "Br*", "I": "I*",
    "OH": "O*", "SH": "S*", "NH2": "N*", "CN": "N#C*", "NO2": "O=[N+]([O-])*",
    "CHO": "O=C*", "CO2H": "OC(=O)*", "COOH": "OC(=O)*", "N3": "[N-]=[N+]=N*",
    "SCN": "N#CS*", "NCO": "O=C=N*", "SO3H": "OS(=O)(=O)*", "OTf": "O=S(=O)(O*)C(F)(F)F",
    "Tf": "O=S(=O)(*)C(F)(F)F", "OMs": "CS(=O)(=O)O*", "Ms": "CS(=O)(=O)*",
    "OTs": "Cc1ccc(cc1)S(=O)(=O)O*", "Ts": "Cc1ccc(cc1)S(=O)(=O)*",
    "Bpin": "CC1(C)OB(*)OC1(C)C", "B(OH)2": "OB(O)*", "SnBu3": "CCCC[Sn](*)(CCCC)CCCC",
    "TMS": "C[Si](C)(C)*", "TBS": "CC(C)(C)[Si](C)(C)*", "OTBS": "CC(C)(C)[Si](C)(C)O*",
    "TIPS": "CC(C)[Si](*)(C(C)C)C(C)C",
    # alkyl
    "Me": "C*", "Et": "CC*", "Pr": "CCC*", "nPr": "CCC*", "n-Pr": "CCC*",
    "iPr": "CC(C)*", "i-Pr": "CC(C)*", "Bu": "CCCC*", "nBu": "CCCC*", "n-Bu": "CCCC*",
    "iBu": "CC(C)C*", "i-Bu": "CC(C)C*", "sBu": "CCC(C)*", "s-Bu": "CCC(C)*",
    "tBu": "CC(C)(C)*", "t-Bu": "CC(C)(C)*", "Cy": "C1CCC(*)CC1", "cPr": "C1CC1*",
    "Hex": "CCCCCC*", "Allyl": "C=CC*", "Vinyl": "C=C*", "Bn": "c1ccccc1C*",
    "CF3": "FC(F)(F)*", "CCl3": "ClC(Cl)(Cl)*", "CH2OH": "OC*",
    # O / S / N groups
    "OMe": "CO*", "OEt": "CCO*", "OiPr": "CC(C)O*", "OtBu": "CC(C)(C)O*", "OPh": "c1ccccc1O*",
    "OBn": "c1ccccc1CO*", "OCF3": "FC(F)(F)O*", "OAc": "CC(=O)O*", "OBz": "O=C(O*)c1ccccc1",
    "OPiv": "CC(C)(C)C(=O)O*", "OTMS": "C[Si](C)(C)O*", "SMe": "CS*", "SO2Ph": "O=S(=O)(*)c1ccccc1",
    "NHMe": "CN*", "NHTs": "Cc1ccc(cc1)S(=O)(=O)N*",
    "SPh": "c1ccccc1S*", "NMe2": "CN(C)*", "NEt2": "CCN(CC)*", "NHAc": "CC(=O)N*",
    "NHBoc": "CC(C)(C)OC(=O)N*", "NHPh": "c1ccccc1N*", "NPh2": "c1ccccc1N(*)c1ccccc1",
    # acyl and carbonyl groups
    "Ac": "CC(=O)*", "Bz": "O=C(*)c1ccccc1", "Piv": "CC(C)(C)C(=O)*",
    "CO2Me": "COC(=O)*", "COOMe": "COC(=O)*", "CO2Et": "CCOC(=O)*", "COOEt": "CCOC(=O)*",
    "CO2tBu": "CC(C)(C)OC(=O)*", "CO2Pr": "CCCOC(=O)*", "CO2iPr": "CC(C)OC(=O)*",
    "CO2Bu": "CCCCOC(=O)*", "CO2nBu": "CCCCOC(=O)*", "CO2Bn": "O=C(*)OCc1ccccc1",
    "CO2Ph": "O=C(*)Oc1ccccc1", "CONH2": "NC(=O)*", "CONMe2": "CN(C)C(=O)*",
    # protecting groups
    "Boc": "CC(C)(C)OC(=O)*", "Cbz": "O=C(*)OCc1ccccc1", "Fmoc": "O=C(*)OCC1c2ccccc2-c2ccccc21",
    "PMB": "COc1ccc(C*)cc1", "MOM": "COC*", "THP": "C1CCOC(*)C1", "Trt": "c1ccc(cc1)C(*)(c1ccccc1)c1ccccc1",
    # aryl and heteroaryl
    "Ph": "c1ccccc1*", "Ar": "c1ccccc1*", "Tol": "Cc1ccc(*)cc1", "p-Tol": "Cc1ccc(*)cc1",
    "PMP": "COc1ccc(*)cc1", "Mes": "Cc1cc(C)c(*)c(C)c1", "Naph": "c1ccc2cc(*)ccc2c1",
    "1-Naph": "c1ccc2c(*)cccc2c1", "2-Naph": "c1ccc2cc(*)ccc2c1",
    "4-MeC6H4": "Cc1ccc(*)cc1", "4-MeOC6H4": "COc1ccc(*)cc1", "4-FC6H4": "Fc1ccc(*)cc1",
    "4-ClC6H4": "Clc1ccc(*)cc1", "4-BrC6H4": "Brc1ccc(*)cc1", "4-CF3C6H4": "FC(F)(F)c1ccc(*)cc1",
    "2-Py": "c1ccnc(*)c1", "3-Py": "c1cncc(*)c1", "4-Py": "c1cc(*)ccn1", "Py": "c1ccnc(*)c1",
    "2-Thienyl": "c1csc(*)c1", "2-Furyl": "c1coc(*)c1", "3-Thienyl": "c1cc(*)cs1", "3-Furyl": "c1cc(*)co1",
    # the same, spelled out as scope tables print them
    "C6H5": "c1ccccc1*", "2-thienyl": "c1csc(*)c1", "3-thienyl": "c1cc(*)cs1", "2-furyl": "c1coc(*)c1",
    "3-furyl": "c1cc(*)co1", "2-pyridyl": "c1ccnc(*)c1", "3-pyridyl": "c1cncc(*)c1", "4-pyridyl": "c1cc(*)ccn1",
    "1-naphthyl": "c1ccc2c(*)cccc2c1", "2-naphthyl": "c1ccc2cc(*)ccc2c1",
}


#: small molecules printed by formula or common name in a reaction row (``+ CS2``,
#: ``+ NH3``, ``B2pin2``): one molecule each, written as SMILES.  A formula of one
#: element and a count alone (``CO``, ``I2``) is left out where OCR makes it of a word.
PRINTED_MOLECULES = {
    "CS2": "S=C=S", "CO2": "O=C=O", "SO2": "O=S=O", "H2O": "O", "H2O2": "OO", "NH3": "N",
    "H2S": "S", "H2": "[H][H]", "O2": "O=O", "N2": "N#N", "HCl": "Cl", "HBr": "Br", "HI": "I", "HF": "F",
    "Br2": "BrBr", "Cl2": "ClCl", "HCN": "C#N", "HCHO": "C=O", "NH2OH": "NO", "N2H4": "NN",
    "B2pin2": "CC1(C)OB(B2OC(C)(C)C(C)(C)O2)OC1(C)C", "B2(pin)2": "CC1(C)OB(B2OC(C)(C)C(C)(C)O2)OC1(C)C",
    "HBpin": "CC1(C)OBOC1(C)C", "TMSCN": "C[Si](C)(C)C#N", "TMSN3": "C[Si](C)(C)N=[N+]=[N-]",
    "NBS": "O=C1CCC(=O)N1Br", "NCS": "O=C1CCC(=O)N1Cl", "NIS": "O=C1CCC(=O)N1I",
}
_PRINTED_FOLDED = {name.casefold(): smiles for name, smiles in PRINTED_MOLECULES.items()}


def printed_molecule(word: str) -> str | None:
    """The SMILES of a small molecule of :data:`PRINTED_MOLECULES` printed as ``word``, or
    None.  OCR's readings of the print are accepted: any letter case (``cs,``), a
    subscript 2 read as ``,`` or ``.`` (``CS,``, ``B,pin,``), a ``0`` for the letter O
    (``C0,``) and brackets or a trailing ``;``/``:`` around the word.  Hand check:
    ``printed_molecule("cs,")`` -> ``CS2`` -> ``S=C=S``."""
    base = word.strip().strip("[]").rstrip(";:")
    if base.startswith("(") and base.endswith(")") and base.count("(") == 1:
        base = base[1:-1]
    tried = {base, re.sub(r"(?<=[A-Za-z)])[,.]", "2", base), base.rstrip(",.")}
    tried |= {t.replace("0", "O") for t in tried}
    for text in tried:
        found = _PRINTED_FOLDED.get(text.casefold())
        if found is not None:
            return found
    return None


def lookup(text: str) -> str | None:
    """Fragment SMILES for an abbreviation, or None when ``text`` is neither in the table
    nor a substituted-phenyl formula (:func:`aryl_formula`).

    Surrounding whitespace is ignored.
    """
    text = text.strip()
    return ABBREVIATIONS.get(text) or aryl_formula(text) or alkyl_formula(text) or condensed_formula(text)


#: one atom of a condensed formula and its hydrogens: ``CH2``, ``CH``, ``O``, ``NH``, ``Cl``
_CONDENSED_ATOM = re.compile(r"(Cl|Br|C|N|O|S|F|I)(?:H([1-3])?)?")
_VALENCE = {"C": 4, "N": 3, "O": 2, "S": 2, "F": 1, "Cl": 1, "Br": 1, "I": 1}


def condensed_formula(text: str) -> str | None:
    """The fragment SMILES of a group written as a condensed formula, left to right from
    the attachment: ``CH2CH(CH3)2`` (isobutyl), ``C(CH3)3``, ``CH2OCH3``, ``(CH2)3CH3``,
    ``CH2CO2Et``; or None.  Each atom is written with its hydrogens, a bracketed group
    with its count hangs on the atom before it (a bracketed run of chain links, ``(CH2)3``,
    repeats the chain), a table abbreviation may end the formula
    (``CH2Ph``), and every atom must have exactly its valence in single bonds and
    hydrogens — ``CH2CH(CH3)2``: CH2 has 2 H + 2 bonds, CH 1 H + 3 bonds, each CH3 3 H +
    1 bond — so nothing is guessed (``CHCH3`` is refused: its CH would have three
    bonds).  A formula that is a single atom or a table abbreviation is left to those."""
    if not text or text in ABBREVIATIONS or not any(ch in text for ch in "()") and not re.search(r"[A-Z].*[A-Z]", text):
        return None
    built = _condensed_chain(text, attached=True)
    if built is None:
        return None
    from rdkit import Chem, rdBase

    rdBase.DisableLog("rdApp.*")
    mol = Chem.MolFromSmiles("*" + built)
    return Chem.MolToSmiles(mol) if mol is not None else None


def _condensed_chain(text: str, attached: bool) -> str | None:
    """SMILES of a chain of condensed units starting with the atom bonded to the parent
    (``attached``) — ring closures ``%9n`` join a closing abbreviation — or None."""
    units: list[list[Any]] = []  # [symbol, hydrogens, side SMILES]
    tail = None
    i = 0
    while i < len(text):
        if text[i] == "(":
            depth, j = 0, i
            while j < len(text):
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            count = re.match(r"(?:[1-9][0-9]?)?", text[j + 1:])[0]  # type: ignore[index]  # always matches
            if depth != 0:
                return None
            inner = text[i + 1:j]
            links = [(m[1], int(m[2] or 1) if "H" in m[0] else 0) for m in _CONDENSED_ATOM.finditer(inner)]
            if "".join(m[0] for m in _CONDENSED_ATOM.finditer(inner)) == inner and links and \
                    all(_VALENCE[symbol] - h == 2 for symbol, h in links):
                # a repeated piece of the chain itself: (CH2)3 is CH2CH2CH2
                units += [[symbol, h, []] for _ in range(int(count or 1)) for symbol, h in links]
                i = j + 1 + len(count)
                continue
            if not units:
                return None
            side = ABBREVIATIONS.get(inner) and _rooted(ABBREVIATIONS[inner]) or _condensed_chain(inner, attached=True)
            if side is None:
                return None
            units[-1][2] += [side] * int(count or 1)
            i = j + 1 + len(count)
            continue
        rest = text[i:]
        if units and rest in ABBREVIATIONS and not _CONDENSED_ATOM.fullmatch(rest):
            tail = _rooted(ABBREVIATIONS[rest])
            if tail is None:
                return None
            break
        match = _CONDENSED_ATOM.match(text, i)
        if match is None:
            return None
        units.append([match[1], int(match[2] or 1) if "H" in match[0] else 0, []])
        i = match.end()
    if not units:
        return None
    out = []
    for k, (symbol, hydrogens, sides) in enumerate(units):
        bonds = (1 if k or attached else 0) + (1 if k + 1 < len(units) or tail else 0) + len(sides)
        if hydrogens + bonds != _VALENCE[symbol]:
            return None
        out.append(symbol + "".join(f"({side})" for side in sides))
    return "".join(out) + (tail or "")


def _rooted(fragment: str) -> str | None:
    """A table fragment (``CCOC(=O)*``) written from its attachment atom (``C(=O)OCC``)."""
    from rdkit import Chem, rdBase

    rdBase.DisableLog("rdApp.*")
    mol = Chem.MolFromSmiles(fragment)
    if mol is None or fragment.count("*") != 1:
        return None
    dummy = next(a for a in mol.GetAtoms() if a.GetAtomicNum() == 0)
    if dummy.GetDegree() != 1:
        return None
    editable = Chem.RWMol(mol)
    root = dummy.GetNeighbors()[0].GetIdx()
    editable.RemoveAtom(dummy.GetIdx())
    root -= 1 if root > dummy.GetIdx() else 0
    return Chem.MolToSmiles(editable, rootedAtAtom=root)


def alkyl_formula(text: str) -> str | None:
    """The fragment SMILES of a straight alkyl chain written as its formula, ``CnH2n+1``
    (``C7H15`` -> heptyl, ``n-C17H35``), or None when the hydrogens do not add up
    (``C6H11`` is cyclohexyl or a hexenyl: not read); ``CH3`` is methyl.  Hand check:
    ``C4H9`` -> 2·4 + 1 = 9 hydrogens -> ``CCCC*``."""
    match = _ALKYL.match(text)
    carbons = int(match["n"] or 1) if match else 0
    if match is None or int(match["h"]) != 2 * carbons + 1:
        return None
    return "C" * carbons + "*"


#: group names a substituted-phenyl formula may carry besides the table's own (``MeO`` is
#: how the prefix of ``4-MeOC6H4`` spells methoxy)
_PREFIX_ALIASES = {"MeO": "OMe", "EtO": "OEt", "F3C": "CF3", "O2N": "NO2", "MeS": "SMe", "HO": "OH",
                   "CH3": "Me", "H3C": "Me", "CH3O": "OMe", "OCH3": "OMe", "C2H5": "Et", "NC": "CN",
                   "Me2N": "NMe2", "AcO": "OAc", "BnO": "OBn", "PhO": "OPh", "F3CO": "OCF3", "MeO2C": "CO2Me",
                   "EtO2C": "CO2Et"}
#: ring positions named by letter: ``p-MeOC6H4`` is ``4-MeOC6H4``
_LETTER_LOCANTS = {"o": "2", "m": "3", "p": "4"}
#: a straight alkyl chain printed as its formula, ``C7H15`` or ``n-C7H15``
_ALKYL = re.compile(r"^(?:n-?)?C(?P<n>[1-9][0-9]?)?H(?P<h>[0-9]{1,2})$")
#: one locant group and its substituents: ``2,4-Cl2`` in ``2,4-Cl2C6H3``, ``3-Cl`` and ``4-F`` in ``3-Cl-4-FC6H3``
_LOCANT_GROUP = re.compile(r"([2-6](?:,[2-6])*)-?((?:\(?[A-Za-z][A-Za-z0-9]*?\)?[2-5]?)+?)(?=-?[2-6](?:,[2-6])*-|$)")
_PHENYL = re.compile(r"^(?P<prefix>.+)C6H(?P<h>[1-4])$")
#: the names a group may be written with, longest first (``CF3`` before ``C``-anything, ``MeO`` before ``Me``)
_NAMES_LONGEST_FIRST = sorted({*ABBREVIATIONS, *_PREFIX_ALIASES}, key=len, reverse=True)


def aryl_formula(text: str) -> str | None:
    """The fragment SMILES of a substituted phenyl written as a formula, ``<locants>-<groups>C6H<n>``
    (``3-BrC6H4``, ``2,4-Cl2C6H3``, ``3,4-(MeO)2C6H3``, ``3-Cl-4-FC6H3``; one position
    may be named by letter, ``p-MeOC6H4``, ``o-ClC6H4``, ``m-CH3C6H4``), or None.

    The formula is read, not guessed: the attachment is ring position 1, each locant takes
    the next group written (a multiplicity ``Cl2`` or ``(MeO)2`` takes that many locants),
    the groups are names of this table with one attachment point, and the hydrogen count
    must be 5 minus the number of groups.  Anything else is None.  Hand check:
    ``2,4-Cl2C6H3`` -> locants 2 and 4, both Cl, 5 - 2 = 3 hydrogens: ``Clc1ccc(*)c(Cl)c1``.
    """
    lettered = re.match(r"^([omp])-(?=[A-Z(])", text)
    if lettered:  # ``p-ClC6H4``: a ring position named by letter, one group
        text = _LETTER_LOCANTS[lettered[1]] + "-" + text[2:]
    match = _PHENYL.match(text)
    if not match:
        return None
    groups = _LOCANT_GROUP.findall(match["prefix"])
    if not groups or "".join(locants + "-" + names for locants, names in groups).replace("-", "") != \
            match["prefix"].replace("-", ""):
        return None
    placed: dict[int, str] = {}
    for locants, names in groups:
        written = _split_groups(names)
        positions = [int(p) for p in locants.split(",")]
        if written is None or len(written) != len(positions):
            return None
        for position, fragment in zip(positions, written):
            if position in placed:
                return None
            placed[position] = fragment
    if int(match["h"]) != 5 - len(placed):
        return None
    return _phenyl_smiles(placed)


def _split_groups(names: str) -> list[str] | None:
    """``Cl2`` -> two Cl fragments, ``(MeO)2`` -> two OMe, ``BrF`` -> Br then F (longest names first)."""
    out: list[str] = []
    rest = names
    while rest:
        bracketed = re.match(r"\(([A-Za-z0-9]+)\)([2-5]?)", rest)
        if bracketed:
            name, count, rest = bracketed[1], bracketed[2], rest[bracketed.end():]
        else:
            name = next((n for n in _NAMES_LONGEST_FIRST if rest.startswith(n)), None)
            if name is None:
                return None
            count = re.match(r"[2-5]?", rest[len(name):])[0]  # type: ignore[index]  # always matches
            rest = rest[len(name) + len(count):]
        fragment = ABBREVIATIONS.get(_PREFIX_ALIASES.get(name, name))
        # Ar is a variable (any aryl), not a group; H is no substituent
        if fragment is None or fragment.count("*") != 1 or name in ("Ar", "H"):
            return None
        out += [fragment] * int(count or 1)
    return out


def _phenyl_smiles(placed: dict[int, str]) -> str | None:
    """A benzene ring attached at position 1 with ``placed`` fragments (position -> fragment with ``*``)."""
    from rdkit import Chem

    branches = {}
    for position, fragment in placed.items():
        mol = Chem.MolFromSmiles(fragment)
        if mol is None:
            return None
        (dummy,) = [a for a in mol.GetAtoms() if a.GetAtomicNum() == 0]
        (root,) = dummy.GetNeighbors()
        editable = Chem.RWMol(mol)
        root_index = root.GetIdx() - (1 if root.GetIdx() > dummy.GetIdx() else 0)
        editable.RemoveAtom(dummy.GetIdx())
        branches[position] = Chem.MolToSmiles(editable.GetMol(), rootedAtAtom=root_index)
    ring = "*c%99" + "".join(f"c({branches[p]})" if p in branches else "c" for p in range(2, 6))
    ring += f"c%99({branches[6]})" if 6 in branches else "c%99"
    mol = Chem.MolFromSmiles(ring)
    return Chem.MolToSmiles(mol) if mol is not None else None
