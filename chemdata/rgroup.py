"""The R-group engine: deterministic template instantiation and product-template matching.

Two operations (RxnMiner, section 4 "Reconstruction" and appendix C.1):

* :func:`instantiate` fills the attachment points of a template with substituents.
* :func:`derive_reactants` matches a concrete product to its product template, recovers
  the substituent bound to each attachment point, and applies those bindings (plus any
  explicit entry bindings, which take precedence) to the reactant templates.

Attachment points are read from every common spelling and reduced to one label:

=====================================  ===========
template spelling                      label
=====================================  ===========
``[1*]`` (isotope)                     ``R1``
``[*:1]`` (atom map)                   ``R1``
``[R1]``, ``[R]``, ``[R']``, ``[X]``   ``R1``, ``R``, ``R'``, ``X``
CXSMILES ``|$R1;;$|`` atom labels      ``R1``
bare ``*``                             ``*``
=====================================  ===========

Binding keys are normalized the same way (``"1"``, ``"[*:1]"`` and ``"R1"`` all name
``R1``).  A substituent is an abbreviation from :mod:`labrecord.chemdata.abbreviations`,
a fragment SMILES with one attachment point (``*c1ccccc1``, ``[*]Cl``), ``H``, or a plain
SMILES without ``*`` that attaches through its first atom (``Cl``, ``OC``).

Joining uses RDKit's ``molzip`` so tetrahedral and double-bond stereo written in the
template or the substituent is kept.  Every derived SMILES is checked by round trip:
instantiating the template with the recovered bindings must give the product back.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from labrecord.chemdata.abbreviations import lookup
from labrecord.errors import LabrecordError

FailureKind = Literal["bad_smiles", "bad_substituent", "no_match", "ambiguous_match", "unbound_label",
                      "leaving_group_unknown", "unbound_variable"]

#: bracket labels RDKit cannot parse that name a variable position
_BRACKET_LABEL = re.compile(r"\[(R\d*'*|X\d*|Z\d*|G\d*|Ar\d+|Q\d*|L\d*)\]")
BRACKET_LABEL = _BRACKET_LABEL
#: element symbols that figures use as labels ([Ar] aryl, [Y], [Rf] perfluoroalkyl, [X]…):
#: read as a label only in context — at an attachment point (one bond) or named by the
#: caller (printed in the figure text); an unbonded [Ar] stays argon
LABEL_ELEMENTS = frozenset({"Ar", "Y", "Rf", "Rg"})
_ELEMENT_LABEL = re.compile(r"\[([A-Z][a-z]?\d*'*)\]")
_KEY_FORMS = (re.compile(r"^\[?\*?:?(\d+)\*?\]?$"), re.compile(r"^\[(\d+)\*\]$"))
#: atom-map numbers at or above this value mark labels substituted in by the parser
_HANDLE_BASE = 900_000
#: a bound on substructure matches so a pathological template cannot run forever
MAX_MATCHES = 2000


@dataclass(frozen=True)
class Failure:
    """Why a derivation could not be made: ``kind`` plus a one-line ``message``."""

    kind: FailureKind
    message: str
    label: str | None = None
    template: str | None = None

    def __bool__(self) -> bool:  # a failure is never a usable result
        return False


class RGroupError(LabrecordError):
    """:func:`instantiate` could not fill a template; ``failure`` says why."""

    def __init__(self, failure: Failure) -> None:
        self.failure = failure
        super().__init__(failure.message)


class DerivedSmiles(str):
    """A SMILES string that remembers the template and bindings it was derived from."""

    template: str
    bindings: dict[str, str]

    def __new__(cls, smiles: str, template: str, bindings: Mapping[str, str]) -> "DerivedSmiles":
        obj = super().__new__(cls, smiles)
        obj.template = template
        obj.bindings = dict(sorted(bindings.items()))
        return obj

    def provenance(self) -> dict[str, Any]:
        """``{"origin": "template_derived", "template": …, "bindings": …}``."""
        return {"origin": "template_derived", "template": self.template, "bindings": dict(self.bindings)}


def normalize_label(key: str) -> str:
    """One spelling per attachment label: ``1``, ``[*:1]``, ``[1*]``, ``R1`` -> ``R1``."""
    text = str(key).strip()
    if text in {"*", "[*]"}:
        return "*"
    for pattern in _KEY_FORMS:
        found = pattern.match(text)
        if found:
            return f"R{int(found.group(1))}"
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return text


# --------------------------------------------------------------------------- parsing

def _chem() -> Any:
    from rdkit import Chem, rdBase

    rdBase.DisableLog("rdApp.*")  # parse failures become Failure objects, not stderr noise
    return Chem


def _parse_template(smiles: str, names: frozenset[str] = frozenset()) -> tuple[Any, dict[int, str]]:
    """Parse a template; return (mol, {dummy atom index: label}).

    ``names`` are labels printed in the figure text: a bracket atom spelled like one of
    them (``[Y]``, ``[Ar]``) is a label wherever it stands; a :data:`LABEL_ELEMENTS`
    symbol is a label when it sits at an attachment point (exactly one bond)."""
    Chem = _chem()
    handles: dict[int, str] = {}
    contextual: dict[int, str] = {}

    def substitute(found: re.Match[str]) -> str:
        number = _HANDLE_BASE + len(handles)
        handles[number] = found.group(1)
        return f"[*:{number}]"

    def maybe(found: re.Match[str]) -> str:
        name = found.group(1)
        base = name.rstrip("'").rstrip("0123456789")
        if name in names or base in names or base in LABEL_ELEMENTS:
            number = _HANDLE_BASE + len(handles)
            handles[number] = name
            if name not in names and base not in names:
                contextual[number] = name
            return f"[*:{number}]"
        return found.group(0)

    text = _ELEMENT_LABEL.sub(maybe, _BRACKET_LABEL.sub(substitute, smiles.strip()))
    mol = Chem.MolFromSmiles(text) if text else None
    if mol is not None and contextual:
        mol = _restore_elements(mol, contextual)
    if mol is None:
        raise RGroupError(Failure("bad_smiles", f"template {smiles!r}: RDKit cannot parse it", template=smiles))
    labels: dict[int, str] = {}
    for atom in mol.GetAtoms():
        if atom.GetAtomicNum() != 0:
            continue
        labels[atom.GetIdx()] = _atom_label(atom, handles)
        atom.SetAtomMapNum(0)
        atom.SetIsotope(0)
    return mol, labels


def _restore_elements(mol: Any, contextual: dict[int, str]) -> Any:
    """A contextual label that is not at an attachment point is the element after all."""
    Chem = _chem()
    editable = Chem.RWMol(mol)
    changed = False
    for atom in editable.GetAtoms():
        name = contextual.get(atom.GetAtomMapNum())
        if name is not None and atom.GetDegree() != 1:
            element = Chem.Atom(name.rstrip("'").rstrip("0123456789"))
            atom.SetAtomicNum(element.GetAtomicNum())
            atom.SetAtomMapNum(0)
            atom.SetNoImplicit(True)
            changed = True
    if not changed:
        return mol
    result = editable.GetMol()
    try:
        Chem.SanitizeMol(result)
    except Exception:  # an element in an impossible valence: the template is unusable
        return None
    return result


def _atom_label(atom: Any, handles: dict[int, str]) -> str:
    mapped = atom.GetAtomMapNum()
    if mapped >= _HANDLE_BASE:
        return normalize_label(handles[mapped])
    if atom.HasProp("atomLabel"):
        return normalize_label(atom.GetProp("atomLabel").lstrip("_"))
    if atom.HasProp("_MolFileRLabel"):
        return f"R{atom.GetUnsignedProp('_MolFileRLabel')}"
    if mapped:
        return f"R{mapped}"
    if atom.GetIsotope():
        return f"R{atom.GetIsotope()}"
    return "*"


def _parse_substituent(label: str, text: str) -> Any | None:
    """A substituent as a mol with exactly one dummy atom, or None for hydrogen."""
    Chem = _chem()
    raw = str(text).strip()
    smiles = lookup(raw) or raw
    if smiles in {"[H]*", "*[H]", "[H][*]", "[*][H]"}:
        return None
    if "*" not in smiles:
        mol = Chem.MolFromSmiles(smiles) if smiles else None
        if mol is None or mol.GetNumAtoms() == 0:
            raise RGroupError(Failure("bad_substituent", f"substituent {label}={raw!r}: not an abbreviation "
                                      "and not a SMILES RDKit can parse", label=label))
        # attach through the first atom written: "Cl", "OC", "N(C)C" read left to right
        editable = Chem.RWMol(mol)
        dummy = editable.AddAtom(Chem.Atom(0))
        editable.AddBond(0, dummy, Chem.BondType.SINGLE)
        first = editable.GetAtomWithIdx(0)
        first.SetNoImplicit(False)
        mol = editable.GetMol()
        try:
            Chem.SanitizeMol(mol)
        except Exception as error:  # RDKit raises several sanitize exception types
            raise RGroupError(Failure("bad_substituent", f"substituent {label}={raw!r}: cannot attach "
                                      f"through its first atom ({error})", label=label)) from None
        return mol
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise RGroupError(Failure("bad_substituent", f"substituent {label}={raw!r}: RDKit cannot parse {smiles!r}",
                                  label=label))
    dummies = [a for a in mol.GetAtoms() if a.GetAtomicNum() == 0]
    if len(dummies) != 1 or dummies[0].GetDegree() != 1:
        raise RGroupError(Failure("bad_substituent", f"substituent {label}={raw!r}: needs exactly one "
                                  f"attachment point, found {len(dummies)}", label=label))
    dummies[0].SetAtomMapNum(0)
    dummies[0].SetIsotope(0)
    return mol


def readable_substituent(text: str) -> bool:
    """True when the engine can attach ``text``: an abbreviation, hydrogen, a formula the
    abbreviation table reads, or a fragment SMILES (with one ``*`` or attached through its
    first atom)."""
    try:
        _parse_substituent("?", text)
    except RGroupError:
        return False
    return True


# --------------------------------------------------------------------------- instantiate

def template_labels(template_smiles: str, names: Collection[str] = ()) -> list[str]:
    """The distinct attachment labels of a template, in atom order."""
    _, labels = _parse_template(template_smiles, frozenset(names))
    return list(dict.fromkeys(labels.values()))


#: a bare attachment point kept through :func:`fill_labels` (an isotope no figure draws)
_KEPT = "[999At]"


def fill_labels(smiles: str, bindings: Mapping[str, str]) -> str:
    """Fill the labels ``bindings`` name and keep every other attachment point as a bare
    ``*``: a drawn substituent that still shows a label (``[X]c1ccc(*)cc1``, its wavy
    bond the ``*``) filled with ``X = OMe`` is ``*c1ccc(OC)cc1``.  With every label
    bound it is :func:`instantiate`.  Raises :class:`RGroupError` as that does."""
    bound = {normalize_label(k) for k in bindings}
    if "*" in bound:
        return instantiate(smiles, bindings)
    kept = re.sub(r"\[\*\]|(?<!\[)\*(?![\]:])", _KEPT, smiles)
    return instantiate(kept, bindings).replace(_KEPT, "*")


def instantiate(template_smiles: str, bindings: Mapping[str, str], names: Collection[str] = ()) -> str:
    """Fill every attachment point of ``template_smiles`` from ``bindings``.

    Returns the isomeric canonical SMILES of the concrete molecule.  Raises
    :class:`RGroupError` (kind ``bad_smiles``, ``bad_substituent`` or ``unbound_label``).
    A label that occurs several times takes the same substituent at each position.
    ``names`` are labels printed in the figure (see :func:`_parse_template`).
    """
    Chem = _chem()
    mol, labels = _parse_template(template_smiles, frozenset(names))
    bound = {normalize_label(k): v for k, v in bindings.items()}
    missing = sorted({label for label in labels.values() if label not in bound})
    if missing:
        raise RGroupError(Failure("unbound_label", f"template {template_smiles!r}: no binding for "
                                  f"{', '.join(missing)} (bound: {', '.join(sorted(bound)) or 'none'})",
                                  label=missing[0], template=template_smiles))
    editable = Chem.RWMol(mol)
    hydrogens: list[int] = []
    pieces = []
    for handle, (index, label) in enumerate(sorted(labels.items()), start=1):
        substituent = _parse_substituent(label, bound[label])
        atom = editable.GetAtomWithIdx(index)
        if substituent is None:
            atom.SetAtomicNum(1)  # an explicit H, folded away below so stereo is kept
            hydrogens.append(index)
            continue
        atom.SetAtomMapNum(handle)
        piece = Chem.Mol(substituent)
        for dummy in piece.GetAtoms():
            if dummy.GetAtomicNum() == 0:
                dummy.SetAtomMapNum(handle)
        pieces.append(piece)
    joined = editable.GetMol()
    for piece in pieces:
        joined = Chem.CombineMols(joined, piece)
    try:
        if pieces:
            joined = Chem.molzip(joined)
        Chem.SanitizeMol(joined)
        joined = Chem.RemoveHs(joined)
    except Exception as error:  # valence errors from an impossible binding
        raise RGroupError(Failure("bad_substituent", f"template {template_smiles!r} with {dict(bound)}: "
                                  f"not a valid molecule ({error})", template=template_smiles)) from None
    return Chem.MolToSmiles(joined)


# --------------------------------------------------------------------------- matching

def _match_query(template_mol: Any, labels: dict[int, str]) -> Any:
    """The template with each attachment point turned into an any-atom query (H included)."""
    from rdkit.Chem import rdqueries

    Chem = _chem()
    query = Chem.RWMol(template_mol)
    for index in labels:
        query.ReplaceAtom(index, rdqueries.AtomNumGreaterQueryAtom(0))
    return query.GetMol()


def _fragment_smiles(product: Any, core_atom: int, start: int) -> str:
    """SMILES (with ``*`` at the attachment) of the product side of bond core_atom–start."""
    Chem = _chem()
    if product.GetAtomWithIdx(start).GetAtomicNum() == 1 and product.GetAtomWithIdx(start).GetIsotope() == 0:
        return "H"
    bond = product.GetBondBetweenAtoms(core_atom, start)
    pieces = Chem.FragmentOnBonds(product, [bond.GetIdx()], addDummies=True)
    atom_groups: list[tuple[int, ...]] = []
    frags = Chem.GetMolFrags(pieces, asMols=True, sanitizeFrags=False, fragsMolAtomMapping=atom_groups)
    for frag, group in zip(frags, atom_groups):
        if start in group:
            for atom in frag.GetAtoms():
                if atom.GetAtomicNum() == 0:
                    atom.SetIsotope(0)
            frag = Chem.RemoveHs(frag, sanitize=False)
            Chem.SanitizeMol(frag)
            return Chem.MolToSmiles(frag)
    raise AssertionError("fragment of the attachment atom not found")  # FragmentOnBonds always yields it


def _bindings_for_match(product: Any, match: tuple[int, ...], labels: dict[int, str],
                        template_mol: Any) -> dict[str, str] | None:
    """Substituents implied by one substructure match, or None if the match is not a
    clean decomposition (leftover heavy atoms, substituents that touch, or fused rings)."""
    core = {match[i] for i in range(len(match)) if i not in labels}
    owner: dict[int, int] = {}
    bindings: dict[str, str] = {}
    for t_index, label in labels.items():
        start = match[t_index]
        anchor = match[template_mol.GetAtomWithIdx(t_index).GetNeighbors()[0].GetIdx()]
        component = _component(product, start, core)
        if any(atom in owner for atom in component):
            return None
        if _touches_core_elsewhere(product, component, core, anchor, start):
            return None
        owner.update(dict.fromkeys(component, t_index))
        value = _fragment_smiles(product, anchor, start)
        if label in bindings and bindings[label] != value:
            return None
        bindings[label] = value
    heavy = {a.GetIdx() for a in product.GetAtoms() if a.GetAtomicNum() > 1}
    if heavy - core - set(owner):
        return None
    return bindings


def _component(product: Any, start: int, core: set[int]) -> set[int]:
    seen, stack = {start}, [start]
    while stack:
        for neighbor in product.GetAtomWithIdx(stack.pop()).GetNeighbors():
            index = neighbor.GetIdx()
            if index not in seen and index not in core:
                seen.add(index)
                stack.append(index)
    return seen


def _touches_core_elsewhere(product: Any, component: set[int], core: set[int], anchor: int, start: int) -> bool:
    for index in component:
        for neighbor in product.GetAtomWithIdx(index).GetNeighbors():
            other = neighbor.GetIdx()
            if other in core and not (index == start and other == anchor):
                return True
    return False


def _blind(smiles: str) -> str:
    """Canonical SMILES without stereo (the stereo-blind comparison key)."""
    Chem = _chem()
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return smiles
    Chem.RemoveStereochemistry(mol)
    return Chem.MolToSmiles(mol)


def _fits_label(label: str, value: str) -> bool:
    """Context of a label's name: ``Ar…`` binds only a group attached through an aromatic
    atom (it is an aryl); other labels take anything."""
    if not label.startswith("Ar") or value == "H":
        return not label.startswith("Ar")
    Chem = _chem()
    mol = Chem.MolFromSmiles(value)
    if mol is None:
        return False
    return any(a.GetAtomicNum() == 0 and any(n.GetIsAromatic() for n in a.GetNeighbors()) for a in mol.GetAtoms())


def drawn_substituent(smiles: str) -> str | None:
    """A substituent drawn on its own (``R =`` followed by drawings whose attachment bond
    ends in a wavy line), as a fragment SMILES with one ``*``; None when the attachment
    point cannot be told.

    osra reads the wavy end of such a drawing either as an attachment point or, more
    often, as the far end of the attachment bond: a methyl.  So a reading with exactly
    one ``*``, bonded once, is a fragment already; one without ``*`` whose only methyl on
    a ring carbon or an alkene carbon (where a wavy bond is drawn: aryl, heteroaryl,
    ring, vinyl) is that bond's end gets the ``*`` there; anything else (no such methyl, or
    two of them, as in a drawn tolyl group) is refused rather than guessed.  A methyl on
    an open-chain sp³ carbon is never taken: it ends an alkyl chain of the drawing.

    >>> drawn_substituent("COc1cc(C)cc(Br)c1O")   # the ring methyl is the wavy bond
    '*c1cc(Br)c(O)c(OC)c1'
    >>> drawn_substituent("Cc1ccc(C)cc1") is None  # two ring methyls: which one?
    True
    """
    Chem = _chem()
    mol = Chem.MolFromSmiles(smiles) if smiles else None
    if mol is None or len(Chem.GetMolFrags(mol)) != 1:
        return None
    dummies = [a for a in mol.GetAtoms() if a.GetAtomicNum() == 0]
    if dummies:
        if len(dummies) == 1 and dummies[0].GetDegree() == 1 and mol.GetNumAtoms() > 1:
            editable = Chem.RWMol(mol)
            dummy = editable.GetAtomWithIdx(dummies[0].GetIdx())
            dummy.SetIsotope(0)
            dummy.SetAtomMapNum(0)
            return Chem.MolToSmiles(editable)
        return None
    stubs = [a.GetIdx() for a in mol.GetAtoms()
             if a.GetAtomicNum() == 6 and a.GetDegree() == 1 and a.GetTotalNumHs() == 3 and a.GetFormalCharge() == 0
             and _stub_anchor(a.GetNeighbors()[0])]
    if len(stubs) != 1:
        return None
    editable = Chem.RWMol(mol)
    stub = editable.GetAtomWithIdx(stubs[0])
    stub.SetAtomicNum(0)
    stub.SetNoImplicit(True)
    stub.SetNumExplicitHs(0)
    try:
        Chem.SanitizeMol(editable)
    except Exception:
        return None
    return Chem.MolToSmiles(editable)


def core_share(template_smiles: str, smiles: str, timeout_s: int = 2) -> float:
    """The fraction of the template's heavy atoms (labels left out) that a molecule shares
    with it: the maximum common substructure, elements and bond orders compared, rings
    matched whole (RDKit ``FindMCS``).  1.0 when the template lies inside the molecule.
    A search cut short by ``timeout_s`` counts as sharing everything (the cautious answer
    where this tells a drawn product from a drawn substituent).

    Hand check: the template ``*C1NC(=S)N(C)C(C)=C1C(=O)OC`` has 13 heavy atoms; the
    substituent ``COc1cc(C)cc(Br)c1O`` shares only a methoxy-like C–O pair with it: 2/13."""
    from rdkit.Chem import rdFMCS

    Chem = _chem()
    template, _ = _parse_template(template_smiles)
    mol = Chem.MolFromSmiles(smiles) if smiles else None
    heavy = sum(1 for a in template.GetAtoms() if a.GetAtomicNum() > 1)
    if mol is None or heavy == 0:
        return 0.0
    # the label atoms stay in the template: an element-compared search matches them to nothing
    found = rdFMCS.FindMCS([mol, template], ringMatchesRingOnly=True, completeRingsOnly=True, timeout=timeout_s)
    return 1.0 if found.canceled else found.numAtoms / heavy


def _stub_anchor(atom: Any) -> bool:
    """Can a wavy attachment bond be drawn from this atom (see :func:`drawn_substituent`)?"""
    Chem = _chem()
    if atom.GetAtomicNum() != 6:
        return False  # a methyl on O, N or S is a methoxy, N-methyl or SMe of the drawing
    return atom.GetIsAromatic() or atom.IsInRing() or any(
        bond.GetBondType() == Chem.BondType.DOUBLE and bond.GetOtherAtom(atom).GetAtomicNum() == 6
        for bond in atom.GetBonds())


def derive_bindings(product_template: str, product: str, explicit: Mapping[str, str] | None = None,
                    names: Collection[str] = ()) -> dict[str, str] | Failure:
    """Recover ``{label: fragment SMILES}`` by matching ``product`` to ``product_template``.

    Every substructure match (atom order and stereo ignored, H allowed at an attachment
    point) is decomposed into substituents; a decomposition is kept only if it covers
    every heavy atom, re-instantiates to ``product`` (compared stereo-blind: a template
    whose stereo is written differently from the product's still matches; the
    substituents keep the product's own stereo) and fits each label's context (``Ar``
    binds an aryl).  Distinct surviving binding sets are narrowed by ``explicit``
    bindings; more than one left is ``ambiguous_match``, none is ``no_match``.
    """
    found = _candidates(product_template, product, names)
    if isinstance(found, Failure):
        return found
    candidates, target = found
    return _choose(candidates, explicit or {}, product_template, target)


def _candidates(product_template: str, product: str,
                names: Collection[str]) -> tuple[list[dict[str, str]], str] | Failure:
    Chem = _chem()
    try:
        template_mol, labels = _parse_template(product_template, frozenset(names))
    except RGroupError as error:
        return error.failure
    mol = Chem.MolFromSmiles(product) if product else None
    if mol is None:
        return Failure("bad_smiles", f"product {product!r}: RDKit cannot parse it", template=product_template)
    target = Chem.MolToSmiles(mol)
    if not labels:
        if _blind(target) == _blind(Chem.MolToSmiles(template_mol)):
            return [{}], target
        return Failure("no_match", f"product {target!r} is not the variable-free template {product_template!r}",
                       template=product_template)
    with_h = Chem.AddHs(mol)
    query = _match_query(template_mol, labels)
    matches = with_h.GetSubstructMatches(query, uniquify=False, useChirality=False, maxMatches=MAX_MATCHES)
    candidates: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
    blind_target = _blind(target)
    for match in matches:
        found = _bindings_for_match(with_h, match, labels, template_mol)
        if found is None or not all(_fits_label(k, v) for k, v in found.items()):
            continue
        key = tuple(sorted(found.items()))
        if key in candidates:
            continue
        try:
            if _blind(instantiate(product_template, found, names)) == blind_target:
                candidates[key] = found
        except RGroupError:
            continue
    if not candidates:
        return Failure("no_match", f"product {target!r} does not match template {product_template!r}",
                       template=product_template)
    return list(candidates.values()), target


def _choose(candidates: list[dict[str, str]], explicit: Mapping[str, str], template: str,
            target: str) -> dict[str, str] | Failure:
    pool = _narrow(candidates, explicit)
    if len(pool) == 1:
        return pool[0]
    options = "; ".join(", ".join(f"{k}={v}" for k, v in sorted(c.items())) for c in pool[:3])
    return Failure("ambiguous_match", f"product {target!r} matches template {template!r} in "
                   f"{len(pool)} ways ({options})", template=template)


def _narrow(candidates: list[dict[str, str]], explicit: Mapping[str, str]) -> list[dict[str, str]]:
    pinned = {normalize_label(k): _canonical_value(v) for k, v in explicit.items()}
    agreeing = [c for c in candidates if all(_canonical_value(c[k]) == v for k, v in pinned.items() if k in c)]
    return agreeing or candidates


def _canonical_value(text: str) -> str:
    """A substituent spelled any supported way, as canonical fragment SMILES."""
    try:
        return _fragment_key(text)
    except RGroupError:
        return str(text).strip()


def _fragment_key(text: str) -> str:
    Chem = _chem()
    mol = _parse_substituent("?", text)
    if mol is None:
        return "H"
    return Chem.MolToSmiles(mol)


#: binding keys under which an entry may print the leaving group of a bare ``*`` reactant
LEAVING_GROUP_KEYS = ("LG", "X")


def _bare(template: str) -> bool:
    """A reactant template that is nothing but one attachment point (``*``, ``[R1]``)."""
    try:
        mol, labels = _parse_template(template)
    except RGroupError:
        return False
    return mol.GetNumAtoms() == 1 and len(labels) == 1


def _bare_reactant(template: str, bindings: Mapping[str, str], explicit: Mapping[str, str],
                   c_h: bool, names: Collection[str]) -> str | Failure:
    """The reactant a bare ``*`` template stands for: the substituent bound to its label,
    capped at the attachment point with H (a C–H functionalization) or with the leaving
    group the entry itself prints (``LG``/``X``); anything else is refused."""
    label = template_labels(template, names)[0]
    value = bindings.get(label)
    if value is None:
        return Failure("unbound_label", f"bare template {template!r}: no binding for {label}", label=label,
                       template=template)
    printed = {normalize_label(k): v for k, v in explicit.items()}
    leaving = next((printed[k] for k in LEAVING_GROUP_KEYS if k in printed and k != label), None)
    cap = leaving if leaving is not None else ("H" if c_h else None)
    if cap is None:
        return Failure("leaving_group_unknown", f"bare template {template!r} ({label}={value}): the reactant's "
                       "group at the attachment point is not in the product and the entry prints none "
                       f"({'/'.join(LEAVING_GROUP_KEYS)})", label=label, template=template)
    try:
        return instantiate("[*:1][*:2]", {"R1": value, "R2": cap})
    except RGroupError as error:
        return error.failure


def _instantiate_all(reactant_templates: list[str], merged: Mapping[str, str], explicit: Mapping[str, str],
                     c_h: bool, names: Collection[str]) -> list[DerivedSmiles] | Failure:
    reactants: list[DerivedSmiles] = []
    for template in reactant_templates:
        try:
            labels = template_labels(template, names)
            if _bare(template):
                smiles = _bare_reactant(template, merged, explicit, c_h, names)
                if isinstance(smiles, Failure):
                    return smiles
            else:
                smiles = instantiate(template, merged, names)
        except RGroupError as error:
            return error.failure
        reactants.append(DerivedSmiles(smiles, template, {k: merged[k] for k in labels if k in merged}))
    return reactants


def reactant_options(reactant_templates: list[str], product_template: str, product: str,
                     explicit: Mapping[str, str] | None = None, *, c_h_functionalization: bool = False,
                     names: Collection[str] = ()) -> tuple[list[tuple[dict[str, str], list[DerivedSmiles]]], str] | Failure:
    """Every distinct set of reactants that the matches of ``product`` to
    ``product_template`` give, each with the bindings behind it, and the canonical
    product; a :class:`Failure` when none does.  :func:`derive_reactants` keeps one."""
    explicit = dict(explicit or {})
    found = _candidates(product_template, product, names)
    if isinstance(found, Failure):
        return found
    candidates, target = found
    pool = _narrow(candidates, explicit)
    results: dict[tuple[str, ...], tuple[dict[str, str], list[DerivedSmiles]]] = {}
    failure: Failure | None = None
    for derived in pool:
        merged = {**derived, **{normalize_label(k): v for k, v in explicit.items()}}
        reactants = _instantiate_all(reactant_templates, merged, explicit, c_h_functionalization, names)
        if isinstance(reactants, Failure):
            failure = failure or reactants
            continue
        results.setdefault(tuple(sorted(reactants)), (merged, reactants))
    if not results:
        return failure  # type: ignore[return-value]  # pool is never empty, so a failure was kept
    return list(results.values()), target


def _agreeing(options: list[tuple[dict[str, str], list[DerivedSmiles]]],
              prefer: Sequence[Mapping[str, str]]) -> list[tuple[dict[str, str], list[DerivedSmiles]]]:
    """The options whose bindings agree with the most ``prefer`` bindings (one point per
    label bound to the same substituent in one of them); all of them on a tie at the top."""
    wanted = [{normalize_label(k): _canonical_value(v) for k, v in other.items()} for other in prefer]

    def agreement(option: tuple[dict[str, str], list[DerivedSmiles]]) -> int:
        bindings = {k: _canonical_value(v) for k, v in option[0].items()}
        return sum(1 for other in wanted for k, v in bindings.items() if other.get(k) == v)

    scores = [agreement(option) for option in options]
    best = max(scores)
    kept = [option for option, score in zip(options, scores) if score == best]
    return kept if len(kept) == 1 else options


def derive_reactants(reactant_templates: list[str], product_template: str, product: str,
                     explicit: Mapping[str, str] | None = None, *, c_h_functionalization: bool = False,
                     names: Collection[str] = (), prefer: Sequence[Mapping[str, str]] = ()) -> list[DerivedSmiles] | Failure:
    """Concrete reactants for one entry of a product scope.

    Bindings recovered from ``product`` against ``product_template`` (stereo-blind) are
    merged with the ``explicit`` entry bindings; explicit ones win (a leaving group such
    as ``X = I`` cannot be read from the product).  When the product matches in several
    ways (a symmetric core), the reactant templates break the tie: the candidates are
    kept if they all give the same reactants; else the bindings of the scope's other
    entries (``prefer``) decide — the assignment that agrees with the most of them is
    kept (a symmetric reagent such as R²S–SR² whose R² the other drawn products fix);
    still tied, the result is ``ambiguous_match``.  A
    bare ``*`` reactant template is the substituent-bearing reactant itself (H at the
    attachment point for a C–H functionalization, else the leaving group the entry
    prints, else ``leaving_group_unknown``).  Stereo centres of the product core are
    carried onto the reactants where the reactant template embeds in the product
    template (same CIP label).  Returns one :class:`DerivedSmiles` per reactant
    template — each carrying its template and the bindings it used — or a
    :class:`Failure`.
    """
    found = reactant_options(reactant_templates, product_template, product, explicit,
                             c_h_functionalization=c_h_functionalization, names=names)
    if isinstance(found, Failure):
        return found
    options, target = found
    if len(options) > 1 and prefer:
        options = _agreeing(options, prefer)
    if len(options) > 1:
        shown = " | ".join(".".join(sorted(reactants)) for _, reactants in options[:3])
        return Failure("ambiguous_match", f"product {target!r} matches template {product_template!r} in "
                       f"{len(options)} ways that the reactant templates do not reconcile ({shown})",
                       template=product_template)
    reactants = options[0][1]
    return [_carry_stereo(r, product_template, target, names) for r in reactants]


def _carry_stereo(reactant: DerivedSmiles, product_template: str, product: str, names: Collection[str]) -> DerivedSmiles:
    """Give ``reactant``'s core stereocentres the product's CIP labels, atom by atom, where
    the reactant template embeds in the product template; otherwise leave it as derived."""
    if not isinstance(reactant, DerivedSmiles):
        return reactant
    Chem = _chem()
    product_mol = Chem.MolFromSmiles(product)
    if product_mol is None or not Chem.FindMolChiralCenters(product_mol, useLegacyImplementation=False):
        return reactant
    try:
        rt_mol, rt_labels = _parse_template(reactant.template, frozenset(names))
        pt_mol, pt_labels = _parse_template(product_template, frozenset(names))
    except RGroupError:
        return reactant
    rt_core = Chem.RWMol(rt_mol)
    for index in sorted(rt_labels, reverse=True):
        rt_core.RemoveAtom(index)
    pt_core = Chem.RWMol(pt_mol)
    for index in sorted(pt_labels, reverse=True):
        pt_core.RemoveAtom(index)
    rt_core, pt_core = rt_core.GetMol(), pt_core.GetMol()
    if rt_core.GetNumAtoms() == 0 or pt_core.GetNumAtoms() == 0:
        return reactant
    for core in (rt_core, pt_core):
        core.UpdatePropertyCache(strict=False)
        Chem.FastFindRings(core)
    from rdkit.Chem import rdCIPLabeler, rdFMCS

    # the part of the core the reactant and product templates share (bonds may change order)
    common = rdFMCS.FindMCS([rt_core, pt_core], timeout=2, ringMatchesRingOnly=True,
                            bondCompare=rdFMCS.BondCompare.CompareAny)
    shared = Chem.MolFromSmarts(common.smartsString) if common.numAtoms else None
    pt_in_product = product_mol.GetSubstructMatch(pt_core, useChirality=False)
    reactant_mol = Chem.MolFromSmiles(str(reactant))
    if shared is None or reactant_mol is None or not pt_in_product:
        return reactant
    rt_in_reactant = reactant_mol.GetSubstructMatch(rt_core, useChirality=False)
    in_rt, in_pt = rt_core.GetSubstructMatch(shared), pt_core.GetSubstructMatch(shared)
    if not (rt_in_reactant and in_rt and in_pt):
        return reactant
    rdCIPLabeler.AssignCIPLabels(product_mol)
    # only an atom that can be a tetrahedral centre in the reactant takes one: a centre the
    # reaction creates (a C–C double bond of the reactant that becomes the product's
    # stereocentre) maps onto an sp2 atom of the reactant through the shared core, and a
    # tag there would describe a molecule that was never drawn
    can_be_centre = {info.centeredOn for info in Chem.FindPotentialStereo(reactant_mol)
                     if info.type == Chem.StereoType.Atom_Tetrahedral}
    changed = False
    for shared_index in range(shared.GetNumAtoms()):
        source = product_mol.GetAtomWithIdx(pt_in_product[in_pt[shared_index]])
        atom = reactant_mol.GetAtomWithIdx(rt_in_reactant[in_rt[shared_index]])
        if not source.HasProp("_CIPCode") or atom.GetIdx() not in can_be_centre:
            continue
        wanted = source.GetProp("_CIPCode")
        for tag in (Chem.ChiralType.CHI_TETRAHEDRAL_CW, Chem.ChiralType.CHI_TETRAHEDRAL_CCW):
            atom.SetChiralTag(tag)
            rdCIPLabeler.AssignCIPLabels(reactant_mol)
            if atom.HasProp("_CIPCode") and atom.GetProp("_CIPCode") == wanted:
                changed = True
                break
        else:
            atom.SetChiralTag(Chem.ChiralType.CHI_UNSPECIFIED)
    if not changed:
        return reactant
    return DerivedSmiles(Chem.MolToSmiles(reactant_mol), reactant.template, reactant.bindings)
