"""The built-in reference model: a network of the same shape class as the study's ball
detector, for measuring batch curves on a card when the real model is not at hand.

What it is: an HRNet-style network (Sun et al., "Deep High-Resolution Representation
Learning", CVPR 2019) of the kind WASB/BlurBall-style ball detectors use. Its input is a
window of 3 RGB frames stacked on the channel axis (9 channels); it never leaves the full
input resolution on its main branch and predicts one heatmap per frame of the window (the
3-in, 3-out arrangement of TrackNetV2-style detectors) at that full resolution. Every
residual block carries squeeze-and-excitation channel attention (Hu et al., CVPR 2018).
It has 1,500,835 parameters, within 1% of the study's 1.49 M.

What it is not: the study's trained network. The weights are random (a fixed seed), and
the exact layer counts of the study's model are not published with its latencies; this
network matches its size, input, resolution profile and kind of operations, so its batch
curve has the same character, not the same milliseconds. Latency does not depend on
weight values, so random weights measure the same as trained ones of this shape.

Layout, as an HRNet would be drawn::

    stem      2 x conv3x3 (9 -> 32), full resolution, then 2 SE residual blocks (32)
    stage 2   branches 16 @ 1/1, 32 @ 1/2          1 module
    stage 3   branches 16 @ 1/1, 32 @ 1/2, 64 @ 1/4          2 modules
    stage 4   branches 16, 32, 64, 128 @ 1/1 .. 1/8           1 module, fused into 1/1
    head      conv3x3 (16) + conv1x1 -> 3 heatmaps at full resolution

Each module runs 2 SE residual blocks per branch, then exchanges information between all
branches (strided 3x3 convolutions downwards, 1x1 convolution and nearest-neighbour
upsampling upwards), as HRNet's repeated multi-scale fusion does. Upsampling goes to the
exact size of the target branch, so any input size works, not only multiples of 8.

PyTorch is imported only when a model is built, so importing this module is cheap and
works without PyTorch installed.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from torch import nn

IN_CHANNELS = 9
"""A window of 3 RGB frames, stacked on the channel axis."""
HEATMAPS = 3
"""One output heatmap per frame of the window."""
WIDTHS = (16, 32, 64, 128)
"""Channels of the branches at 1/1, 1/2, 1/4 and 1/8 of the input resolution."""
STEM_WIDTH = 32
BLOCKS_PER_BRANCH = 2
MODULES_PER_STAGE = (1, 2, 1)
SE_REDUCTION = 4
SEED = 0


def build_reference_model(*, seed: int = SEED) -> nn.Module:
    """A freshly initialised reference network in evaluation mode, on the CPU, in FP32.

    ``seed`` fixes the random weights so two builds are the same network. Input is a
    float tensor ``(batch, 9, height, width)``; output ``(batch, 3, height, width)``.
    Raises ``ModuleNotFoundError`` when PyTorch is not installed.
    """
    import torch

    network_class = _network_class()
    generator_state = torch.random.get_rng_state()
    try:
        # Seed locally and restore the global generator: building a model must not change
        # the random numbers of whoever called us.
        torch.manual_seed(seed)
        model = network_class()
    finally:
        torch.random.set_rng_state(generator_state)
    model.eval()
    return model


def parameter_count(model: nn.Module) -> int:
    """Number of trainable and frozen parameters (buffers such as BatchNorm statistics
    are not parameters and are not counted, as papers count them)."""
    return sum(p.numel() for p in model.parameters())


@cache
def _network_class() -> Any:
    """Define the network's classes on first use, so that importing this module does not
    import PyTorch (a class body that subclasses ``nn.Module`` needs it)."""
    from torch import Tensor, nn
    from torch.nn import functional

    def conv_bn(
        inputs: int, outputs: int, *, kernel: int = 3, stride: int = 1, relu: bool = True
    ) -> nn.Sequential:
        layers: list[nn.Module] = [
            nn.Conv2d(inputs, outputs, kernel, stride, kernel // 2, bias=False),
            nn.BatchNorm2d(outputs),
        ]
        if relu:
            layers.append(nn.ReLU(inplace=True))
        return nn.Sequential(*layers)

    class SqueezeExcitation(nn.Module):
        """Channel attention: global average pool, bottleneck, sigmoid gate per channel."""

        def __init__(self, channels: int) -> None:
            super().__init__()
            hidden = max(channels // SE_REDUCTION, 4)
            self.gate = nn.Sequential(
                nn.AdaptiveAvgPool2d(1),
                nn.Conv2d(channels, hidden, 1),
                nn.ReLU(inplace=True),
                nn.Conv2d(hidden, channels, 1),
                nn.Sigmoid(),
            )

        def forward(self, x: Tensor) -> Tensor:
            return x * self.gate(x)

        def __repr__(self) -> str:  # keep printed models short
            return f"SqueezeExcitation({self.gate[1].in_channels})"

    class SEBasicBlock(nn.Module):
        """HRNet's basic residual block (two 3x3 convolutions) with SE before the sum."""

        def __init__(self, channels: int) -> None:
            super().__init__()
            self.body = nn.Sequential(
                conv_bn(channels, channels), conv_bn(channels, channels, relu=False)
            )
            self.attention = SqueezeExcitation(channels)

        def forward(self, x: Tensor) -> Tensor:
            return functional.relu(x + self.attention(self.body(x)))

    class FusionModule(nn.Module):
        """One HRNet module: residual blocks on every branch, then all-to-all fusion.

        ``outputs`` branches come out: all of them inside a stage, only the full
        resolution one at the very end (the output head reads that one).
        """

        def __init__(self, widths: tuple[int, ...], outputs: int) -> None:
            super().__init__()
            self.branches = nn.ModuleList(
                nn.Sequential(*(SEBasicBlock(w) for _ in range(BLOCKS_PER_BRANCH))) for w in widths
            )
            self.fuse = nn.ModuleList()
            for target in range(outputs):
                row = nn.ModuleList()
                for source, width in enumerate(widths):
                    if source == target:
                        row.append(nn.Identity())
                    elif source > target:  # lower resolution: match channels, upsample later
                        row.append(conv_bn(width, widths[target], kernel=1, relu=False))
                    else:  # higher resolution: one strided 3x3 convolution per halving
                        steps = [
                            conv_bn(width, width, stride=2) for _ in range(target - source - 1)
                        ]
                        steps.append(conv_bn(width, widths[target], stride=2, relu=False))
                        row.append(nn.Sequential(*steps))
                self.fuse.append(row)

        def forward(self, inputs: list[Tensor]) -> list[Tensor]:
            features = [branch(x) for branch, x in zip(self.branches, inputs, strict=True)]
            fused = []
            for target, fusion in enumerate(self.fuse):
                row = cast(nn.ModuleList, fusion)
                total = features[target]
                for source in range(len(features)):
                    if source == target:
                        continue
                    moved = row[source](features[source])
                    if source > target:
                        moved = functional.interpolate(moved, size=total.shape[-2:], mode="nearest")
                    total = total + moved
                fused.append(functional.relu(total))
            return fused

    class ReferenceBallNet(nn.Module):
        """HRNet-style ball detector with SE attention; see the module docstring."""

        def __init__(self) -> None:
            super().__init__()
            w = WIDTHS
            self.stem = nn.Sequential(
                conv_bn(IN_CHANNELS, STEM_WIDTH), conv_bn(STEM_WIDTH, STEM_WIDTH)
            )
            self.layer1 = nn.Sequential(
                *(SEBasicBlock(STEM_WIDTH) for _ in range(BLOCKS_PER_BRANCH))
            )
            self.transition1 = nn.ModuleList(
                [conv_bn(STEM_WIDTH, w[0]), conv_bn(STEM_WIDTH, w[1], stride=2)]
            )
            two, three, four = MODULES_PER_STAGE
            self.stage2 = nn.ModuleList(FusionModule(w[:2], 2) for _ in range(two))
            self.transition2 = conv_bn(w[1], w[2], stride=2)
            self.stage3 = nn.ModuleList(FusionModule(w[:3], 3) for _ in range(three))
            self.transition3 = conv_bn(w[2], w[3], stride=2)
            self.stage4 = nn.ModuleList(
                FusionModule(w, 4 if i < four - 1 else 1) for i in range(four)
            )
            self.head = nn.Sequential(conv_bn(w[0], w[0]), nn.Conv2d(w[0], HEATMAPS, 1))

        def forward(self, x: Tensor) -> Tensor:
            x = self.layer1(self.stem(x))
            branches = [transition(x) for transition in self.transition1]
            for module in self.stage2:
                branches = module(branches)
            branches = [*branches, self.transition2(branches[-1])]
            for module in self.stage3:
                branches = module(branches)
            branches = [*branches, self.transition3(branches[-1])]
            for module in self.stage4:
                branches = module(branches)
            heatmaps: Tensor = self.head(branches[0])
            return heatmaps

    return ReferenceBallNet
