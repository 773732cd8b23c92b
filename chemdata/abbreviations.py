"""The documented table of substituent abbreviations the R-group engine understands.

Every value is a fragment SMILES with exactly one attachment point ``*``: the atom bonded
to ``*`` is the one that joins the template.  ``H`` is special: binding it removes the
attachment point and leaves an implicit hydrogen.  Lookup is case-sensitive because
chemists' abbreviations are (``Bu`` is butyl, ``BU`` is nothing); a few common
spellings (``i-Pr``, ``t-Bu``, ``n-Bu``) are listed explicitly rather than guessed.

The table is deliberately small and explicit: an abbreviation that is not here is
refused by :func:`labrecord.chemdata.rgroup.instantiate` with the offending text, never
guessed.  docs/extraction.md prints the table.
"""
from __future__ import annotations

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
    "OBn": "c1ccccc1CO*", "OCF3": "FC(F)(F)O*", "OAc": "CC(=O)O*", "SMe": "CS*",
    "SPh": "c1ccccc1S*", "NMe2": "CN(C)*", "NEt2": "CCN(CC)*", "NHAc": "CC(=O)N*",
    "NHBoc": "CC(C)(C)OC(=O)N*", "NHPh": "c1ccccc1N*", "NPh2": "c1ccccc1N(*)c1ccccc1",
    # acyl and carbonyl groups
    "Ac": "CC(=O)*", "Bz": "O=C(*)c1ccccc1", "Piv": "CC(C)(C)C(=O)*",
    "CO2Me": "COC(=O)*", "COOMe": "COC(=O)*", "CO2Et": "CCOC(=O)*", "COOEt": "CCOC(=O)*",
    "CO2tBu": "CC(C)(C)OC(=O)*", "CONH2": "NC(=O)*", "CONMe2": "CN(C)C(=O)*",
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
    "2-Thienyl": "c1csc(*)c1", "2-Furyl": "c1coc(*)c1",
}


def lookup(text: str) -> str | None:
    """Fragment SMILES for an abbreviation, or None when ``text`` is not in the table.

    Surrounding whitespace is ignored; ``p-``/``4-`` variants are only those listed.
    """
    return ABBREVIATIONS.get(text.strip())
