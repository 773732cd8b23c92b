"""Arbitration between structure readers, decided by chemistry.

Where two readers read one drawing differently, the figure decides which reading to
keep, not the readers' confidences:

1. **Soundness.**  A reading RDKit cannot parse (a valence error, a broken ring) loses
   to one it can (:func:`sound`; attachment labels such as ``[R1]`` count as sound).
2. **The R-group engine.**  Among sound readings of the template row (reactant and
   product templates, reagents), the combination kept is the one under which the engine
   relates the template to the most drawn or tabulated entries (``evaluate``: the number
   of scope entries that assemble into reactions).
3. **Confidence** only breaks what is still tied: the sum of the readers' confidences
   (each on 0..1, :func:`.readers.provenance_confidence`).

:func:`choose` searches the combinations (every one when there are at most
``exhaustive`` of them, else one region at a time from the soundest, most confident
start).  :func:`fits_template` tells whether a drawn product fits a scope's templates;
a product that does not is read again by the other reader and the new reading kept when
it fits (:func:`pick_product`).
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence

from labrecord.chemdata import rgroup
from labrecord.chemdata.extract.osra import Reading
from labrecord.chemdata.extract.readers import provenance_confidence


def sound(smiles: str) -> bool:
    """RDKit parses the reading; attachment points and printed labels are allowed."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    if not smiles:
        return False
    if Chem.MolFromSmiles(smiles) is not None:
        return True
    try:
        rgroup.template_labels(smiles)
    except rgroup.RGroupError:
        return False
    except Exception:  # noqa: BLE001 - any parser refusal is "not sound"
        return False
    return True


def _confidence(reading: Reading) -> float:
    return provenance_confidence(reading.reader, reading.confidence)


def choose(options: Mapping[int, Sequence[Reading]], evaluate: Callable[[dict[int, Reading]], int],
           *, exhaustive: int = 64) -> dict[int, Reading]:
    """One reading per region (key: the region's segment index), maximizing
    ``(evaluate(choice), number of sound readings, summed confidence)``.  Regions whose
    options all agree (same SMILES) are not varied."""
    regions = sorted(k for k, v in options.items() if v)

    def key(choice: dict[int, Reading]) -> tuple[int, int, float]:
        return (evaluate(choice), sum(sound(r.smiles) for r in choice.values()),
                round(sum(_confidence(r) for r in choice.values()), 6))

    def distinct(region: int) -> list[Reading]:
        seen: dict[str, Reading] = {}
        for reading in options[region]:
            seen.setdefault(reading.smiles, reading)
        return list(seen.values())

    alternatives = {region: distinct(region) for region in regions}
    count = 1
    for region in regions:
        count *= len(alternatives[region])
    if count <= exhaustive:
        combos = (dict(zip(regions, picked)) for picked in itertools.product(*(alternatives[r] for r in regions)))
        return max(combos, key=key, default={})
    best = {r: max(alternatives[r], key=lambda x: (sound(x.smiles), _confidence(x))) for r in regions}
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
