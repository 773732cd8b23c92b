"""Arbitration between structure readers, decided by chemistry.

Where two readers read one drawing differently, the figure decides which reading to
keep, not the readers' confidences:

1. **Soundness.**  A reading RDKit cannot parse (a valence error, a broken ring) or
   that has a radical (figures draw none; a reader writes ``[C]O`` for a stray mark),
   or that falls into more than :data:`MAX_PIECES` pieces (a reader running on), loses to one it can (:func:`sound`; attachment labels such as ``[R1]`` count as sound).
2. **The R-group engine.**  Among sound readings of the template row (reactant and
   product templates, reagents), the combination kept is the one under which the engine
   relates the template to the drawn or tabulated entries the most (``evaluate``; the
   runner counts the reactants derived through a bound label, :func:`related_reactants`).
3. **Confidence** only breaks what is still tied.  The two readers' confidences are on
   different scales (osra's linear estimate runs from below 0 to about 4, DECIMER's is a
   probability), so they are not compared with each other: a DECIMER reading at least
   :data:`TRUSTED` confident wins the tie, and loses it below (:func:`tie_score`).
   DECIMER read 12 of 14 hand-cut template-row crops right where osra read 4, and the
   two read drawn products about equally often (58 and 59 of 90).
4. **Stereo.**  Where the other reader's reading of the kept region has the same
   constitution and specifies more stereo elements (DECIMER often leaves the geometry of
   a drawn C=N or C=C open; osra computes it from the drawn coordinates), the region
   keeps the constitution and takes the fuller stereo (:func:`fuller_stereo`).

:func:`choose` searches the combinations (every one when there are at most
``exhaustive`` of them, else one region at a time from the soundest, most confident
start).  :func:`fits_template` tells whether a drawn product fits a scope's templates;
a product that does not is read again by the other reader and the new reading kept when
it fits (:func:`pick_product`).
"""
from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from labrecord.chemdata import rgroup
from labrecord.chemdata.extract.osra import Reading
from labrecord.chemdata.extract.readers import provenance_confidence


def sound(smiles: str) -> bool:
    """RDKit parses the reading; attachment points and printed labels are allowed."""
    from rdkit import Chem, rdBase

    rdBase.DisableLog("rdApp.*")
    if not smiles:
        return False
    mol = Chem.MolFromSmiles(smiles)
    if mol is not None:
        pieces = len(Chem.GetMolFrags(mol))
        return pieces <= MAX_PIECES and not any(atom.GetNumRadicalElectrons() for atom in mol.GetAtoms())
    try:
        rgroup.template_labels(smiles)
    except rgroup.RGroupError:
        return False
    except Exception:  # noqa: BLE001 - any parser refusal is "not sound"
        return False
    return True


#: a reading of one drawing in more pieces than this is a reader running on, not a drawing
MAX_PIECES = 3

#: DECIMER's own confidence from which its reading wins a tie against osra's
TRUSTED = 0.9


def tie_score(reading: Reading) -> float:
    """The tie-break value of one reading: 1 for osra's (or any other reader's), a
    DECIMER reading's confidence (0..1) below :data:`TRUSTED` and 1 + it from there."""
    if reading.reader != "decimer":
        return 1.0
    confidence = provenance_confidence(reading.reader, reading.confidence)
    return confidence + (1.0 if confidence >= TRUSTED else 0.0)


def choose(options: Mapping[int, Sequence[Reading]], evaluate: Callable[[dict[int, Reading]], int],
           *, exhaustive: int = 64, judge: Callable[[Reading], bool] | None = None,
           named: Callable[[Reading], bool] | None = None) -> dict[int, Reading]:
    """One reading per region (key: the region's segment index), maximizing
    ``(evaluate(choice), number of sound readings, number of readings that name their
    attachment points as printed, summed tie scores)``.  Regions whose options all agree
    (same SMILES) are not varied.  ``judge`` tells a sound reading (default:
    :func:`sound` of its SMILES; the runner also asks that its attachment points be
    printed, :func:`labels_printed`); ``named`` one whose labels are the printed ones
    (the runner: :func:`labels_named`; default: none is)."""
    regions = sorted(k for k, v in options.items() if v)
    judging = judge or (lambda r: sound(r.smiles))
    naming = named or (lambda r: False)
    verdicts: dict[tuple[int, int], bool] = {}  # each reading judged once, not once per combination

    def judged(reading: Reading, which: int = 0) -> bool:
        if (id(reading), which) not in verdicts:
            verdicts[(id(reading), which)] = (judging if which == 0 else naming)(reading)
        return verdicts[(id(reading), which)]

    def key(choice: dict[int, Reading]) -> tuple[int, int, int, float]:
        return (evaluate(choice), sum(judged(r) for r in choice.values()), sum(judged(r, 1) for r in choice.values()),
                round(sum(tie_score(r) for r in choice.values()), 6))

    def distinct(region: int) -> list[Reading]:
        seen: dict[str, Reading] = {}
        for reading in options[region]:
            seen.setdefault(reading.smiles, reading)
        return list(seen.values())

    alternatives = {region: distinct(region) for region in regions}
    return {region: fuller_stereo(reading, alternatives.get(region, ()))
            for region, reading in _best(regions, alternatives, key, exhaustive, judged).items()}


def _best(regions: list[int], alternatives: dict[int, list[Reading]],
          key: Callable[[dict[int, Reading]], tuple[int, int, int, float]], exhaustive: int,
          judged: Callable[[Reading], bool]) -> dict[int, Reading]:
    count = 1
    for region in regions:
        count *= len(alternatives[region])
    if count <= exhaustive:
        combos = (dict(zip(regions, picked)) for picked in itertools.product(*(alternatives[r] for r in regions)))
        return max(combos, key=key, default={})
    best = {r: max(alternatives[r], key=lambda x: (judged(x), tie_score(x))) for r in regions}
    best_key = key(best)
    improved = True
    while improved:
        improved = False
        for region in regions:
            for reading in alternatives[region]:
                trial = {**best, region: reading}
                trial_key = key(trial)
                if trial_key > best_key:
                    best, best_key, improved = trial, trial_key, True
    return best


def _stereo_form(smiles: str) -> tuple[str, int] | None:
    """(stereo-blind canonical SMILES with the printed labels in it, number of specified
    stereo elements), or None when RDKit cannot parse the reading.  Each distinct label
    becomes an attachment point of its own number, so ``[R3]`` and a bare ``*`` differ."""
    from rdkit import Chem, rdBase

    rdBase.DisableLog("rdApp.*")
    # numbered in sorted order, so the canonical form does not depend on where a label is written
    names = {name: number for number, name in enumerate(sorted(set(rgroup.BRACKET_LABEL.findall(smiles or ""))), 1)}

    def numbered(found: Any) -> str:
        return f"[*:{names[found.group(1)]}]"

    mol = Chem.MolFromSmiles(rgroup.BRACKET_LABEL.sub(numbered, smiles)) if smiles else None
    if mol is None:
        return None
    count = sum(1 for a in mol.GetAtoms() if a.GetChiralTag() != Chem.ChiralType.CHI_UNSPECIFIED) + \
        sum(1 for b in mol.GetBonds() if b.GetStereo() != Chem.BondStereo.STEREONONE)
    for atom in mol.GetAtoms():
        if atom.GetAtomMapNum():
            atom.SetIsotope(0)
    key = Chem.MolToSmiles(mol, isomericSmiles=False)
    for name, number in names.items():
        key = key.replace(f"[*:{number}]", f"[{name}]")
    return key, count


def fuller_stereo(kept: Reading, others: Sequence[Reading]) -> Reading:
    """``kept``, or the reading of ``others`` with the same constitution and the most
    specified stereo elements when that is more than ``kept`` has."""
    form = _stereo_form(kept.smiles)
    if form is None:
        return kept
    best, most = kept, form[1]
    for other in others:
        other_form = _stereo_form(other.smiles)
        if other_form is not None and other_form[0] == form[0] and other_form[1] > most:
            best, most = other, other_form[1]
    return best


#: a printed word that names a variable position: R, R1, R', Ar, Ar1, X, Y, Z, G, Q, L
_PRINTED_LABEL = re.compile(r"^(?:R\d*'*|Ar\d*|[XYZGQL]\d*)$")


def labels_printed(smiles: str, words: Sequence[str] | None) -> bool:
    """False when the reading has an attachment point (``*`` or a label) but none of the
    ``words`` printed in its drawing names a variable (osra writes ``*`` for a stray mark
    of a drawing that prints only ``OH``); True when it has none, or the words are not
    known."""
    if words is None or ("*" not in smiles and not rgroup.BRACKET_LABEL.search(smiles)):
        return True
    return any(_PRINTED_LABEL.match(part.strip(",.;:()[]")) for word in words for part in word.split("="))


def labels_named(smiles: str, printed: Collection[str] | None) -> bool:
    """True when the reading names every attachment point after a label printed in its
    drawing: no bare ``*``, at least one label, and each (``[R1]``) among ``printed``,
    the drawing's variable words as normalized names (the runner's: ``Ry`` read for R₁
    is ``R1``).  A reading that writes a printed ``R1`` as a bare ``*`` keeps less of the
    drawing than one that names it.

    >>> labels_named("[R1]c1ccc([R2])cc1", {"R1", "R2"})
    True
    >>> labels_named("*c1ccc(*)cc1", {"R1", "R2"}), labels_named("[R3]c1ccccc1", {"R1"})
    (False, False)
    """
    if not printed or "*" in smiles:
        return False
    labels = set(rgroup.BRACKET_LABEL.findall(smiles))
    return bool(labels) and labels <= set(printed)


def related_reactants(reactions: Sequence[Any]) -> int:
    """The engine's verdict on a choice of template readings: over the scope reactions it
    assembled, the reactants it derived — through a bound label, or by carrying the
    reaction centre back from a drawn product (:mod:`labrecord.chemdata.transfer`: the
    reactant differs from its template) — and the products it made from a drawn reactant
    by the same centre.  A template row read with a concrete molecule
    where a template was drawn still assembles, but that reactant is copied, not related
    to the product, and does not count."""
    # a product made from a drawn reactant (a reactant grid, no label bound) counts as well
    return sum(1 for reaction in reactions for molecule in reaction.reactants if _derived(molecule)) + \
        sum(1 for reaction in reactions for molecule in reaction.products
            if molecule.provenance is not None and not molecule.provenance.bindings and _derived(molecule))


def _derived(molecule: Any) -> bool:
    from rdkit import Chem

    provenance = molecule.provenance
    if provenance is None:
        return False
    if provenance.bindings:
        return True
    if provenance.origin != "template_derived":
        return False
    made = Chem.MolFromSmiles(molecule.smiles)
    drawn = Chem.MolFromSmiles(provenance.template or "")
    return made is not None and drawn is not None and Chem.MolToSmiles(made) != Chem.MolToSmiles(drawn)


def fits_template(reactant_templates: Sequence[str], product_template: str, product: str) -> bool:
    """The engine relates ``product`` to the templates: it matches the product template
    and gives one set of reactants."""
    if not sound(product):
        return False
    try:
        derived = rgroup.derive_reactants(list(reactant_templates), product_template, product)
    except rgroup.RGroupError:
        return False
    return not isinstance(derived, rgroup.Failure)


def pick_product(first: Reading, second: Reading | None, reactant_templates: Sequence[str],
                 product_template: str) -> Reading:
    """Of two readings of one drawn product, the one that fits the templates; when both or
    neither do, the first (the reading the figure was associated with) unless only the
    second is sound."""
    if second is None or fits_template(reactant_templates, product_template, first.smiles):
        return first
    if fits_template(reactant_templates, product_template, second.smiles):
        return second
    return second if sound(second.smiles) and not sound(first.smiles) else first
