"""Reaction-centre transfer: the template row's change, carried back from a drawn product.

A substrate-scope figure often draws products that vary where no label stands: a
substituent at a ring position drawn as a bond into the ring ("R" at any position), or a
benzo ring swapped for a naphtho or thieno ring.  The R-group engine
(:mod:`labrecord.chemdata.rgroup`) cannot match those products to the product template.
What the template row does fix is the *reaction centre*: the atoms whose bonds the
reaction makes, breaks or changes.  :func:`retro` finds the centre of a drawn product and
undoes the template row's change there, keeping the rest of the drawn product as drawn.

1. **Atom map** (:func:`reaction_centre`).  Each reactant template is mapped into the
   product template by its maximum common substructure (elements compared, bond orders
   not, so a chain may close into a ring; RDKit ``FindMCS``), largest reactant first, each product
   atom taken once; of the ways to lay the shared part on both, the one that changes the
   fewest bonds and hydrogens is kept (an acid's C=O lies on the amide's C=O).  A reactant that shares fewer than half of its heavy atoms with the
   product is a reagent that gives at most an atom or two (NBS for its bromine); it is not
   mapped and is copied into every derived reaction as drawn.
2. **Centre.**  A product atom is in the centre when no reactant atom maps onto it, when
   its hydrogen count, charge or aromaticity differs from its reactant atom's, or when
   one of its bonds is new, gone or of another order (or joins two reactants).
3. **Transfer** (:func:`retro`).  The centre is looked for in the drawn product
   (elements and bonds as in the product template, aromaticity equal), with its first
   shell of neighbours (bonded the same way; elements checked outside rings only).  Every atom of the
   drawn product outside the centre is kept as drawn; the centre atoms come back as the
   reactant template has them, with the atoms the reaction lost (a leaving group, a
   printed ``X``); the hydrogens of a centre atom change by what the reaction changed
   (drawn count + reactant's − product's), so a substituent the drawing puts on a centre
   atom stays.  Labels left on the reactants take the entry's printed bindings.
4. **Forward** (:func:`forward`), for a grid that draws one reactant (the amines of an
   amine scope): the centre of one reactant template is looked for in the drawing, and
   the product is the product template with that reactant's part replaced by the
   drawing; a secondary amine holds the centre of a change that takes one N–H.

Every placement of the centre in the drawing is tried; the transfer holds only when
they all give the same reactants (a symmetric core), else it is ``ambiguous_match``.  A
template row whose centre holds a label (the reaction happens *at* the variable) gives
no centre to transfer: the R-group engine is the tool there.

Hand check (a thieno ring where the template draws a benzo ring): the template
``O=C(NN=CC(F)(F)F)c1ccccc1[X]`` + ``NC#N`` >> ``O=c1c2ccccc2[nH]c2nc(C(F)(F)F)nn12``
has its centre on the two new rings and the two ring carbons fused to them; the drawn
product ``O=c1c2sccc2[nH]c2nc(C(F)(F)F)nn12`` keeps its thiophene, and with ``X = Br``
the reactants are ``O=C(NN=CC(F)(F)F)c1sccc1Br`` and ``NC#N``.

Written here rather than taken from a template extractor: rdchiral's extractor pins each
changed atom's degree and hydrogen count, which refuses exactly the drawn products this
module is for (a substituent on a centre atom, another ring fused at the centre).
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from labrecord.chemdata import rgroup

#: a reactant template sharing less than this share of its heavy atoms with the product
#: template is a reagent giving an atom or two, not a mapped reactant
MIN_MAPPED_SHARE = 0.5
#: a bound on the placements of the centre tried in one drawn product
MAX_PLACEMENTS = 200
#: the MCS search of one reactant template against the product template, in seconds
MCS_TIMEOUT_S = 2


@dataclass(frozen=True)
class Centre:
    """The template row's reaction centre (see the module docstring)."""

    reactant_templates: tuple[str, ...]
    product_template: str
    #: per reactant template: {reactant atom index: product atom index} (empty: a reagent)
    maps: tuple[dict[int, int], ...]
    #: product template atoms in the centre
    atoms: frozenset[int]
    #: labels of each reactant template's attachment points {atom index: label}
    labels: tuple[dict[int, str], ...] = field(default_factory=tuple)
    #: labels of the product template {atom index: label}
    product_labels: dict[int, str] = field(default_factory=dict)


def _chem() -> Any:
    from rdkit import Chem, rdBase

    rdBase.DisableLog("rdApp.*")
    return Chem


def _heavy(mol: Any) -> int:
    return sum(1 for atom in mol.GetAtoms() if atom.GetAtomicNum() != 1)


def _map_into(reactant: Any, product: Any, taken: set[int]) -> dict[int, int]:
    """{reactant atom: product atom} by the maximum common substructure, product atoms in
    ``taken`` excluded; empty when the shared part is under :data:`MIN_MAPPED_SHARE`."""
    from rdkit.Chem import rdFMCS

    Chem = _chem()
    found = rdFMCS.FindMCS([reactant, product], timeout=MCS_TIMEOUT_S,
                           atomCompare=rdFMCS.AtomCompare.CompareElements,
                           bondCompare=rdFMCS.BondCompare.CompareAny)
    if not found.numAtoms or found.numAtoms < MIN_MAPPED_SHARE * _heavy(reactant) or found.numAtoms < 2:
        return {}
    query = Chem.MolFromSmarts(found.smartsString)
    if query is None:
        return {}
    sides = [reactant.GetSubstructMatches(query, uniquify=False, useChirality=False, maxMatches=50),
             [m for m in product.GetSubstructMatches(query, uniquify=False, useChirality=False, maxMatches=200)
              if not taken.intersection(m)][:50]]
    if not sides[0] or not sides[1]:
        return {}
    # of the ways to lay the shared part on both, the one that changes the fewest bonds and
    # hydrogens (the C=O of an acid on the amide's C=O, not its OH)
    best = min(((dict(zip(r, p)), _changes(reactant, product, dict(zip(r, p)))) for r in sides[0] for p in sides[1]),
               key=lambda item: item[1])
    return best[0]


def _changes(reactant: Any, product: Any, mapping: dict[int, int]) -> int:
    changed = sum(1 for r, p in mapping.items()
                  if reactant.GetAtomWithIdx(r).GetTotalNumHs() != product.GetAtomWithIdx(p).GetTotalNumHs())
    for bond in reactant.GetBonds():
        a, b = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        if a in mapping and b in mapping:
            other = product.GetBondBetweenAtoms(mapping[a], mapping[b])
            changed += other is None or other.GetBondType() != bond.GetBondType()
    return changed


@lru_cache(maxsize=256)
def reaction_centre(reactant_templates: tuple[str, ...], product_template: str,
                    names: frozenset[str] = frozenset()) -> Centre | None:
    """The centre of the template row, or None when there is none to transfer: a template
    RDKit cannot parse, no reactant mapped, no atom changed, or a label in the centre."""
    try:
        product, product_labels = rgroup._parse_template(product_template, names)
        parsed = [rgroup._parse_template(t, names) for t in reactant_templates]
    except rgroup.RGroupError:
        return None
    order = sorted(range(len(parsed)), key=lambda i: -_heavy(parsed[i][0]))
    maps: list[dict[int, int]] = [{} for _ in parsed]
    taken: set[int] = set()
    for i in order:
        maps[i] = _map_into(parsed[i][0], product, taken)
        taken.update(maps[i].values())
    if not any(maps):
        return None
    centre = {a.GetIdx() for a in product.GetAtoms() if a.GetIdx() not in taken}
    owner = {p: (i, r) for i, mapping in enumerate(maps) for r, p in mapping.items()}
    for p, (i, r) in owner.items():
        pa, ra = product.GetAtomWithIdx(p), parsed[i][0].GetAtomWithIdx(r)
        if (pa.GetTotalNumHs() != ra.GetTotalNumHs() or pa.GetFormalCharge() != ra.GetFormalCharge()
                or pa.GetIsAromatic() != ra.GetIsAromatic()):
            centre.add(p)
    for bond in product.GetBonds():
        a, b = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        if a not in owner or b not in owner or owner[a][0] != owner[b][0]:
            centre.update((a, b))
            continue
        mol = parsed[owner[a][0]][0]
        before = mol.GetBondBetweenAtoms(owner[a][1], owner[b][1])
        if before is None or before.GetBondType() != bond.GetBondType():
            centre.update((a, b))
    for i, mapping in enumerate(maps):
        for bond in parsed[i][0].GetBonds():
            a, b = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
            if a in mapping and b in mapping:
                if product.GetBondBetweenAtoms(mapping[a], mapping[b]) is None:
                    centre.update((mapping[a], mapping[b]))
            elif a in mapping or b in mapping:  # a bond to an atom the reaction lost
                centre.add(mapping[a] if a in mapping else mapping[b])
    if not centre or centre & set(product_labels):
        return None
    return Centre(tuple(reactant_templates), product_template, tuple(maps), frozenset(centre),
                  tuple(labels for _, labels in parsed), dict(product_labels))


def _copy_atom(source: Any, hydrogens: int, keep_stereo: bool = True) -> Any:
    """A copy of ``source`` with exactly ``hydrogens`` hydrogens; its tetrahedral tag only
    when ``keep_stereo`` (an atom whose bonds are added in their original order)."""
    Chem = _chem()
    atom = Chem.Atom(source.GetAtomicNum())
    atom.SetFormalCharge(source.GetFormalCharge())
    atom.SetIsAromatic(source.GetIsAromatic())
    atom.SetIsotope(source.GetIsotope())
    if keep_stereo:
        atom.SetChiralTag(source.GetChiralTag())
    atom.SetNoImplicit(True)
    atom.SetNumExplicitHs(max(0, hydrogens))
    return atom


def _bond(built: Any, a: int, b: int, like: Any) -> None:
    built.AddBond(a, b, like.GetBondType())
    built.GetBondBetweenAtoms(a, b).SetIsAromatic(like.GetIsAromatic())


def _placements(centre: Centre, product: Any, drawn: Any) -> list[dict[int, int]]:
    """Every placement {product template atom: drawn atom} of the centre in the drawing."""
    return _place(product, set(centre.atoms), drawn)


def _place(template: Any, core: set[int], drawn: Any) -> list[dict[int, int]]:
    """Every placement {template atom: drawn atom} of the ``core`` atoms in the drawing.

    The core is looked for with its first shell: each atom bonded to it must be there,
    bonded the same way; a shell atom outside a ring has its element checked, one in a
    ring (where a thieno ring may stand for a benzo ring) any element.  A label of the
    template matches any atom."""
    from rdkit.Chem import rdqueries

    Chem = _chem()
    shell = {n.GetIdx() for p in core for n in template.GetAtomWithIdx(p).GetNeighbors()} - core
    atoms = sorted(core | shell)
    query = Chem.RWMol(template)
    for bond in list(template.GetBonds()):
        a, b = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        if a in shell and b in shell:
            query.RemoveBond(a, b)
    for index in atoms:
        atom = template.GetAtomWithIdx(index)
        if atom.GetAtomicNum() == 0 or (index in shell and atom.IsInRing()):
            query.ReplaceAtom(index, rdqueries.AtomNumGreaterQueryAtom(0))
    for index in sorted(set(range(template.GetNumAtoms())) - set(atoms), reverse=True):
        query.RemoveAtom(index)  # the atoms left keep their order: query atom k is atoms[k]
    found = []
    for match in drawn.GetSubstructMatches(query, uniquify=False, useChirality=False, maxMatches=MAX_PLACEMENTS):
        placed = {p: d for p, d in zip(atoms, match) if p in core}
        if all(template.GetAtomWithIdx(p).GetAtomicNum() == 0
               or template.GetAtomWithIdx(p).GetIsAromatic() == drawn.GetAtomWithIdx(d).GetIsAromatic()
               for p, d in placed.items()):
            found.append(placed)
    return found


def _undo(centre: Centre, product: Any, reactants: Sequence[Any], drawn: Any,
          placed: dict[int, int]) -> list[tuple[int, str]] | None:
    """The reactants (template index, SMILES with the templates' labels) one placement
    gives, or None when it cannot be undone there."""
    Chem = _chem()
    built = Chem.RWMol()
    inverse = {d: p for p, d in placed.items()}
    back: dict[int, tuple[int, int]] = {}  # product template atom -> (reactant, reactant atom)
    for i, mapping in enumerate(centre.maps):
        for r, p in mapping.items():
            back[p] = (i, r)
    new_index: dict[tuple[str, int, int], int] = {}
    owner_of: dict[int, int] = {}
    # the drawing outside the centre, as drawn
    for atom in drawn.GetAtoms():
        if atom.GetIdx() not in inverse:
            new_index[("d", 0, atom.GetIdx())] = built.AddAtom(_copy_atom(atom, atom.GetTotalNumHs()))
    # the centre and the atoms the reaction lost, as each mapped reactant template has them
    for i, mapping in enumerate(centre.maps):
        if not mapping:
            continue
        mol = reactants[i]
        for atom in mol.GetAtoms():
            r = atom.GetIdx()
            onto = mapping.get(r)
            if onto is not None and onto not in centre.atoms:
                continue
            hydrogens = atom.GetTotalNumHs()
            if onto is not None:  # the drawing may put a substituent where the template has H
                hydrogens += drawn.GetAtomWithIdx(placed[onto]).GetTotalNumHs() - product.GetAtomWithIdx(onto).GetTotalNumHs()
                if hydrogens < 0:
                    return None
            copy = _copy_atom(atom, hydrogens, keep_stereo=False)  # its bonds come in another order
            if r in centre.labels[i]:
                copy.SetAtomMapNum(1 + len(new_index))  # a label, named again after writing
            index = built.AddAtom(copy)
            new_index[("r", i, r)] = index
            owner_of[index] = i
        for bond in mol.GetBonds():
            a, b = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
            if ("r", i, a) in new_index and ("r", i, b) in new_index:
                _bond(built, new_index[("r", i, a)], new_index[("r", i, b)], bond)
    for bond in drawn.GetBonds():
        a, b = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        ends: list[int | None] = []
        for end in (a, b):
            if end not in inverse:
                ends.append(new_index[("d", 0, end)])
            elif inverse[end] in back:
                i, r = back[inverse[end]]
                ends.append(new_index[("r", i, r)])
            else:
                ends.append(None)
        if a in inverse and b in inverse:
            continue  # a bond inside the centre: the reactant templates gave it
        first, second = ends
        if first is None or second is None:
            return None  # the drawing hangs something on an atom no reactant brought
        _bond(built, first, second, bond)
    mol = built.GetMol()
    try:
        Chem.SanitizeMol(mol)
    except Exception:  # noqa: BLE001 - an impossible undo at this placement
        return None
    label_of = {}
    for (kind, i, r), index in new_index.items():
        if kind == "r" and r in centre.labels[i]:
            label_of[mol.GetAtomWithIdx(index).GetAtomMapNum()] = centre.labels[i][r]
    out: list[tuple[int, str]] = []
    groups: list[tuple[int, ...]] = []
    pieces = Chem.GetMolFrags(mol, asMols=True, sanitizeFrags=False, fragsMolAtomMapping=groups)
    for piece, group in zip(pieces, groups):
        owners = {owner_of[index] for index in group if index in owner_of}
        if len(owners) != 1:
            return None  # a piece of the drawing that belongs to no reactant, or joins two
        smiles = Chem.MolToSmiles(piece)
        for number, label in label_of.items():
            smiles = smiles.replace(f"[*:{number}]", f"[{label}]" if label != "*" else "*")
        out.append((owners.pop(), smiles))
    return sorted(out)


def retro(reactant_templates: Sequence[str], product_template: str, product: str,
          bindings: Mapping[str, str] | None = None, names: Collection[str] = ()) -> list[str] | rgroup.Failure:
    """The reactants of a drawn ``product``, by undoing the template row's change at its
    centre (module docstring), in the order of ``reactant_templates``; labels left on a
    reactant take ``bindings``.  A :class:`~labrecord.chemdata.rgroup.Failure` when the
    row has no centre, the drawing does not hold it, or its placements disagree."""
    Chem = _chem()
    centre = reaction_centre(tuple(reactant_templates), product_template, frozenset(names))
    if centre is None:
        return rgroup.Failure("no_match", f"the template row ({'.'.join(reactant_templates)}>>{product_template}) "
                              "has no reaction centre to carry over")
    drawn = Chem.MolFromSmiles(product) if product else None
    if drawn is None:
        return rgroup.Failure("bad_smiles", f"product {product!r}: RDKit cannot parse it")
    template, _ = rgroup._parse_template(product_template, frozenset(names))
    parsed = [rgroup._parse_template(t, frozenset(names))[0] for t in reactant_templates]
    results: dict[tuple[str, ...], list[str]] = {}
    for placed in _placements(centre, template, drawn):
        undone = _undo(centre, template, parsed, drawn, placed)
        if undone is None:
            continue
        derived = _finish(reactant_templates, centre, undone, bindings or {}, names)
        if isinstance(derived, rgroup.Failure):
            continue
        results.setdefault(tuple(sorted(derived)), derived)
    if not results:
        return rgroup.Failure("no_match", f"product {product!r} does not hold the template row's reaction centre")
    if len(results) > 1:
        shown = " | ".join(".".join(r) for r in list(results.values())[:3])
        return rgroup.Failure("ambiguous_match", f"product {product!r} holds the reaction centre in "
                              f"{len(results)} ways that give different reactants ({shown})")
    return next(iter(results.values()))


def _finish(reactant_templates: Sequence[str], centre: Centre, undone: list[tuple[int, str]],
            bindings: Mapping[str, str], names: Collection[str]) -> list[str] | rgroup.Failure:
    """One SMILES per reactant template: the undone ones with their labels bound, the
    unmapped reagents as drawn (their labels bound too)."""
    Chem = _chem()
    by_template: dict[int, str] = {}
    for i, smiles in undone:
        if i in by_template:
            return rgroup.Failure("no_match", "a reactant template came back in two pieces")
        by_template[i] = smiles
    out = []
    for i, template in enumerate(reactant_templates):
        if i not in by_template and centre.maps[i]:
            return rgroup.Failure("no_match", f"reactant template {template!r} did not come back")
        try:
            made = rgroup.instantiate(by_template.get(i, template), bindings, names)
        except rgroup.RGroupError as error:
            return error.failure
        mol = Chem.MolFromSmiles(made)
        if mol is None:
            return rgroup.Failure("bad_smiles", f"derived reactant {made!r}: RDKit cannot parse it")
        out.append(Chem.MolToSmiles(mol))
    return out


def forward(reactant_templates: Sequence[str], product_template: str, reactant: str,
            bindings: Mapping[str, str] | None = None,
            names: Collection[str] = ()) -> tuple[int, list[str], str] | rgroup.Failure:
    """The reaction of a drawn ``reactant`` (a grid of drawn amines for an amine scope):
    (index of the reactant template it stands for, the reactants — the drawing in that
    place, the other templates as drawn with ``bindings`` — and the product), by making
    the template row's change at the drawing's centre.  The drawing must hold the centre
    of exactly one reactant template, and every placement there must give one product.

    Hand check: ``[R]C=O`` + ``NC`` >> ``[R]C=NC`` (an imine) has its centre on the
    aldehyde's carbon and oxygen and on the amine's N; a drawn ``CCCN`` holds the amine's
    centre only (no C=O), so it stands for ``NC`` and the product is ``[R]C=NCCC`` — here
    with ``R = Ph``: ``C(=NCCC)c1ccccc1``.  A drawn secondary amine holds it too (its N
    has the one H the reaction takes), a tertiary amine does not."""
    Chem = _chem()
    centre = reaction_centre(tuple(reactant_templates), product_template, frozenset(names))
    if centre is None:
        return rgroup.Failure("no_match", f"the template row ({'.'.join(reactant_templates)}>>{product_template}) "
                              "has no reaction centre to carry over")
    drawn = Chem.MolFromSmiles(reactant) if reactant else None
    if drawn is None:
        return rgroup.Failure("bad_smiles", f"reactant {reactant!r}: RDKit cannot parse it")
    product, _ = rgroup._parse_template(product_template, frozenset(names))
    parsed = [rgroup._parse_template(t, frozenset(names))[0] for t in reactant_templates]
    fits: dict[int, set[str]] = {}
    for v, mapping in enumerate(centre.maps):
        if not mapping:
            continue
        mol = parsed[v]
        core = {r for r in range(mol.GetNumAtoms()) if mapping.get(r, -1) in centre.atoms or r not in mapping}
        if not core or not any(mapping.get(r) in centre.atoms for r in core):
            continue
        made = set()
        for placed in _place(mol, core, drawn):
            built = _make(centre, product, mol, v, drawn, placed)
            if built is not None:
                made.add(built)
        if made:
            fits[v] = made
    if not fits:
        return rgroup.Failure("no_match", f"reactant {reactant!r} holds the centre of no reactant template")
    if len(fits) > 1 or len(next(iter(fits.values()))) > 1:
        return rgroup.Failure("ambiguous_match", f"reactant {reactant!r} holds the reaction centre in several ways")
    v, products = next(iter(fits.items()))
    try:
        product_smiles = Chem.MolToSmiles(Chem.MolFromSmiles(rgroup.instantiate(products.pop(), bindings or {}, names)))
        reactants = [Chem.MolToSmiles(drawn) if i == v else rgroup.instantiate(t, bindings or {}, names)
                     for i, t in enumerate(reactant_templates)]
    except rgroup.RGroupError as error:
        return error.failure
    return v, reactants, product_smiles


def _make(centre: Centre, product: Any, template: Any, v: int, drawn: Any, placed: dict[int, int]) -> str | None:
    """The product (SMILES with the product template's labels) one placement of reactant
    template ``v`` in the drawing gives, or None when the change cannot be made there."""
    Chem = _chem()
    mapping = centre.maps[v]
    replaced = {p for r, p in mapping.items() if p not in centre.atoms}  # the drawing stands there
    into = {p: r for r, p in mapping.items()}
    built = Chem.RWMol()
    index: dict[tuple[str, int], int] = {}
    labels: dict[int, str] = {}
    for atom in product.GetAtoms():
        p = atom.GetIdx()
        if p in replaced:
            continue
        hydrogens = atom.GetTotalNumHs()
        if p in into and into[p] in placed:  # a centre atom of the drawing: it keeps its extra groups
            hydrogens += drawn.GetAtomWithIdx(placed[into[p]]).GetTotalNumHs() - template.GetAtomWithIdx(into[p]).GetTotalNumHs()
            if hydrogens < 0:
                return None
        copy = _copy_atom(atom, hydrogens, keep_stereo=False)
        if p in centre.product_labels:
            copy.SetAtomMapNum(1 + len(labels))
            labels[copy.GetAtomMapNum()] = centre.product_labels[p]
        index[("p", p)] = built.AddAtom(copy)
    used = set(placed.values())
    for atom in drawn.GetAtoms():
        if atom.GetIdx() not in used:
            index[("d", atom.GetIdx())] = built.AddAtom(_copy_atom(atom, atom.GetTotalNumHs()))
    for bond in product.GetBonds():
        a, b = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        if ("p", a) in index and ("p", b) in index:
            _bond(built, index[("p", a)], index[("p", b)], bond)
    at_product = {d: mapping[r] for r, d in placed.items() if r in mapping}
    for bond in drawn.GetBonds():
        a, b = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        if a in used and b in used:
            continue
        ends: list[int] = []
        for end in (a, b):
            if end not in used:
                ends.append(index[("d", end)])
            elif end in at_product and ("p", at_product[end]) in index:
                ends.append(index[("p", at_product[end])])
            else:
                ends.append(-1)  # an atom the reaction takes away: what hangs on it goes too
        if -1 not in ends:
            _bond(built, ends[0], ends[1], bond)
    mol = built.GetMol()
    try:
        Chem.SanitizeMol(mol)
    except Exception:  # noqa: BLE001 - an impossible change at this placement
        return None
    groups: list[tuple[int, ...]] = []
    pieces = Chem.GetMolFrags(mol, asMols=True, sanitizeFrags=False, fragsMolAtomMapping=groups)
    kept = [piece for piece, group in zip(pieces, groups)
            if any(i in group for key, i in index.items() if key[0] == "p")]
    if len(kept) != 1:
        return None
    smiles = Chem.MolToSmiles(kept[0])
    for number, label in labels.items():
        smiles = smiles.replace(f"[*:{number}]", f"[{label}]" if label != "*" else "*")
    return smiles
