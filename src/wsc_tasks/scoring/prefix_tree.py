"""Token sequences packed as tries: every distinct prefix through a causal model once.

A causal model's output at a position depends only on the tokens up to it, so sequences that share
a prefix can share its positions. Sorted, sequences that share a prefix are neighbours; written in
that order with each sequence's shared prefix left out, the tokens of a row are the nodes of a
trie in depth-first (pre)order. A node attends to itself and its ancestors only, and its position
id is its depth, so each node's output is the one its sequence alone would give. In preorder the
descendants of a node are the positions right after it, up to its subtree's ``end``: key ``k`` is
visible to query ``q`` exactly when ``k <= q < end[k]``, so a row's mask is built from ``end``
alone (``tree_mask``). Rows are cut at a length bound; a sequence that starts a row writes its
whole path again (the prefix it shares with the row before), which is the only repetition.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Row:
    """One packed row: trie nodes in preorder, their depths and subtree ends (row positions)."""

    tokens: list[int]
    depths: list[int]
    ends: list[int]


@dataclass(frozen=True)
class Packing:
    """Rows, and where each sequence lies: its row and the row positions of its tokens."""

    rows: list[Row]
    row_of: list[int]  # per sequence, in the order given
    path_of: list[list[int]]  # per sequence: the row position of each of its tokens


def _shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    shared, limit = 0, min(len(a), len(b))
    while shared < limit and a[shared] == b[shared]:
        shared += 1
    return shared


def pack(sequences: Sequence[Sequence[int]], row_tokens: int) -> Packing:
    """Pack ``sequences`` into rows of at most ``row_tokens`` nodes (a longer sequence gets a row
    of its own); equal sequences and shared prefixes within a row share their nodes."""
    order = sorted(range(len(sequences)), key=lambda i: tuple(sequences[i]))
    rows: list[Row] = []
    row_of = [0] * len(sequences)
    path_of: list[list[int]] = [[] for _ in sequences]
    tokens: list[int] = []
    depths: list[int] = []
    ends: list[int] = []
    stack: list[int] = []  # row positions of the previous sequence's path
    previous: Sequence[int] = ()

    def close() -> None:
        for position in stack:
            ends[position] = len(tokens)
        rows.append(Row(tokens, depths, ends))

    for i in order:
        sequence = sequences[i]
        shared = _shared_prefix(previous, sequence)
        if tokens and len(tokens) + len(sequence) - shared > row_tokens:
            close()
            tokens, depths, ends, stack, shared = [], [], [], [], 0
        for position in stack[shared:]:  # the previous path's branch is complete
            ends[position] = len(tokens)
        del stack[shared:]
        for depth in range(shared, len(sequence)):
            stack.append(len(tokens))
            tokens.append(sequence[depth])
            depths.append(depth)
            ends.append(0)
        row_of[i] = len(rows)
        path_of[i] = stack[: len(sequence)]
        previous = sequence
    if tokens:
        close()
    return Packing(rows, row_of, path_of)


def trie_nodes(sequences: Sequence[Sequence[int]]) -> int:
    """The number of distinct non-empty prefixes of ``sequences``: the fewest token positions a
    causal model needs to score all of them."""
    ordered = sorted({tuple(s) for s in sequences})
    total = 0
    previous: tuple[int, ...] = ()
    for sequence in ordered:
        total += len(sequence) - _shared_prefix(previous, sequence)
        previous = sequence
    return total


def batches(rows: Sequence[Row], token_budget: int) -> list[list[int]]:
    """Row indices grouped so that each group's rows, padded to its longest, hold at most
    ``token_budget`` positions (one row at least); longest rows first."""
    order = sorted(range(len(rows)), key=lambda r: -len(rows[r].tokens))
    groups: list[list[int]] = []
    for r in order:
        if groups and (len(groups[-1]) + 1) * len(rows[groups[-1][0]].tokens) <= token_budget:
            groups[-1].append(r)
        else:
            groups.append([r])
    return groups


def tree_inputs(
    rows: Sequence[Row], pad_id: int = 0
) -> tuple[list[list[int]], list[list[int]], list[list[int]]]:
    """Input ids, position ids and subtree ends of ``rows``, right-padded to the longest; a
    padding position sees itself alone (its end one past it), as no real position sees it."""
    width = max(len(row.tokens) for row in rows)
    ids, positions, ends = [], [], []
    for row in rows:
        n = len(row.tokens)
        ids.append(row.tokens + [pad_id] * (width - n))
        positions.append(row.depths + [0] * (width - n))
        ends.append(row.ends + list(range(n + 1, width + 1)))
    return ids, positions, ends


def tree_mask(ends: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The additive attention mask ``[rows, 1, width, width]`` of rows with subtree ends ``ends``
    (``[rows, width]``): 0 where query ``q`` may see key ``k`` (``k <= q < ends[k]``), the
    dtype's lowest value elsewhere (what transformers' eager and SDPA attention add)."""
    import torch

    width = ends.shape[1]
    index = torch.arange(width, device=ends.device)
    visible = (index[None, None, :] <= index[None, :, None]) & (
        index[None, :, None] < ends[:, None, :]
    )
    mask = torch.zeros(visible.shape, dtype=dtype, device=ends.device)
    mask.masked_fill_(~visible, torch.finfo(dtype).min)
    return mask[:, None]
