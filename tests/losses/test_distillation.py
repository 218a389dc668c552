"""Distillation: KL(teacher || student) over each query's own documents, by hand and gradcheck."""

from __future__ import annotations

import math

import pytest
import torch

from research.losses.distillation import Distillation


def _hand_batch() -> tuple[torch.Tensor, ...]:
    """Two one-token queries with two documents each; each document's masked second token
    (9, 9) would win every max if it counted. Student scores q.d: [[1, 0], [0.5, 2]]."""
    queries = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]])
    tokens = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.5], [0.0, 2.0]]
    documents = torch.tensor([[token, [9.0, 9.0]] for token in tokens])
    document_mask = torch.tensor([[True, False]] * 4)
    return queries, torch.ones(2, 1, dtype=torch.bool), documents, document_mask


def _kl(teacher: list[float], student: list[float], temperature: float) -> float:
    def softmax(row: list[float]) -> list[float]:
        exps = [math.exp(x / temperature) for x in row]
        return [e / sum(exps) for e in exps]

    p, q = softmax(teacher), softmax(student)
    return sum(pi * math.log(pi / qi) for pi, qi in zip(p, q, strict=True))


@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_hand_computed_kl_batchmean(temperature):
    teacher = [[3.0, 1.0], [0.0, 0.5]]
    student = [[1.0, 0.0], [0.5, 2.0]]
    expected = sum(_kl(t, s, temperature) for t, s in zip(teacher, student, strict=True)) / 2
    loss = Distillation(temperature=temperature)(
        *_hand_batch(), teacher_scores=torch.tensor(teacher)
    )
    assert loss.item() == pytest.approx(expected)


def test_zero_when_the_student_ranks_like_the_teacher_up_to_a_shift():
    """Softmax ignores a per-query shift, so teacher = student + c_i gives zero loss."""
    teacher = torch.tensor([[1.0, 0.0], [0.5, 2.0]]) + torch.tensor([[7.0], [-3.0]])
    loss = Distillation()(*_hand_batch(), teacher_scores=teacher)
    assert loss.item() == pytest.approx(0.0, abs=1e-6)
    reversed_teacher = teacher.flip(-1)
    assert Distillation()(*_hand_batch(), teacher_scores=reversed_teacher).item() > 0.1


def test_gradcheck_in_float64():
    generator = torch.Generator().manual_seed(0)
    queries = torch.randn(2, 3, 4, generator=generator, dtype=torch.float64)
    documents = torch.randn(6, 5, 4, generator=generator, dtype=torch.float64)
    document_mask = torch.rand(6, 5, generator=generator) < 0.6
    document_mask[:, 0] = True
    query_mask = torch.tensor([[True, True, False], [True, True, True]])
    teacher = torch.randn(2, 3, generator=generator, dtype=torch.float64)
    loss = Distillation(temperature=0.5)
    assert torch.autograd.gradcheck(
        lambda q, d: loss(q, query_mask, d, document_mask, teacher_scores=teacher),
        (queries.requires_grad_(True), documents.requires_grad_(True)),
    )


@pytest.mark.parametrize(
    ("temperature", "teacher_shape", "message"),
    [
        (-1.0, (2, 2), "temperature=-1.0 is out of range; it must be > 0.0"),
        (1.0, (2, 3), r"teacher_scores must have shape .* = \(2, 2\), got \(2, 3\)"),
        (1.0, (4,), r"got \(4,\)"),
    ],
)
def test_mistakes_raise_one_line(temperature, teacher_shape, message):
    with pytest.raises(ValueError, match=message) as error:
        Distillation(temperature=temperature)(
            *_hand_batch(), teacher_scores=torch.zeros(teacher_shape)
        )
    assert "\n" not in str(error.value)
