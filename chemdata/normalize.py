"""Molecule normalization for reaction F1 (needs RDKit, the ``[chem]`` extra).

Every input string is turned into a :class:`Canonical`: two sorted tuples of component
keys (``strict``: isomeric canonical SMILES; ``nonstereo``: the same with stereochemistry
removed) or, when the string can never match anything, a ``reason``.  The rules, applied in
this order:

1. Whitespace around the string is stripped; an empty string is ``malformed: empty``.
   Size limits come before any parsing, since RDKit is handed untrusted text (a
   50,000-atom string can take it down): a string longer than ``MAX_SMILES_LENGTH``
   characters is ``malformed: too_long``; one with more than ``MAX_ATOMS`` atom tokens
   (bracket atoms and organic-subset symbols, counted on the text) is
   ``malformed: too_many_atoms``.
2. Strings that stand for a family of molecules never match (status ``unmatchable``):
   ``wildcard`` — any ``*`` (``*``, ``[1*]``, ``[*:1]``);
   ``extended_smiles`` — MolParser E-SMILES extension tags (``<sep>``, ``<a>``, ``<r>``, ``<c>``);
   ``cxsmiles`` — a ``|…|`` extension block or any inner whitespace (labels, coordinates);
   ``placeholder`` — an R-group label outside brackets (``R``, ``X``); a bracket whose text is
   not a bracket atom or whose symbol is not an element (``[R1]``, ``[R']``, ``[X]``,
   ``[Het]``); or a bracket atom of an element that in a reaction figure is a substituent
   label, not the element: ``PLACEHOLDER_ELEMENTS`` (``[Ar]`` aryl, ``[Rf]`` perfluoroalkyl,
   and the synthetic superheavy elements).
3. RDKit parses without sanitizing; a failure is ``malformed: unparsable``.  Sanitization
   failures are ``malformed: hypervalent`` (valence check) or ``malformed: sanitization``
   (aromaticity/kekulization and the rest).  A molecule with no atoms is ``malformed: empty``.
4. Atom-map numbers are cleared (they annotate, they do not change the molecule) and
   explicit hydrogens are folded into their heavy atoms (``RemoveHs``; isotopic hydrogens
   such as ``[2H]`` stay, since they are a different molecule).
5. The molecule is split into its connected components (dot-separated salts, and ring
   closures that join across a dot are honoured because the split is on the graph).
6. Metal counter-ions: a component that is a single atom of an element in
   ``COUNTER_ION_METALS`` (Li, Na, K, Rb, Cs, Mg, Ca, Sr, Ba) with a positive formal charge
   is dropped, provided at least one other component remains.  So ``CC(=O)[O-].[Na+]`` and
   ``CC(=O)[O-].[K+]`` both become ``CC(=O)[O-]``; Na2CO3, K2CO3 and Cs2CO3 all become
   ``O=C([O-])[O-]``; ``[Na+]`` alone stays ``[Na+]``.  Charges are never neutralized, so
   acetic acid differs from acetate, and a covalently drawn ``CC(=O)O[Na]`` is not
   disconnected and differs from the ionic form.
7. ``strict`` = RDKit canonical isomeric SMILES of each component; ``nonstereo`` = the same
   after ``RemoveStereochemistry`` (isomeric output kept, so isotope labels survive).

Each distinct string is canonicalized once per process (:func:`canonicalize` is cached).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

#: bump when a rule above changes, so stored canonical forms are recomputed
NORMALIZER_VERSION = "labrecord-normalize/2"

#: rule 1 size limits: larger strings never reach RDKit
MAX_SMILES_LENGTH = 4000
MAX_ATOMS = 1000

#: single-atom cations of these elements are counter-ions (rule 6)
COUNTER_ION_METALS: frozenset[str] = frozenset({"Li", "Na", "K", "Rb", "Cs", "Mg", "Ca", "Sr", "Ba"})

#: element symbols that in figures are substituent labels rather than the element (rule 2)
PLACEHOLDER_ELEMENTS: frozenset[str] = frozenset({
    "Ar", "Rf", "Db", "Sg", "Bh", "Hs", "Mt", "Ds", "Rg", "Cn", "Nh", "Fl", "Mc", "Lv", "Ts", "Og",
})

MALFORMED_REASONS = ("empty", "too_long", "too_many_atoms", "unparsable", "hypervalent", "sanitization")
UNMATCHABLE_REASONS = ("wildcard", "extended_smiles", "cxsmiles", "placeholder")

_ELEMENTS: frozenset[str] = frozenset("""
H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br Kr
Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd Tb Dy Ho Er Tm
Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am Cm Bk Cf Es Fm Md No
Lr Rf Db Sg Bh Hs Mt Ds Rg Cn Nh Fl Mc Lv Ts Og
""".split())
_AROMATIC = frozenset({"b", "c", "n", "o", "p", "s", "se", "te", "as", "si"})
_BRACKET = re.compile(r"\[([^\[\]]*)\]")
#: a whole bracket atom: isotope, symbol, chirality, H count, charge, map number
_BRACKET_ATOM = re.compile(r"^\d*([A-Z][a-z]?|[a-z]{1,2})(?:@(?:@|[A-Z]{2}\d{1,2})?)?(?:H\d*)?(?:[+-]+\d*)?(?::\d+)?$")
_SPACE = re.compile(r"\s")
_ESMILES_TAG = re.compile(r"<(?:sep|a|r|c|dum)>")
#: one atom of a SMILES string: a bracket atom or an organic-subset symbol
_ATOM_TOKEN = re.compile(r"\[[^\[\]]*\]|Br|Cl|[BCNOPSFI]|[bcnops]")


@dataclass(frozen=True, slots=True)
class Canonical:
    """The scoring form of one input string.

    ``strict`` and ``nonstereo`` are sorted tuples of component SMILES (equal length; empty
    when ``reason`` is set).  ``status`` is ``ok``, ``malformed`` or ``unmatchable``.
    """

    strict: tuple[str, ...]
    nonstereo: tuple[str, ...]
    reason: str | None = None

    @property
    def status(self) -> str:
        if self.reason is None:
            return "ok"
        return "malformed" if self.reason in MALFORMED_REASONS else "unmatchable"

    @property
    def ok(self) -> bool:
        return self.reason is None


def _failed(reason: str) -> Canonical:
    return Canonical((), (), reason)


def size_reason(smiles: str) -> str | None:
    """Rule 1 limits: ``too_long`` or ``too_many_atoms`` for a string RDKit must not see.

    >>> size_reason("CCO"), size_reason("C" * (MAX_ATOMS + 1))
    (None, 'too_many_atoms')
    """
    if len(smiles) > MAX_SMILES_LENGTH:
        return "too_long"
    if len(_ATOM_TOKEN.findall(smiles)) > MAX_ATOMS:
        return "too_many_atoms"
    return None


def unmatchable_reason(smiles: str) -> str | None:
    """Rule 2: why ``smiles`` names a family of molecules rather than one, or None."""
    if "*" in smiles:
        return "wildcard"
    if _ESMILES_TAG.search(smiles):
        return "extended_smiles"
    if "|" in smiles or _SPACE.search(smiles):
        return "cxsmiles"
    outside = _BRACKET.sub("", smiles)
    if "R" in outside or "X" in outside:
        return "placeholder"
    for content in _BRACKET.findall(smiles):
        match = _BRACKET_ATOM.match(content)
        if match is None:
            return "placeholder"
        symbol = match.group(1)
        if symbol in PLACEHOLDER_ELEMENTS:
            return "placeholder"
        if symbol not in _ELEMENTS and symbol not in _AROMATIC:
            return "placeholder"
    return None


def _sanitize_reason(mol: Any) -> str | None:
    from rdkit import Chem

    flags = Chem.SanitizeMol(mol, catchErrors=True)
    if flags == Chem.SanitizeFlags.SANITIZE_NONE:
        return None
    if flags == Chem.SanitizeFlags.SANITIZE_PROPERTIES:
        return "hypervalent"
    return "sanitization"


def _parse(smiles: str) -> tuple[Any, str | None]:
    """Rule 3: an RDKit molecule, or None and the malformed reason."""
    from rdkit import Chem, rdBase

    rdBase.DisableLog("rdApp.*")
    mol = Chem.MolFromSmiles(smiles, sanitize=False)
    if mol is None:
        return None, "unparsable"
    reason = _sanitize_reason(mol)
    if reason is not None:
        return None, reason
    if mol.GetNumAtoms() == 0:
        return None, "empty"
    return mol, None


def _is_counter_ion(component: Any) -> bool:
    if component.GetNumAtoms() != 1:
        return False
    atom = component.GetAtomWithIdx(0)
    return atom.GetSymbol() in COUNTER_ION_METALS and atom.GetFormalCharge() > 0


def _components(mol: Any, mapped: bool) -> list[Any]:
    """Rules 4-6: folded, split, counter-ions dropped (``mapped``: the text has atom maps)."""
    from rdkit import Chem

    if mapped:  # walking atoms from Python is slow; only strings with a ':' carry maps
        for atom in mol.GetAtoms():
            atom.SetAtomMapNum(0)
    mol = Chem.RemoveHs(mol)
    parts = list(Chem.GetMolFrags(mol, asMols=True, sanitizeFrags=False))
    kept = [part for part in parts if not _is_counter_ion(part)]
    return kept or parts


def _component_keys(component: Any) -> tuple[str, str]:
    """Rule 7: (strict, nonstereo) SMILES of one component."""
    from rdkit import Chem

    strict = Chem.MolToSmiles(component, isomericSmiles=True, canonical=True)
    blind = Chem.Mol(component)
    Chem.RemoveStereochemistry(blind)
    return strict, Chem.MolToSmiles(blind, isomericSmiles=True, canonical=True)


@lru_cache(maxsize=None)
def canonicalize(smiles: str) -> Canonical:
    """The :class:`Canonical` form of one SMILES string (cached per distinct string)."""
    text = smiles.strip() if isinstance(smiles, str) else ""
    if not text:
        return _failed("empty")
    reason = size_reason(text) or unmatchable_reason(text)
    if reason is not None:
        return _failed(reason)
    mol, reason = _parse(text)
    if mol is None:
        return _failed(reason or "unparsable")
    try:
        pairs = sorted(_component_keys(part) for part in _components(mol, ":" in text))
    except Exception:  # RDKit raises its own types (e.g. on odd valences after RemoveHs)
        return _failed("sanitization")
    return Canonical(tuple(s for s, _ in pairs), tuple(sorted(b for _, b in pairs)))


def canonicalize_many(strings: Iterable[str]) -> dict[str, Canonical]:
    """``{string: Canonical}`` for the distinct strings in ``strings`` (each computed once)."""
    return {text: canonicalize(text) for text in dict.fromkeys(strings)}


def cache_clear() -> None:
    """Forget cached forms (benchmarks measure a cold start with this)."""
    canonicalize.cache_clear()


def rdkit_version() -> str:
    from rdkit import rdBase

    return rdBase.rdkitVersion
