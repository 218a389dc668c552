"""Knowledge distillation from a teacher's scores over each query's own document list.

The KL divergence between the teacher's and the student's softmax distributions over the G
documents given with each query, as ColBERTv2 (Santhanam et al. 2022, section 3.2) distils a
cross-encoder. PyLate's `Distillation` computes the same KL without a temperature and, by
default, min-max normalises the student's scores first; we do not normalise.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn
from torch.nn import functional as F

from research.losses.configs import DistillationConfig
from research.losses.contrastive import documents_per_query
from research.retrieval.maxsim import maxsim_pairs


class Distillation(nn.Module):
    """KL(softmax(teacher / T) || softmax(student / T)) per query, averaged over queries.

    The student's scores are MaxSim of query i with `documents[i*G : (i+1)*G]`. Unlike Hinton et
    al. (2015) the loss is not multiplied by T^2.
    """

    def __init__(self, config: DistillationConfig | None = None, **params: Any) -> None:
        super().__init__()
        self.config = DistillationConfig.build(config, params)
        self.temperature = self.config.temperature

    def forward(
        self,
        queries: Tensor,
        query_mask: Tensor,
        documents: Tensor,
        document_mask: Tensor,
        teacher_scores: Tensor,
    ) -> Tensor:
        group_size = documents_per_query(queries, documents)
        if teacher_scores.shape != (len(queries), group_size):
            raise ValueError(
                f"teacher_scores must have shape (queries, documents per query) = "
                f"{(len(queries), group_size)}, got {tuple(teacher_scores.shape)}"
            )
        student = maxsim_pairs(
            queries.repeat_interleave(group_size, dim=0),
            query_mask.repeat_interleave(group_size, dim=0),
            documents,
            document_mask,
        ).view(len(queries), group_size)
        return F.kl_div(
            F.log_softmax(student / self.temperature, dim=-1),
            F.log_softmax(teacher_scores.to(student.dtype) / self.temperature, dim=-1),
            reduction="batchmean",
            log_target=True,
        )

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}"
