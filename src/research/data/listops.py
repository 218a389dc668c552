"""ListOps: the value of nested operations on digits, e.g. `[ MAX 2 9 [ MIN 4 7 ] 0 ]` = 9.

Source: N. Nangia and S. R. Bowman (2018), "ListOps: A Diagnostic Dataset for Latent Tree
Learning", NAACL-HLT Student Research Workshop, arXiv:1804.06028; Long Range Arena (Y. Tay et al.
2021, arXiv:2011.04006) uses it at up to 2,000 tokens. The operators are theirs: MAX, MIN, MED
(median) and SM (sum modulo 10), over the digits 0-9; the label is the value, so 10 classes. MED
of an even number of arguments is, here, the lower of the two middle values, so every value is
one of its arguments. Tokens: PAD=0, the digits, "[", "]" and the four operators (`TOKENS`).

The generator is this project's. The published ones grow random trees and keep those whose length
falls in a range, which wastes most draws at long lengths; this one builds each expression to a
length drawn first. An operator node `[ OP a1 ... ak ]` has 2 <= k <= max_args arguments and takes
3 tokens plus theirs; a digit takes 1; no expression nests more than `max_depth` operators. The
token counts these rules allow are precomputed exactly (as bitsets). An example's length is drawn
uniformly from the allowed counts in its range; then, top-down, each operator draws k uniformly
among the feasible counts and splits its remaining tokens among its arguments like a uniform
random split (each share a Beta(1, arguments left - 1) fraction of what is left), moved to the
nearest feasible size. Operators and digits are uniform. Every set is a pure function of the
seed, its split, its length band and the generator's settings. Val and test sets longer than
training measure length extrapolation: `val/acc` at the training range, `val/acc@<max tokens>`
in each longer band.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import torch

from research.config.errors import ConfigError
from research.data.base import SplitDataModule
from research.data.configs import ListOpsConfig
from research.data.sequences import LabelledSequences, pad_batch

OPERATORS = ("MAX", "MIN", "MED", "SM")
TOKENS = ("[PAD]", *"0123456789", "[", "]", *OPERATORS)
_DIGIT, _OPEN, _CLOSE, _OPERATOR = 1, 11, 12, 13  # ids of "0", "[", "]" and "MAX"
_APPLY: tuple[Callable[[list[int]], int], ...] = (
    max,
    min,
    statistics.median_low,
    lambda values: sum(values) % 10,
)


def _sumset(a: int, b: int) -> int:
    """Bitset of every x + y with bit x set in `a` and bit y set in `b`."""
    total = 0
    while b:
        lowest = b & -b
        total |= a << (lowest.bit_length() - 1)
        b ^= lowest
    return total


class ListOpsGenerator:
    """Expressions of an exact number of tokens, with at most `max_depth` nested operators."""

    def __init__(self, max_depth: int, max_args: int, longest: int) -> None:
        self.max_depth, self.max_args = max_depth, max_args
        within = (1 << (longest + 1)) - 1
        # trees[h]: bit n set if an expression of n tokens nests at most h operators.
        # args[h][k]: bit n set if k such expressions of height < h take n tokens together.
        self.trees, self.args = [0b10], [[]]
        for _ in range(max_depth):
            row = [1]
            for _ in range(max_args):
                row.append(_sumset(row[-1], self.trees[-1]) & within)
            operators = 0
            for count in range(2, max_args + 1):
                operators |= row[count]
            self.args.append(row)
            self.trees.append(0b10 | ((operators << 3) & within))

    def lengths(self, low: int, high: int) -> list[int]:
        """The token counts in [low, high] an expression can have."""
        return [n for n in range(low, high + 1) if self.trees[self.max_depth] >> n & 1]

    def expression(self, length: int, rng: random.Random) -> tuple[list[int], int]:
        """(token ids, value) of a random expression of exactly `length` tokens."""
        if not self.trees[self.max_depth] >> length & 1:
            raise ValueError(f"no ListOps expression has {length} tokens; see lengths()")
        return self._expression(length, self.max_depth, rng)

    def _expression(self, length: int, height: int, rng: random.Random) -> tuple[list[int], int]:
        if length == 1:
            digit = rng.randrange(10)
            return [_DIGIT + digit], digit
        left = length - 3
        counts = [k for k in range(2, self.max_args + 1) if self.args[height][k] >> left & 1]
        tokens, values = [], []
        for remaining in range(rng.choice(counts), 0, -1):
            size = left if remaining == 1 else self._share(left, remaining, height, rng)
            ids, value = self._expression(size, height - 1, rng)
            tokens += ids
            values.append(value)
            left -= size
        operator = rng.randrange(len(OPERATORS))
        return [_OPEN, _OPERATOR + operator, *tokens, _CLOSE], _APPLY[operator](values)

    def _share(self, left: int, remaining: int, height: int, rng: random.Random) -> int:
        """Tokens for the next of `remaining` arguments out of `left`, leaving a feasible rest."""
        target = max(1, round(left * rng.betavariate(1, remaining - 1)))
        fits, rest = self.trees[height - 1], self.args[height][remaining - 1]
        for step in range(left):
            for size in (target - step, target + step):
                if 1 <= size <= left and fits >> size & 1 and rest >> (left - size) & 1:
                    return size
        raise AssertionError(f"no feasible split of {left} tokens")  # excluded by construction


class ListOpsDataModule(SplitDataModule):
    """Train at `min_len`..`max_len` tokens; evaluate there and in each band up to the next
    of `eval_max_lens` (e.g. [128, 256]: 65..128 and 129..256), logged as `val/acc@128`, ..."""

    def __init__(self, config: ListOpsConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = config = ListOpsConfig.build(config, params)
        bounds = [config.max_len, *(config.eval_max_lens or [])]
        self.ranges = [(config.min_len, config.max_len), *((a + 1, b) for a, b in pairwise(bounds))]
        self.generator = ListOpsGenerator(config.max_depth, config.max_args, bounds[-1])
        for low, high in self.ranges:
            if not self.generator.lengths(low, high):
                raise ConfigError(
                    f"data: no ListOps expression has {low}..{high} tokens with "
                    f"max_depth={config.max_depth}, max_args={config.max_args}; raise either"
                )
        self.eval_suffixes = ["", *(f"@{high}" for _, high in self.ranges[1:])]
        self.sizes = {"train": config.train_size, "val": config.val_size, "test": config.test_size}
        self.collate_fn = pad_batch
        self.splits: dict[str, LabelledSequences | list[LabelledSequences]] = {}

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        self.splits["train"] = self.dataset("train", 0)
        for split in ("val", "test"):
            sets = [self.dataset(split, band) for band in range(len(self.ranges))]
            self.splits[split] = sets if len(sets) > 1 else sets[0]

    def dataset(self, split: str, band: int) -> LabelledSequences:
        """`split`'s examples in length band `band` (0: the training range), drawn from a
        random stream of their own, seeded by (seed, split, the band's lengths)."""
        low, high = self.ranges[band]
        rng = random.Random(f"listops/{self.config.seed}/{split}/{low}-{high}")
        lengths = self.generator.lengths(low, high)
        examples = [
            self.generator.expression(rng.choice(lengths), rng) for _ in range(self.sizes[split])
        ]
        sequences = [torch.tensor(ids) for ids, _ in examples]
        return LabelledSequences(sequences, torch.tensor([value for _, value in examples]))
