"""Record assembly: an entry plan plus tool readings -> concrete reactions with provenance.

Plan shape (the rule-based default and the model endpoint both produce it)::

    {"reactions": [{"id", "step", "identifiers"?, "yield"?, "conditions"?: [text | {role, smiles?, text?}],
                    "reactants": [REF], "products": [REF]}],
     "scopes":    [{"id", "reactant_templates": [reading id], "product_template": reading id,
                    "entries": [{"id", "bindings"?: {VAR: value}, "product"?: reading id, "yield"?,
                                 "variant"?: text, "product_bindings"?: {VAR: value}, "shared"?: [VAR]}],
                    "co_products"?: [reading id]}]}
    REF = {"reading": id} | {"smiles": "…"}            # the latter is model-written

A reading becomes a ``tool_read`` molecule with its region; a scope entry with bindings
only instantiates every template (``template_derived``) — and is refused
(``unbound_variable``) when it binds a variable no template carries, other than the
figure-wide ones listed in ``shared``: the reading lost the label the entry varies, and
every template would come out as drawn; an entry with a drawn product
keeps the product as read (filled with its ``product_bindings`` first where the drawing
keeps a label of its own and the entry is a line listed beside it) and derives the reactants with
:func:`labrecord.chemdata.rgroup.derive_reactants`, its printed bindings taking
precedence; a scope's co-products (a concrete species drawn beside the product template,
``+ NH3``) join every entry's products as read.  Templates read without label numbers (osra writes ``*`` for ``R1``) accept
an entry's single variable.  Every failure is returned with its stage, never hidden.
"""
from __future__ import annotations

from typing import Any

from labrecord.chemdata import rgroup
from labrecord.chemdata.extract.osra import Reading


class PlanError(Exception):
    """The plan itself is unusable (not the expected shape, unknown reading id)."""


def canonical(smiles: str) -> str:
    """RDKit canonical isomeric SMILES, or the input unchanged when RDKit refuses it
    (a malformed molecule then sinks only its own reaction at scoring time)."""
    from rdkit import Chem, rdBase

    rdBase.DisableLog("rdApp.*")
    mol = Chem.MolFromSmiles(smiles) if smiles else None
    return Chem.MolToSmiles(mol) if mol is not None else smiles


def _region(reading: Reading) -> str:
    x0, y0, x1, y1 = reading.box
    return f"{x0},{y0},{x1},{y1}"


def _read_molecule(reading: Reading) -> Any:
    """A reading as a molecule: ``tool_read``, or ``model_written`` when the model endpoint
    read it (recognition taken over), with its region either way."""
    from labrecord.chemdata.extract.readers import provenance_confidence
    from labrecord.models.rxn import Molecule, Origin, Provenance

    origin: Origin = "model_written" if reading.source == "model" else "tool_read"
    return Molecule(smiles=canonical(reading.smiles), provenance=Provenance(
        origin=origin, region=_region(reading), bbox=[float(v) for v in reading.box], reader=reading.reader,
        confidence=provenance_confidence(reading.reader, reading.confidence)))


def _derived_molecule(smiles: str, template: str, bindings: dict[str, str], source: Reading | None = None) -> Any:
    """A molecule made from ``template``; ``source`` is the reading of the template (its
    reader and confidence are the derived molecule's)."""
    from labrecord.chemdata.extract.readers import provenance_confidence
    from labrecord.models.rxn import Molecule, Provenance

    reader = source.reader if source is not None else None
    confidence = provenance_confidence(source.reader, source.confidence) if source is not None else None
    return Molecule(smiles=smiles, provenance=Provenance(origin="template_derived", template=template,
                                                         bindings=dict(sorted(bindings.items())), reader=reader,
                                                         confidence=confidence))


def _resolve(ref: Any, readings: dict[str, Reading]) -> Any:
    from labrecord.models.rxn import Molecule, Provenance

    if isinstance(ref, dict) and isinstance(ref.get("reading"), str):
        if ref["reading"] not in readings:
            raise PlanError(f"unknown reading id {ref['reading']!r}")
        return _read_molecule(readings[ref["reading"]])
    if isinstance(ref, dict) and isinstance(ref.get("smiles"), str):
        return Molecule(smiles=canonical(ref["smiles"]), provenance=Provenance(origin="model_written"))
    raise PlanError(f"a participant must be {{'reading': id}} or {{'smiles': …}}, got {str(ref)[:80]!r}")


def assemble(plan: Any, readings: list[Reading],
             reread_grids: bool = True) -> tuple[list[Any], list[Any], list[dict[str, str]]]:
    """(reactions, templates, failures) for one figure; failures carry ``stage``.
    ``reread_grids=False`` leaves out the reading of a grid as drawn substituents
    (:func:`_as_substituents`) or drawn reactants (:func:`_as_reactants`): arbitration
    judges template readings by the drawn products they relate, and a one-variable
    template "relates" almost any grid read that way."""
    from labrecord.models.rxn import Reaction

    if not isinstance(plan, dict):
        raise PlanError(f"plan must be a JSON object, got {type(plan).__name__}")
    by_id = {r.id: r for r in readings}
    reactions: list[Reaction] = []
    templates, failures = [], []
    for item in plan.get("reactions") or []:
        if not isinstance(item, dict):
            raise PlanError(f"a plan reaction must be an object, got {str(item)[:80]!r}")
        reactions.append(Reaction(id=str(item.get("id") or f"r{len(reactions) + 1}"), step=_int_or_none(item.get("step")),
                                  reactants=[_resolve(ref, by_id) for ref in item.get("reactants") or []],
                                  products=[_resolve(ref, by_id) for ref in item.get("products") or []],
                                  conditions=_conditions(item.get("conditions")),
                                  identifiers=[str(i) for i in item.get("identifiers") or []],
                                  yield_=_text_or_none(item.get("yield"))))
    for scope in plan.get("scopes") or []:
        built, template, problems = _expand_scope(scope, by_id, reread_grids)
        reactions.extend(built)
        templates.append(template)
        failures.extend(problems)
    return reactions, templates, failures


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _conditions(items: Any) -> list[Any]:
    """Plan conditions: printed strings, or {"role", "smiles"?, "text"?} objects."""
    from labrecord.models.rxn import Condition

    found = []
    for item in items or []:
        if isinstance(item, str):
            found.append(Condition(text=item))
        elif isinstance(item, dict):
            found.append(Condition(role=str(item.get("role") or "condition"), smiles=_text_or_none(item.get("smiles")),
                                   text=_text_or_none(item.get("text"))))
        else:
            raise PlanError(f"a condition must be text or an object, got {str(item)[:80]!r}")
    return found


def _template_smiles(ids: list[Any], by_id: dict[str, Reading], what: str) -> list[str]:
    out = []
    for ident in ids:
        if ident not in by_id:
            raise PlanError(f"{what}: unknown reading id {ident!r}")
        out.append(by_id[ident].smiles)
    return out


def _fit_labels(templates: list[str], bindings: dict[str, str]) -> dict[str, str]:
    """Give a bare ``*`` (a reader wrote a printed label without its name) the entry's
    value for the variables no template names, when they all share one value: the
    entry's single variable, or ``R1, R2 = H`` where one template names R1 and R2 and the
    other writes both as ``*``.  Where only ``*`` is written, the spare names are dropped.

    >>> _fit_labels(["*c1ccccc1"], {"R": "Me"})
    {'*': 'Me'}
    >>> sorted(_fit_labels(["[R1]c1cc([R2])ccc1", "*c1cc(*)ccc1"], {"R1": "H", "R2": "H"}).items())
    [('*', 'H'), ('R1', 'H'), ('R2', 'H')]
    """
    labels = set()
    for template in templates:
        labels.update(rgroup.template_labels(template))
    spare = [k for k in bindings if rgroup.normalize_label(k) not in labels]
    named = [k for k in bindings if rgroup.normalize_label(k) not in {"*"}]
    values = {bindings[k] for k in (spare if labels == {"*"} else named)}
    if "*" in labels and "*" not in bindings and len(values) == 1 and (spare if labels == {"*"} else named):
        fitted = {k: v for k, v in bindings.items() if labels != {"*"} or k not in spare}
        fitted["*"] = values.pop()
        return fitted
    return dict(bindings)


def _expand_scope(scope: Any, by_id: dict[str, Reading],
                  reread_grids: bool = True) -> tuple[list[Any], Any, list[dict[str, str]]]:
    from labrecord.chemdata.extract.readers import provenance_confidence
    from labrecord.models.rxn import Molecule, Provenance, Reaction, Template

    if not isinstance(scope, dict):
        raise PlanError(f"a plan scope must be an object, got {str(scope)[:80]!r}")
    reactant_templates = _template_smiles(list(scope.get("reactant_templates") or []), by_id, "reactant_templates")
    product_id = scope.get("product_template")
    product_template = _template_smiles([product_id], by_id, "product_template")[0] if product_id else None
    sources = {by_id[i].smiles: by_id[i] for i in [*(scope.get("reactant_templates") or []), product_id] if i in by_id}

    def read_template(smiles: str) -> Any:
        source = sources[smiles]
        return Molecule(smiles=smiles, esmiles=smiles, provenance=Provenance(
            origin="tool_read", reader=source.reader, confidence=provenance_confidence(source.reader, source.confidence)))

    template = Template(id=str(scope.get("id") or "t"), reactants=[read_template(t) for t in reactant_templates],
                        products=[read_template(product_template)] if product_template else [])
    co_products = [_resolve({"reading": i}, by_id) for i in scope.get("co_products") or []]
    reactions, failures = [], []
    entries = list(scope.get("entries") or [])
    outcomes = [_try_entry(entry, reactant_templates, product_template, by_id, sources, ()) for entry in entries]
    # a symmetric core: an entry matched several ways is settled by the others' bindings
    settled = [{k: v for m in built[0] for k, v in (m.provenance.bindings or {}).items()}
               for built in outcomes if not isinstance(built, rgroup.Failure)]
    if settled:
        outcomes = [_try_entry(entry, reactant_templates, product_template, by_id, sources, settled)
                    if isinstance(built, rgroup.Failure) and built.kind == "ambiguous_match" else built
                    for entry, built in zip(entries, outcomes)]
    grid = _grid_drawings(entries, outcomes, product_template, by_id) if reread_grids else []
    if grid and product_template is not None:
        outcomes = _as_substituents(grid, entries, outcomes, reactant_templates, product_template, by_id, sources)
        if all(isinstance(outcomes[i], rgroup.Failure) for i, _, _ in grid):  # a substituent grid is no reactant grid
            outcomes = _as_reactants(grid, entries, outcomes, reactant_templates, product_template, by_id, sources)
    if product_template is not None:
        outcomes = _by_centre(entries, outcomes, reactant_templates, product_template, by_id, sources)
    for entry, built in zip(entries, outcomes):
        if isinstance(built, rgroup.Failure):
            failures.append({"stage": "rgroup", "kind": built.kind,
                             "message": f"entry {entry.get('id')}: {built.message}"})
            continue
        reactants, products = built
        variant = entry.get("variant")  # one drawing made several ways (X = Cl, Br, I under it)
        reactions.append(Reaction(id=f"{template.id}-{entry.get('id')}" + (f"-{variant}" if variant else ""),
                                  step=1, reactants=reactants,
                                  products=[*products, *co_products], identifiers=[str(entry.get("id"))],
                                  yield_=_text_or_none(entry.get("yield"))))
    return reactions, template, failures


def _grid_drawings(entries: list[Any], outcomes: list[Any], product_template: str | None,
                   by_id: dict[str, Reading]) -> list[tuple[int, str, dict[str, str]]]:
    """The drawn entries a grid rule may read again, as (index, SMILES, printed bindings):
    none while any drawn entry fits the product template (the grid holds products, and a
    misfit is a misreading), and never a drawing that shares more than half of the product
    template (:func:`labrecord.chemdata.rgroup.core_share`): a product, however misread."""
    drawn = [i for i, entry in enumerate(entries) if isinstance(entry, dict) and entry.get("product") in by_id]
    if product_template is None or any(not isinstance(outcomes[i], rgroup.Failure) for i in drawn):
        return []
    found = []
    for i in drawn:
        smiles = by_id[entries[i]["product"]].smiles
        if entries[i].get("product_bindings"):  # a drawing that keeps a label, filled by its listed item
            try:
                smiles = rgroup.fill_labels(smiles, {str(k): str(v) for k, v in entries[i]["product_bindings"].items()})
            except rgroup.RGroupError:
                continue
        if rgroup.core_share(product_template, smiles) <= 0.5:
            found.append((i, smiles, {str(k): str(v) for k, v in (entries[i].get("bindings") or {}).items()}))
    return found


def _reread(entry: Any, bindings: dict[str, str], reactant_templates: list[str], product_template: str,
            by_id: dict[str, Reading], sources: dict[str, Reading]) -> Any:
    """The entry expanded from bindings alone (its drawing now read as a value; the
    reaction takes id and yield from the entry itself)."""
    return _try_entry({"id": entry.get("id"), "bindings": bindings},
                      reactant_templates, product_template, by_id, sources, ())


def _as_substituents(grid: list[tuple[int, str, dict[str, str]]], entries: list[Any], outcomes: list[Any],
                     reactant_templates: list[str], product_template: str, by_id: dict[str, Reading],
                     sources: dict[str, Reading]) -> list[Any]:
    """A grid of drawn substituents (``R =`` and drawings ending in a wavy bond) read as
    the entries' bindings: when the product template has one variable, each drawing of
    the grid (:func:`_grid_drawings`) that is a substituent on its own
    (:func:`labrecord.chemdata.rgroup.drawn_substituent`) binds that variable and the
    entry instantiates every template."""
    try:
        labels = rgroup.template_labels(product_template)
        named = {label for t in reactant_templates for label in rgroup.template_labels(t)} - {"*"}
    except rgroup.RGroupError:
        return outcomes
    if len(labels) != 1 or (labels[0] != "*" and named - set(labels)):
        return outcomes
    if labels[0] == "*":  # osra/DECIMER wrote the product's R bare: the reactants name it
        if len(named) > 1:
            return outcomes
        labels = [*labels, *named]
    revised = list(outcomes)
    for i, smiles, printed in grid:
        fragment = rgroup.drawn_substituent(smiles)
        if fragment is not None:
            revised[i] = _reread(entries[i], {**printed, **{label: fragment for label in labels}},
                                 reactant_templates, product_template, by_id, sources)
    return revised


def _as_reactants(grid: list[tuple[int, str, dict[str, str]]], entries: list[Any], outcomes: list[Any],
                  reactant_templates: list[str], product_template: str, by_id: dict[str, Reading],
                  sources: dict[str, Reading]) -> list[Any]:
    """A grid of drawn reactants (the amines of an amine scope) read as the entries'
    bindings: a drawing of the grid (:func:`_grid_drawings`) that fits exactly one
    reactant template (:func:`labrecord.chemdata.rgroup.derive_bindings`, one binding
    set) gives those bindings; with the entry's own (``R = Me`` beside it) they must fix
    every label of the product template, and the entry instantiates every template (the
    drawn reactant comes back as drawn)."""
    try:
        needed = set(rgroup.template_labels(product_template))
        candidates = [t for t in reactant_templates if rgroup.template_labels(t)]
    except rgroup.RGroupError:
        return outcomes
    if not needed or "*" in needed or not candidates:
        return outcomes  # a bare attachment point cannot be told from one reactant's to another's
    revised = list(outcomes)
    for i, smiles, printed in grid:
        fits = [found for found in (rgroup.derive_bindings(t, smiles) for t in candidates)
                if not isinstance(found, rgroup.Failure)]
        if len(fits) != 1:
            continue
        bindings = {**printed, **fits[0]}
        if needed <= {rgroup.normalize_label(k) for k in bindings}:  # else a product label nothing fixes
            revised[i] = _reread(entries[i], bindings, reactant_templates, product_template, by_id, sources)
    return revised


def _by_centre(entries: list[Any], outcomes: list[Any], reactant_templates: list[str], product_template: str,
               by_id: dict[str, Reading], sources: dict[str, Reading]) -> list[Any]:
    """Entries the R-group engine could not match (``no_match``), made by carrying the
    template row's reaction centre (:mod:`labrecord.chemdata.transfer`):

    * a drawn product that shares most of the product template
      (:func:`labrecord.chemdata.rgroup.core_share` above one half) but was varied where
      no label stands (a substituent at a ring position drawn into the ring, a thieno ring
      for a benzo ring) gets its reactants by undoing the change at its centre
      (:func:`~labrecord.chemdata.transfer.retro`);
    * where no drawn entry of a grid (two or more) fits the product template (a grid of
      drawn reactants, the amines of an amine scope), a drawing that shares little of it is the reactant of one
      template and gets its product by making the change
      (:func:`~labrecord.chemdata.transfer.forward`).

    The entry's printed bindings name the labels left (``X = Br``)."""
    from labrecord.chemdata import transfer

    drawn = [i for i, entry in enumerate(entries) if isinstance(entry, dict) and entry.get("product") in by_id]
    # made also while arbitration judges template readings (no grid re-reading there): a
    # drawing must hold the centre of a reactant template, which few readings fit; a
    # grid most of whose drawings fit no product is one of reactants (one misread
    # drawing that happens to fit does not make it a product grid)
    unmatched = sum(isinstance(outcomes[i], rgroup.Failure) for i in drawn)
    reactant_grid = len(drawn) > 1 and 2 * unmatched > len(drawn)
    revised = list(outcomes)
    for i in drawn:
        entry, built = entries[i], outcomes[i]
        if not (isinstance(built, rgroup.Failure) and built.kind == "no_match"):
            continue
        reading = _resolve({"reading": entry["product"]}, by_id)
        bindings = {str(k): str(v) for k, v in (entry.get("bindings") or {}).items()}
        explicit = _fit_labels(reactant_templates + [product_template], bindings) if bindings else {}
        if rgroup.core_share(product_template, reading.smiles) > 0.5:
            derived = transfer.retro(reactant_templates, product_template, reading.smiles, explicit)
            if not isinstance(derived, rgroup.Failure):
                revised[i] = ([_transferred(s, t, explicit, sources) for t, s in zip(reactant_templates, derived)],
                              [reading])
        elif reactant_grid:
            made = transfer.forward(reactant_templates, product_template, reading.smiles, explicit)
            if not isinstance(made, rgroup.Failure):
                slot, reactants, product = made
                revised[i] = ([reading if k == slot else _transferred(s, t, explicit, sources)
                               for k, (t, s) in enumerate(zip(reactant_templates, reactants))],
                              [_transferred(product, product_template, explicit, sources)])
    return revised


def _transferred(smiles: str, template: str, explicit: dict[str, str], sources: dict[str, Reading]) -> Any:
    labels = rgroup.template_labels(template)
    used = {k: v for k, v in explicit.items() if rgroup.normalize_label(k) in labels}
    return _derived_molecule(smiles, template, used, sources.get(template))


def _try_entry(entry: Any, reactant_templates: list[str], product_template: str | None, by_id: dict[str, Reading],
               sources: dict[str, Reading], prefer: Any) -> tuple[list[Any], list[Any]] | rgroup.Failure:
    try:
        return _expand_entry(entry, reactant_templates, product_template, by_id, sources, prefer)
    except rgroup.RGroupError as error:
        return error.failure


def _expand_entry(entry: Any, reactant_templates: list[str], product_template: str | None,
                  by_id: dict[str, Reading], sources: dict[str, Reading],
                  prefer: Any = ()) -> tuple[list[Any], list[Any]] | rgroup.Failure:
    if not isinstance(entry, dict):
        raise PlanError(f"a scope entry must be an object, got {str(entry)[:80]!r}")
    if product_template is None:
        return rgroup.Failure("no_match", "the template row has no product template")
    bindings = {str(k): str(v) for k, v in (entry.get("bindings") or {}).items()}
    if entry.get("product") is not None:
        product = _resolve({"reading": entry["product"]}, by_id)
        if entry.get("product_bindings"):  # a drawing that keeps a label, filled by the line listed beside it
            filled = {str(k): str(v) for k, v in entry["product_bindings"].items()}
            product = _derived_molecule(rgroup.fill_labels(product.smiles, filled), product.smiles, filled,
                                        by_id.get(entry["product"]))
        explicit = _fit_labels(reactant_templates + [product_template], bindings) if bindings else {}
        derived = rgroup.derive_reactants(reactant_templates, product_template, product.smiles, explicit, prefer=prefer)
        if isinstance(derived, rgroup.Failure):
            return derived
        return [_derived_molecule(str(s), s.template, s.bindings, sources.get(s.template)) for s in derived], [product]
    fitted = _fit_labels(reactant_templates + [product_template], bindings)
    labels = {label for t in reactant_templates + [product_template] for label in rgroup.template_labels(t)}
    shared = {str(k) for k in entry.get("shared") or ()}
    unbound = sorted(k for k in fitted if rgroup.normalize_label(k) not in labels and k not in shared)
    if unbound:  # the reading lost the label this entry varies: every template would come out as drawn
        return rgroup.Failure("unbound_variable", f"the entry binds {', '.join(f'{k} = {fitted[k]}' for k in unbound)}, "
                              f"which no template carries (labels: {', '.join(sorted(labels)) or 'none'})")
    reactants = [_instantiate(t, fitted, sources.get(t)) for t in reactant_templates]
    return reactants, [_instantiate(product_template, fitted, sources.get(product_template))]


def _instantiate(template: str, bindings: dict[str, str], source: Reading | None) -> Any:
    labels = rgroup.template_labels(template)
    used = {k: v for k, v in bindings.items() if rgroup.normalize_label(k) in labels}
    return _derived_molecule(rgroup.instantiate(template, bindings), template, used, source)
