"""Match each transformed schema with the original schema it was made from (thesis §3.7.2).

The thesis's data files give every problem its original-problem number (WSC273 numbering), so a
perturbation is compared with exactly the subset of the original that it perturbs: the 70
switchable schemas for *switched*, the 87 symmetrical ones for *adjectival*. Datasets whose
problems carry no number (the Winogrande twins and what is derived from them) are matched by
schema id. A transformed schema that does not match is an error naming the row, never a skipped
pair; an original without a transformed schema (outside the perturbed subset, or its image
excluded in the catalog as defective, logged there with the count) simply has no pair.
"""

from __future__ import annotations

from collections.abc import Sequence

from wsc_tasks.data.problems import Schema


class PairingError(ValueError):
    """A transformed schema has no unique original, or its problems do not correspond."""


def _where(schema: Schema) -> str:
    return schema.problems[0].source or schema.uid


def _numbered(schemas: Sequence[Schema]) -> bool:
    return all(p.number is not None for s in schemas for p in s.problems)


def pair_schemas(
    originals: Sequence[Schema],
    transformed: Sequence[Schema],
    problem_level: bool,
    some_originals: bool = False,
) -> list[tuple[Schema, Schema]]:
    """(original, transformed) for every transformed schema, in the transformed order.

    ``problem_level``: a problem transformation, so problem i of the transformed schema must be
    the image of problem i of the original (same original-problem number, or same position when
    matching by id); a schema transformation (inversion) needs only the same schema.
    ``some_originals``: only some original schemas are given (a run of the first documents), so a
    transformed schema none of whose keys is among them is left out rather than an error.
    """
    by_number = _numbered(originals) and _numbered(transformed)
    index: dict[object, Schema] = {}
    for schema in originals:
        keys = [p.number for p in schema.problems] if by_number else [schema.uid]
        for key in keys:
            if key in index:
                raise PairingError(f"{_where(schema)}: original key {key!r} occurs twice")
            index[key] = schema
    pairs, used = [], set()
    for schema in transformed:
        keys = [p.number for p in schema.problems] if by_number else [schema.uid]
        found = {index[k].uid: index[k] for k in keys if k in index}
        missing = [k for k in keys if k not in index]
        if some_originals and not found:
            continue  # its original was not among those given
        if missing or len(found) != 1:
            raise PairingError(
                f"{_where(schema)}: transformed schema {schema.uid} maps to original schema(s) "
                f"{sorted(found) or 'none'} (keys {keys}, unmatched {missing}); each must come "
                "from exactly one original schema"
            )
        original = next(iter(found.values()))
        if original.uid in used:
            raise PairingError(f"{_where(schema)}: original schema {original.uid} used twice")
        used.add(original.uid)
        if problem_level:
            before = [p.number for p in original.problems] if by_number else None
            if len(original.problems) != len(schema.problems) or (by_number and before != keys):
                raise PairingError(
                    f"{_where(schema)}: problems of {schema.uid} ({keys}) do not correspond one "
                    f"to one with those of original {original.uid} ({before}); a problem "
                    "transformation must keep the problem order"
                )
        pairs.append((original, schema))
    return pairs
