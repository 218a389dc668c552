"""scikit-learn's bundled 8x8 handwritten digits: real data that needs no download."""

from __future__ import annotations

import torch
from sklearn.datasets import load_digits

from research.data.images import ImageArrays, ImageDataModule


class DigitsDataModule(ImageDataModule):
    """1797 images, 10 classes; the test split is carved out of the data (stratified, seeded)."""

    def load(self) -> ImageArrays:
        digits = load_digits()
        images = torch.as_tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
        return ImageArrays(images, torch.as_tensor(digits.target, dtype=torch.long))
