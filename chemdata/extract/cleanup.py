"""Known misreadings of each structure reader, mapped back to what was drawn.

Every row of :data:`FIXES` is one misreading seen on journal figures: the reader it
belongs to, what the figure drew, what the reader writes instead, a worked example
(``read`` -> ``cleaned``, the test case of the row) and the edit, done on the RDKit graph
(never on the SMILES text, so an atom is judged by its bonds, not its spelling).

* R-group labels read as elements: DECIMER writes a printed ``R`` as argon (``[ArH]``),
  astatine (``[At]``) or a lone boron (``[B]``): a one-bonded atom of these elements
  becomes an attachment point ``*`` (named later from the printed labels, or fitted to an
  entry's single variable).  A real boron has three bonds; argon and astatine none.
* A wavy attachment bond (``R =`` and a drawn aryl ending in a wavy line) read as an
  iodine-123 (``[123I]``) or as a carbon radical bonded once (``[CH]``): the atom
  becomes the attachment point ``*``.  No figure of a substrate scope draws a
  radio-iodinated ring or a radical.
* ``Ph`` read as lead (``[Pb]``) or as a terminal phosphorus (``P`` with one single bond,
  a PH₂ group that the figures never draw): the atom becomes a phenyl ring — only where
  ``Ph`` is printed in the drawing, when its words are known (DECIMER writes ``[Pb]``
  for a printed ``Bpin`` as well).
* ``Ts`` (tosyl) read as a numbered label ``[Y8]``, a sulfur isotope ``[35S]``, a lone
  silicon ``[Si]`` or a triflyl ``S(=O)(=O)CF3``: the atom becomes the tosyl group (the
  CF3 a p-tolyl), only where ``Ts`` is printed in the drawing (a word joined to its
  atom, ``N–Ts`` or ``NTs``, counts) and, for the triflyl, no ``Tf`` or ``CF3`` is.
* Drawn hydrogens (``H–N–H``) read as deuterium or tritium: the isotope is dropped.  A
  drawn H beside an R on one carbon read as a second R (``NC([R])[R]``) becomes the
  hydrogen again where the drawing prints that R fewer times and an H for each extra one.
* A label run together with a compound number (``[R19a]`` for an ``R`` printed beside
  ``9a``): the label becomes a bare attachment point.
* A substituent drawn into a ring at no fixed position (its bond crosses into the ring),
  read apart from the ring (DECIMER's ``.C[R]``) or with the crossing point as a ring
  atom (osra's seven-membered ``**1cccccc1``): the ring is kept whole and the substituent dropped; each
  drawn product says where it stands (:mod:`labrecord.chemdata.transfer`).
* Compound numbers printed under a drawing (``4a``, ``12``) read as stray atoms
  (``.[Si]``, ``.[Ba]``, ``.CC``): a disconnected piece of at most two heavy atoms beside
  a drawing of at least four is dropped (a piece holding an attachment point is a drawn
  variable position and stays, and an ion is left to the next row).
* A label or number read as a lone monatomic ion (``O=C[R].[I-]``) that leaves the
  reading charged: the ion is dropped when its charge is the reading's whole net charge,
  so a drawn salt (``C[N+](C)(C)C.[I-]``, charges balanced) keeps its counter-ion.
* A printed hydrogen count read as a charge or a radical (``[NH-]``, ``C[O-]``, ``C[N]``
  for ``NH2`` and ``CH2OH``): an anion that nothing in the reading balances gets its
  hydrogen back, and so does a bracketed nitrogen short of its valence (DECIMER).  Charges
  that balance (nitro, salts) and oxygen radicals (a drawn nitroxyl) are left.

:func:`clean` applies a reader's rows in table order and returns the cleaned SMILES and
the names of the rows that changed it (kept in the trajectory).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from labrecord.chemdata.abbreviations import ABBREVIATIONS


@dataclass(frozen=True)
class Fix:
    """One known misreading: ``apply(mol, limit)`` edits the molecule in place, True when it
    changed it."""

    name: str
    readers: frozenset[str]
    drawn: str
    read_as: str
    example: tuple[str, str]
    #: edits the molecule in place, at most ``limit`` atoms where a limit is given
    #: (mol, limit) -> changed; (mol, limit, words) for a row that ``uses_words``
    apply: Callable[..., bool]
    #: a word that must be printed in the drawing for the row to apply, when the printed
    #: words are known, and then to as many atoms as it is printed (``Ph``: DECIMER
    #: writes ``[Pb]`` for a printed ``Bpin`` too)
    printed_as: str | None = None
    #: words whose printing in the drawing keeps the row from applying (a printed ``Tf``
    #: makes a triflyl real)
    unless_printed: tuple[str, ...] = ()
    #: ``apply`` takes the printed words as a third argument (None when not known)
    uses_words: bool = False
    #: the words printed in the example's drawing, where the row needs them
    example_words: tuple[str, ...] | None = None


def _one_bond(atom: Any) -> bool:
    return atom.GetDegree() == 1 and atom.GetFormalCharge() == 0 and not atom.IsInRing()


def _attachments_where(chosen: Callable[[Any], bool]) -> Callable[[Any, int | None], bool]:
    """A row that makes every one-bonded atom ``chosen`` accepts an attachment point ``*``."""
    def apply(mol: Any, limit: int | None = None) -> bool:
        changed = False
        for atom in mol.GetAtoms():
            if _one_bond(atom) and chosen(atom):
                atom.SetAtomicNum(0)
                atom.SetNumRadicalElectrons(0)
                atom.SetNumExplicitHs(0)
                atom.SetNoImplicit(True)
                atom.SetIsotope(0)
                changed = True
        return changed
    return apply


def _to_attachment(symbols: set[str], need_no_h: bool = False, isotope: int | None = None) -> Callable[[Any, int | None], bool]:
    return _attachments_where(lambda atom: atom.GetSymbol() in symbols and (not need_no_h or atom.GetTotalNumHs() == 0)
                              and (isotope is None or atom.GetIsotope() == isotope))


def _radical_carbon(atom: Any) -> bool:
    """A carbon radical ([CH], [CH2]): the molecule is not sanitized here, so a bracket
    carbon short of four bonds and hydrogens is one."""
    return atom.GetAtomicNum() == 6 and atom.GetNoImplicit() and \
        atom.GetNumExplicitHs() + sum(b.GetBondTypeAsDouble() for b in atom.GetBonds()) < 4


def _single_bonded(atom: Any) -> bool:
    from rdkit import Chem

    return all(b.GetBondType() == Chem.BondType.SINGLE for b in atom.GetBonds())


def _to_phenyl(symbol: str) -> Callable[[Any, int | None], bool]:
    def apply(mol: Any, limit: int | None = None) -> bool:
        targets = [a.GetIdx() for a in mol.GetAtoms()
                   if a.GetSymbol() == symbol and _one_bond(a) and _single_bonded(a) and a.GetIsotope() == 0]
        targets = targets if limit is None else targets[:limit]
        for index in targets:
            atom = mol.GetAtomWithIdx(index)
            atom.SetAtomicNum(6)
            atom.SetNumExplicitHs(0)
            atom.SetNoImplicit(False)
            _benzene_from(mol, index)
        return bool(targets)
    return apply


def _benzene_from(mol: Any, index: int) -> list[int]:
    """Make carbon ``index`` the first atom of a new aromatic six-ring; its atoms in ring order."""
    from rdkit import Chem

    mol.GetAtomWithIdx(index).SetIsAromatic(True)
    ring = [index] + [mol.AddAtom(Chem.Atom(6)) for _ in range(5)]
    for atom in ring[1:]:
        mol.GetAtomWithIdx(atom).SetIsAromatic(True)
    for a, b in zip(ring, ring[1:] + ring[:1]):
        mol.AddBond(a, b, Chem.BondType.AROMATIC)
    return ring


#: labels as :mod:`labrecord.chemdata.rgroup` spells them, a label glued to a number, and
#: the numbered ``Y`` DECIMER writes for a printed ``Ts`` (not a SMILES atom: kept as a label)
_GLUED = re.compile(r"^R\d*[a-z]+$")
_LABEL_TOKEN = re.compile(r"\[(R\d*[a-z]+|Y\d+)\]")
LABEL_PROP = "label"


def _label_to_group(label: str, fragment: str) -> Callable[[Any, int | None], bool]:
    """Replace each one-bonded label atom whose label matches ``label`` (a pattern) by the
    ``fragment`` (a SMILES with one ``*``, from the abbreviation table)."""
    pattern = re.compile(label)

    def apply(mol: Any, limit: int | None = None) -> bool:
        from rdkit import Chem

        targets = [a.GetIdx() for a in mol.GetAtoms() if a.GetAtomicNum() == 0 and a.HasProp(LABEL_PROP)
                   and pattern.match(a.GetProp(LABEL_PROP)) and a.GetDegree() == 1]
        targets = targets if limit is None else targets[:limit]
        group = Chem.MolFromSmiles(fragment)
        star = next(a for a in group.GetAtoms() if a.GetAtomicNum() == 0)
        (inner,) = [n.GetIdx() for n in star.GetNeighbors()]
        doomed = []
        for index in targets:
            (bond,) = mol.GetAtomWithIdx(index).GetBonds()
            anchor = bond.GetOtherAtomIdx(index)
            offset = mol.GetNumAtoms()
            mol.InsertMol(group)
            mol.AddBond(anchor, offset + inner, Chem.BondType.SINGLE)
            doomed += [index, offset + star.GetIdx()]
        for index in sorted(doomed, reverse=True):
            mol.RemoveAtom(index)
        return bool(targets)
    return apply


def _atom_to_group(symbol: str, fragment: str, misread: Callable[[Any], bool]) -> Callable[[Any, int | None], bool]:
    """Replace each one-bonded ``symbol`` atom that ``misread`` picks by ``fragment``: the
    atom becomes a label and goes the label route of :func:`_label_to_group`.  DECIMER
    writes a printed ``Ts`` as a sulfur isotope ``[35S]`` (no scope figure draws a
    radiolabel) and as a lone ``[Si]`` without hydrogen (a radical no figure draws)."""
    swap = _label_to_group(r"^misread$", fragment)

    def apply(mol: Any, limit: int | None = None) -> bool:
        targets = [a for a in mol.GetAtoms() if a.GetSymbol() == symbol and a.GetDegree() == 1 and misread(a)]
        targets = targets if limit is None else targets[:limit]
        for atom in targets:
            atom.SetAtomicNum(0)
            atom.SetIsotope(0)
            atom.SetNoImplicit(True)
            atom.SetNumExplicitHs(0)
            atom.SetProp(LABEL_PROP, "misread")
        return bool(targets) and swap(mol, None)
    return apply


def _triflyl_to_tosyl(mol: Any, limit: int | None = None) -> bool:
    """The CF3 of each S(=O)(=O)CF3 becomes a p-tolyl (DECIMER writes a printed ``Ts`` as
    triflyl)."""
    from rdkit import Chem

    pattern = Chem.MolFromSmarts("S(=O)(=O)[CX4](F)(F)F")
    mol.UpdatePropertyCache(strict=False)
    found = list(mol.GetSubstructMatches(pattern))
    found = found if limit is None else found[:limit]
    doomed: list[int] = []
    for match in found:
        carbon, fluorines = match[3], match[4:]
        ring = _benzene_from(mol, carbon)
        methyl = mol.AddAtom(Chem.Atom(6))
        mol.AddBond(ring[3], methyl, Chem.BondType.SINGLE)
        doomed += list(fluorines)
    for index in sorted(doomed, reverse=True):
        mol.RemoveAtom(index)
    return bool(found)


def _surplus_labels_to_hydrogen(mol: Any, limit: int | None = None, words: list[str] | None = None) -> bool:
    """Where a label sits on one atom more often than it is printed in the drawing and an
    ``H`` is printed for each extra one (DECIMER's ``NC([R])[R]`` for a drawn H–C(–R)),
    the extra label atoms are dropped, so the atom keeps its hydrogen.  Only when all of
    that label's atoms hang on one atom, where the choice of which to drop is moot."""
    if not words:
        return False
    printed: dict[str, int] = {}
    for word in words:
        for part in re.split(r"[+=]", word):
            printed[part] = printed.get(part, 0) + 1
    hydrogens = printed.get("H", 0)
    by_label: dict[str, list[int]] = {}
    for atom in mol.GetAtoms():
        if atom.GetAtomicNum() == 0 and atom.HasProp(LABEL_PROP) and atom.GetDegree() == 1:
            by_label.setdefault(atom.GetProp(LABEL_PROP), []).append(atom.GetIdx())
    doomed: list[int] = []
    for label, atoms in by_label.items():
        extra = len(atoms) - printed.get(label, 0)
        anchors = {mol.GetAtomWithIdx(i).GetNeighbors()[0].GetIdx() for i in atoms}
        if printed.get(label, 0) and 0 < extra <= hydrogens and len(anchors) == 1:
            doomed += atoms[:extra]
            hydrogens -= extra
    for index in sorted(doomed, reverse=True):
        mol.RemoveAtom(index)
    return bool(doomed)


def _unglue_labels(mol: Any, limit: int | None = None) -> bool:
    changed = False
    for atom in mol.GetAtoms():
        if atom.HasProp(LABEL_PROP) and _GLUED.match(atom.GetProp(LABEL_PROP)):
            atom.ClearProp(LABEL_PROP)
            changed = True
    return changed


def _drop_hydrogen_isotopes(mol: Any, limit: int | None = None) -> bool:
    changed = False
    for atom in mol.GetAtoms():
        if atom.GetAtomicNum() == 1 and atom.GetIsotope() in (2, 3):
            atom.SetIsotope(0)
            changed = True
    return changed


def _drop_stray_pieces(mol: Any, limit: int | None = None) -> bool:
    from rdkit import Chem

    pieces = Chem.GetMolFrags(mol, asMols=False, sanitizeFrags=False)
    if len(pieces) < 2:
        return False

    def heavy(piece: tuple[int, ...]) -> int:
        return sum(1 for i in piece if mol.GetAtomWithIdx(i).GetAtomicNum() > 1)

    if max(heavy(p) for p in pieces) < 4:
        return False
    def labelled(piece: tuple[int, ...]) -> bool:  # a drawn variable attachment, not a number
        return any(mol.GetAtomWithIdx(i).GetAtomicNum() == 0 for i in piece)

    def charged(piece: tuple[int, ...]) -> bool:  # an ion: the unbalanced-ion row judges it
        return any(mol.GetAtomWithIdx(i).GetFormalCharge() != 0 for i in piece)

    stray = sorted((i for p in pieces if heavy(p) <= 2 and not labelled(p) and not charged(p) for i in p),
                   reverse=True)
    for index in stray:
        mol.RemoveAtom(index)
    return bool(stray)


def _drop_floating_substituent(mol: Any, limit: int | None = None) -> bool:
    """A substituent drawn into a ring at no fixed position (its bond crosses into the
    ring), read apart from the ring: a piece of one attachment point and at most one
    carbon beside a drawing with a ring.  The piece is dropped; each drawn product says
    where the substituent stands."""
    from rdkit import Chem

    pieces = Chem.GetMolFrags(mol, asMols=False, sanitizeFrags=False)
    if len(pieces) < 2:
        return False
    Chem.FastFindRings(mol)

    def floating(piece: tuple[int, ...]) -> bool:
        atoms = [mol.GetAtomWithIdx(i) for i in piece]
        dummies = [a for a in atoms if a.GetAtomicNum() == 0]
        rest = [a for a in atoms if a.GetAtomicNum() != 0]
        return len(dummies) == 1 and len(rest) <= 1 and all(a.GetAtomicNum() == 6 for a in rest)

    ringed = any(mol.GetAtomWithIdx(i).IsInRing() for p in pieces if not floating(p) for i in p)
    drop = sorted((i for p in pieces if floating(p) for i in p), reverse=True)
    if not ringed or not drop or len(drop) == mol.GetNumAtoms():
        return False
    for index in drop:
        mol.RemoveAtom(index)
    return True


def _drop_crossing(mol: Any, limit: int | None = None) -> bool:
    """A substituent drawn into a ring at no fixed position, read with the crossing point
    as one more ring atom: a ring ``*`` with two ring neighbours and a one-bonded ``*``
    (osra's seven-membered ``**1ccc2c(cc1)…`` for a drawn benzo ring).  Both are dropped
    and the two ring neighbours bonded again: aromatic when both are, else double where
    either bond to the crossing was."""
    from rdkit import Chem

    Chem.FastFindRings(mol)
    crossings = []
    for atom in mol.GetAtoms():
        if atom.GetAtomicNum() != 0 or not atom.IsInRing() or atom.HasProp(LABEL_PROP):
            continue
        dangling = [n for n in atom.GetNeighbors() if n.GetAtomicNum() == 0 and n.GetDegree() == 1]
        ring = [b for b in atom.GetBonds() if b.IsInRing()]
        if len(dangling) == 1 and len(ring) == 2 and atom.GetDegree() == 3:
            crossings.append((atom.GetIdx(), dangling[0].GetIdx(), ring))
    for crossing, _, ring in crossings:
        a, b = (mol.GetAtomWithIdx(bond.GetOtherAtomIdx(crossing)) for bond in ring)
        if mol.GetBondBetweenAtoms(a.GetIdx(), b.GetIdx()) is not None:
            return False
        if a.GetIsAromatic() and b.GetIsAromatic():
            kind = Chem.BondType.AROMATIC
        elif any(bond.GetBondType() == Chem.BondType.DOUBLE for bond in ring):
            kind = Chem.BondType.DOUBLE
        else:
            kind = Chem.BondType.SINGLE
        mol.AddBond(a.GetIdx(), b.GetIdx(), kind)
        if kind == Chem.BondType.AROMATIC:
            mol.GetBondBetweenAtoms(a.GetIdx(), b.GetIdx()).SetIsAromatic(True)
    for index in sorted((i for c in crossings for i in c[:2]), reverse=True):
        mol.RemoveAtom(index)
    return bool(crossings)


def _superscript_to_label(mol: Any, limit: int | None = None) -> bool:
    """The superscript ``1`` of a printed ``Ar¹`` or ``R¹`` read as an iodine between the
    label and its drawing (osra's ``*[IH]/C=C…``): an iodine with exactly two neighbours,
    one of them an attachment point bonded to nothing else, is dropped and the
    attachment point bonded to the other neighbour.  A hypervalent iodine drawn with its
    ligands (PhI(OAc)₂) has no attachment point beside it and is left."""
    from rdkit import Chem

    found = []
    for atom in mol.GetAtoms():
        if atom.GetSymbol() != "I" or atom.GetDegree() != 2 or atom.GetFormalCharge() != 0:
            continue
        label = [n for n in atom.GetNeighbors() if n.GetAtomicNum() == 0 and n.GetDegree() == 1]
        other = [n for n in atom.GetNeighbors() if not (n.GetAtomicNum() == 0 and n.GetDegree() == 1)]
        if len(label) == 1 and len(other) == 1:
            found.append((atom.GetIdx(), label[0].GetIdx(), other[0].GetIdx()))
    if not found:
        return False
    for iodine, label, other in found:
        # the new bond keeps the direction mark that set a double bond's geometry
        old = mol.GetBondBetweenAtoms(iodine, other)
        ends = (label, other) if old.GetBeginAtomIdx() == iodine else (other, label)
        mol.AddBond(*ends, Chem.BondType.SINGLE)
        mol.GetBondBetweenAtoms(*ends).SetBondDir(old.GetBondDir())
    for iodine, _, _ in sorted(found, reverse=True):
        mol.RemoveAtom(iodine)
    return True


def _drop_unbalanced_ion(mol: Any, limit: int | None = None) -> bool:
    from rdkit import Chem

    pieces = Chem.GetMolFrags(mol, asMols=False, sanitizeFrags=False)
    if len(pieces) < 2 or max(len(p) for p in pieces) < 2:
        return False
    total = sum(a.GetFormalCharge() for a in mol.GetAtoms())
    for piece in pieces:
        if len(piece) == 1 and total != 0 and mol.GetAtomWithIdx(piece[0]).GetFormalCharge() == total:
            mol.RemoveAtom(piece[0])  # the only ion whose removal leaves the reading neutral
            return True
    return False


def _charge_to_hydrogen(mol: Any, limit: int | None = None) -> bool:
    """An anionic N, O or S left over in a reading nothing balances becomes neutral with
    one more hydrogen (osra's ``[NH-]`` for a printed ``NH2``, DECIMER's ``C[O-]`` for
    ``CH2OH``).  A balanced charge pair (a nitro group, a salt) is not touched."""
    total = sum(a.GetFormalCharge() for a in mol.GetAtoms())
    if total >= 0:
        return False
    targets = [a for a in mol.GetAtoms() if a.GetFormalCharge() == -1 and a.GetSymbol() in ("N", "O", "S")
               and not any(n.GetFormalCharge() > 0 for n in a.GetNeighbors())][:-total]
    for atom in targets:
        atom.SetFormalCharge(0)
        atom.SetNumExplicitHs(atom.GetNumExplicitHs() + 1)
    return bool(targets)


def _aminooxy_to_cyano(mol: Any, limit: int | None = None, words: list[str] | None = None) -> bool:
    """A printed ``CN`` read as an aminooxy end (DECIMER's ``N#CCON`` for a drawn
    NC–CH₂–CN): a terminal O–NH₂ becomes C≡N, for as many ``CN`` labels as are printed in
    the drawing beyond the nitriles already read, and only where no printed word holds
    an O (a drawn ``ONH2`` or ``OMe`` keeps its oxygen)."""
    from rdkit import Chem

    if not words or any("O" in w for w in words):
        return False
    printed = sum(w.strip(",.;:") in ("CN", "NC") for w in words)
    read = len(mol.GetSubstructMatches(Chem.MolFromSmarts("C#N")))
    spare = printed - read
    changed = False
    for atom in list(mol.GetAtoms()):
        if spare <= 0:
            break
        if atom.GetSymbol() != "O" or atom.GetDegree() != 2 or atom.GetFormalCharge() != 0 or atom.GetIsAromatic():
            continue
        ends = [n for n in atom.GetNeighbors() if n.GetSymbol() == "N" and n.GetDegree() == 1 and n.GetFormalCharge() == 0]
        carbons = [n for n in atom.GetNeighbors() if n.GetSymbol() == "C"]
        bonds = [b.GetBondType() for b in atom.GetBonds()]
        if len(ends) != 1 or len(carbons) != 1 or any(b != Chem.BondType.SINGLE for b in bonds):
            continue
        atom.SetAtomicNum(6)
        atom.SetNoImplicit(True)
        atom.SetNumExplicitHs(0)
        nitrogen = ends[0]
        mol.GetBondBetweenAtoms(atom.GetIdx(), nitrogen.GetIdx()).SetBondType(Chem.BondType.TRIPLE)
        nitrogen.SetNoImplicit(True)
        nitrogen.SetNumExplicitHs(0)
        spare -= 1
        changed = True
    return changed


def _nitrogen_radical_to_hydrogen(mol: Any, limit: int | None = None) -> bool:
    """A neutral nitrogen written in brackets short of its valence (DECIMER's ``C[N]`` for
    a printed ``NH2``) gets the hydrogens it lacks.  Oxygen is left: a drawn nitroxyl
    (TEMPO's N–O•) is a real radical."""
    changed = False
    for atom in mol.GetAtoms():
        if atom.GetSymbol() != "N" or atom.GetFormalCharge() != 0 or not atom.GetNoImplicit() or atom.GetIsAromatic():
            continue
        order = sum(b.GetBondTypeAsDouble() for b in atom.GetBonds()) + atom.GetNumExplicitHs()
        if order < 3:
            atom.SetNumExplicitHs(atom.GetNumExplicitHs() + int(3 - order))
            changed = True
    return changed


DECIMER = frozenset({"decimer"})
OSRA = frozenset({"osra"})
BOTH = frozenset({"osra", "decimer"})

#: the table: one row per misreading, applied in this order
FIXES: tuple[Fix, ...] = (
    Fix("label-as-argon", DECIMER, "an R-group label", "[ArH] bonded once",
        ("[ArH]c1ccc(C=O)cc1", "*c1ccc(C=O)cc1"), _to_attachment({"Ar"})),
    Fix("label-as-astatine", DECIMER, "an R-group label", "[At] bonded once",
        ("[At]C#C", "*C#C"), _to_attachment({"At"})),
    Fix("label-as-boron", DECIMER, "an R-group label", "a lone [B] bonded once, no hydrogen",
        ("[B]c1ccccc1N", "*c1ccccc1N"), _to_attachment({"B"}, need_no_h=True)),
    Fix("wavy-bond-as-iodine-123", DECIMER, "a wavy attachment bond (a substituent drawn on its own)",
        "an iodine-123 ([123I]) bonded once", ("FC(F)(F)c1cc([123I])cc(C(F)(F)F)c1", "*c1cc(C(F)(F)F)cc(C(F)(F)F)c1"),
        _to_attachment({"I"}, isotope=123)),
    Fix("wavy-bond-as-radical", DECIMER, "a wavy attachment bond (a substituent drawn on its own)",
        "a carbon radical bonded once ([CH])", ("[CH]c1ccc(OC)cc1", "*c1ccc(OC)cc1"), _attachments_where(_radical_carbon)),
    Fix("phenyl-as-lead", DECIMER, "Ph", "[Pb] bonded once",
        ("O=N[Pb]", "O=Nc1ccccc1"), _to_phenyl("Pb"), printed_as="Ph"),
    Fix("phenyl-as-phosphorus", DECIMER, "Ph", "a terminal P with one single bond",
        ("PC#C", "C#Cc1ccccc1"), _to_phenyl("P"), printed_as="Ph"),
    Fix("label-glued-to-number", DECIMER, "an R label beside a compound number", "[R19a]",
        ("[R19a]c1ccccc1", "*c1ccccc1"), _unglue_labels),
    Fix("tosyl-as-label", DECIMER, "Ts", "a numbered label [Y8] bonded once",
        ("CN(C)[Y8]", "CN(C)S(=O)(=O)c1ccc(C)cc1"), _label_to_group(r"^Y\d+$", ABBREVIATIONS["Ts"]), printed_as="Ts"),
    Fix("tosyl-as-silicon", DECIMER, "Ts", "a lone [Si] bonded once, no hydrogen",
        ("OC1CCN([Si])CC1", "Cc1ccc(S(=O)(=O)N2CCC(O)CC2)cc1"), _atom_to_group("Si", ABBREVIATIONS["Ts"], lambda a: a.GetTotalNumHs() == 0 and a.GetFormalCharge() == 0),
        printed_as="Ts"),
    Fix("tosyl-as-triflyl", DECIMER, "Ts", "a triflyl S(=O)(=O)CF3 where no Tf or CF3 is printed",
        ("CN(C)S(=O)(=O)C(F)(F)F", "CN(C)S(=O)(=O)c1ccc(C)cc1"), _triflyl_to_tosyl, printed_as="Ts",
        unless_printed=("Tf", "OTf", "NTf", "CF3", "F3C", "NTf2")),
    Fix("tosyl-as-sulfur-isotope", DECIMER, "Ts", "a sulfur isotope ([35S]) bonded once",
        ("O=C1CN1[35S]", "O=C1CN1S(=O)(=O)c1ccc(C)cc1"), _atom_to_group("S", ABBREVIATIONS["Ts"], lambda a: a.GetIsotope() != 0), printed_as="Ts"),
    Fix("hydrogen-as-label", DECIMER, "a drawn H beside an R on one carbon", "a second label on that atom",
        ("NC([R])[R]", "NC[R]"), _surplus_labels_to_hydrogen, uses_words=True, example_words=("H", "N", "H", "H", "R")),
    Fix("hydrogen-as-isotope", DECIMER, "a drawn H", "[2H] or [3H]",
        ("N#CN([2H])[3H]", "N#CN"), _drop_hydrogen_isotopes),
    Fix("floating-substituent-apart", DECIMER, "a substituent drawn into a ring at no fixed position",
        "a piece of one label and at most one carbon beside the ring", ("*C.O=c1[nH]c2ccccc2[nH]1",
                                                                        "O=c1[nH]c2ccccc2[nH]1"),
        _drop_floating_substituent),
    Fix("floating-substituent-crossing", BOTH, "a substituent drawn into a ring at no fixed position",
        "the crossing point as one more ring atom, a * with a dangling *",
        ("**1ccc2[nH]c(=O)[nH]c2cc1", "O=c1[nH]c2ccccc2[nH]1"), _drop_crossing),
    Fix("superscript-as-iodine", OSRA, "a label with a superscript 1 (Ar¹, R¹)",
        "an iodine between the label's * and the drawing", ("*[IH]/C=C/C#N", "*/C=C/C#N"), _superscript_to_label),
    Fix("number-as-atoms", BOTH, "a compound number printed under the drawing",
        "a disconnected piece of one or two heavy atoms", ("CCOC(=O)c1ccccc1.[Si]", "CCOC(=O)c1ccccc1"),
        _drop_stray_pieces),
    Fix("unbalanced-ion", BOTH, "a label or number beside the drawing",
        "a lone monatomic ion whose charge nothing balances", ("O=C*.[I-]", "O=C*"), _drop_unbalanced_ion),
    Fix("hydrogen-as-charge", BOTH, "a printed NH2, OH or SH", "an anion nothing balances ([NH-], [O-])",
        ("[NH-]Cc1ccccc1", "NCc1ccccc1"), _charge_to_hydrogen),
    Fix("cyano-as-aminooxy", DECIMER, "a printed CN", "a terminal O–NH2 where no O is printed",
        ("N#CCON", "N#CCC#N"), _aminooxy_to_cyano, uses_words=True, example_words=("CN", "CN")),
    Fix("hydrogen-as-radical", DECIMER, "a printed NH2 or NH", "a bracketed nitrogen short of its valence ([N])",
        ("c1ccccc1C[N]", "NCc1ccccc1"), _nitrogen_radical_to_hydrogen),
)


def _printed_words(printed: Collection[str]) -> list[str]:
    """The words printed in a drawing, with the parts of a label joined to its atom: by a
    dash (``N–Ts``) or directly (``NTs``, ``TsN``: an N, O or S before or after an
    abbreviation of :data:`ABBREVIATIONS`)."""
    words: list[str] = []
    for word in printed:
        for part in re.split(r"[-–—]", word):
            part = part.strip(",.;:()")
            words.append(part)
            joined = re.fullmatch(r"([NOS])(\w+)|(\w+?)([NOS])", part)
            if joined:
                rest = joined.group(2) or joined.group(3)
                if rest in ABBREVIATIONS:
                    words.append(rest)
    return words


def _labelled(smiles: str) -> Any | None:
    """An editable RDKit molecule of a reading (None when RDKit cannot parse it), its
    printed labels (``[R1]``, ``[X]``) as attachment atoms carrying their name."""
    from rdkit import Chem, rdBase

    from labrecord.chemdata.rgroup import BRACKET_LABEL

    rdBase.DisableLog("rdApp.*")
    names: list[str] = []

    def handle(found: re.Match[str]) -> str:
        names.append(found.group(1))
        return f"[*:{len(names)}]"

    text = BRACKET_LABEL.sub(handle, _LABEL_TOKEN.sub(handle, smiles)) if smiles else ""
    parsed = Chem.MolFromSmiles(text, sanitize=False) if text else None
    if parsed is None:
        return None
    mol = Chem.RWMol(parsed)
    for atom in mol.GetAtoms():
        if atom.GetAtomicNum() == 0 and 0 < atom.GetAtomMapNum() <= len(names):
            atom.SetProp(LABEL_PROP, names[atom.GetAtomMapNum() - 1])
        atom.SetAtomMapNum(0)
    return mol


def _written(mol: Any) -> str | None:
    """The SMILES of an edited molecule with its labels printed again, or None when the
    edit left it unsound."""
    from rdkit import Chem

    try:
        out = mol.GetMol()
        Chem.SanitizeMol(out)
        out = Chem.RemoveHs(out)
        kept: list[str] = []
        for atom in out.GetAtoms():
            if atom.GetAtomicNum() == 0 and atom.HasProp(LABEL_PROP):
                kept.append(atom.GetProp(LABEL_PROP))
                atom.SetAtomMapNum(len(kept))
        written = Chem.MolToSmiles(out)
    except Exception:  # noqa: BLE001 - an edit that breaks the molecule is not kept
        return None
    for number, label in enumerate(kept, start=1):
        written = written.replace(f"[*:{number}]", f"[{label}]")
    return written


def clean(smiles: str, reader: str, printed: Collection[str] | None = None) -> tuple[str, list[str]]:
    """(cleaned SMILES, names of the rows applied) for a reading by ``reader``.  Printed
    labels (``[R1]``, ``[X]``) are kept as they are.  ``printed`` are the words printed
    inside the drawing, when known: a row with ``printed_as`` applies to at most as many
    atoms as its word is printed there.  A SMILES RDKit cannot parse, or an edit that leaves an unsound molecule,
    is returned as read."""
    mol = _labelled(smiles)
    if mol is None:
        return smiles, []
    # a printed word joined to its atom by a dash (``N–Ts``, ``Ph-N``) counts as printed
    words = None if printed is None else _printed_words(printed)
    applied = []
    for fix in FIXES:
        limit = None if fix.printed_as is None or words is None else words.count(fix.printed_as)
        if fix.unless_printed and words is not None and any(w in fix.unless_printed for w in words):
            continue
        if reader not in fix.readers or limit == 0:
            continue
        if fix.apply(mol, limit, words) if fix.uses_words else fix.apply(mol, limit):
            applied.append(fix.name)
    if not applied:
        return smiles, []
    written = _written(mol)
    return (smiles, []) if written is None else (written, applied)


def hydrogen_variant(smiles: str) -> str | None:
    """The reading with each atom's repeated label kept once (``NC([R])[R]`` ->
    ``NC[R]``: a drawn H beside the R read as a second R), or None when no atom carries
    one label twice.  Not a clean-up row — the label may be drawn twice (a gem-dialkyl
    ``C(R)(R)``) — but an alternative reading that arbitration weighs against the
    reading as read, by what the R-group engine relates to the drawn entries."""
    mol = _labelled(smiles)
    if mol is None:
        return None
    doomed: list[int] = []
    for atom in mol.GetAtoms():
        seen: set[str] = set()
        for neighbour in atom.GetNeighbors():
            if neighbour.GetAtomicNum() == 0 and neighbour.HasProp(LABEL_PROP) and neighbour.GetDegree() == 1:
                label = neighbour.GetProp(LABEL_PROP)
                if label in seen:
                    doomed.append(neighbour.GetIdx())
                seen.add(label)
    if not doomed:
        return None
    for index in sorted(doomed, reverse=True):
        mol.RemoveAtom(index)
    return _written(mol)
