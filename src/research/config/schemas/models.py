"""Networks and the LightningModules that wrap them."""

from __future__ import annotations

from dataclasses import dataclass

from research.config.schema import Schema, fail, spec


@dataclass
class Classification(Schema):
    targets = ("research.modules.classification.ClassificationModule",)
    passthrough = ("net",)
    num_classes: int = spec(2, ge=2)
    top_k: int = spec(1, ge=1)

    def check(self, at: str) -> None:
        if self.top_k > self.num_classes:
            fail(at, "top_k", f"={self.top_k} must be <= num_classes={self.num_classes}")


@dataclass
class CNN(Schema):
    targets = ("research.models.cnn.CNN",)
    in_channels: int = spec(1, ge=1)
    image_size: int = spec(8, ge=1)
    num_classes: int = spec(2, ge=2)
    channels: list[int] = spec([32, 64])
    kernel_sizes: list[int] = spec([3, 3])
    batch_norm: bool = True
    hidden_sizes: list[int] = spec([128])
    dropout: float = spec(0.0, ge=0.0, lt=1.0)

    def check(self, at: str) -> None:
        if len(self.channels) != len(self.kernel_sizes):
            fail(
                at,
                "kernel_sizes",
                f"has {len(self.kernel_sizes)} entries but channels has "
                f"{len(self.channels)}; give one kernel size per conv block",
            )
        if any(c < 1 for c in self.channels + self.hidden_sizes):
            fail(at, "channels", "and hidden_sizes must be positive integers")
        if any(k < 1 or k % 2 == 0 for k in self.kernel_sizes):
            fail(at, "kernel_sizes", f"={self.kernel_sizes} must be odd positive integers")
        if self.image_size >> len(self.channels) < 1:
            fail(
                at,
                "channels",
                f"has {len(self.channels)} pooling blocks, too many for "
                f"image_size={self.image_size} (each block halves it)",
            )
