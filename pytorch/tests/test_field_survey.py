"""Tests of the field survey (pytorch/bench/field_survey.py), on the CPU: its per-model function on
real timm and torchvision models built on the meta device, against counts made here module by
module; that what optimize_for_inference fuses and what it leaves add up to what was there; that
GhostNet's blocks are reported as fused whole, their squeeze-excitation gates in them; that
what is left carries its reason (torchvision MobileNetV3's classifier, LeViT's attention); and
that functions held as attributes and BatchNorms outside an nn.Sequential are found, on small
hand-made models.

    pytest pytorch/tests/test_field_survey.py
"""

from __future__ import annotations

import collections
import pathlib
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "bench"))

import field_survey  # noqa: E402
from test_fused_blocks import create_timm_model  # noqa: E402


def _meta_model(library: str, name: str) -> nn.Module:
    with torch.device("meta"):
        if library == "timm":
            return create_timm_model(name)
        models = pytest.importorskip("torchvision.models")
        return models.get_model(name, weights=None)


def _direct_counts(model: nn.Module) -> collections.Counter:
    kinds = {nn.Hardswish: "hardswish", nn.Hardsigmoid: "hardsigmoid", nn.ReLU6: "relu6", nn.Hardtanh: "hardtanh"}
    return collections.Counter(kinds[type(m)] for m in model.modules() if type(m) in kinds)


@pytest.mark.parametrize("library, name", [("timm", "mobilenetv3_small_050"), ("timm", "ghostnet_050"),
                                           ("torchvision", "mobilenet_v2"), ("torchvision", "mobilenet_v3_small")])
def test_counts_match_a_direct_count_and_balance(library, name):
    model = _meta_model(library, name)
    direct = _direct_counts(model)
    gates = sum(1 for m in model.modules()
                if type(getattr(m, "gate", getattr(m, "scale_activation", None))) is nn.Hardsigmoid)
    record = field_survey.survey_model(model)
    assert record["hard_layers"] == dict(direct)
    assert sum(record["hard_gates"].values()) == gates
    assert record["balanced"]
    assert sum(record["fused"].values()) + record["left_total"] == sum(direct.values())
    assert next(model.parameters()).is_meta  # surveyed without storage


def test_mobilenetv3_blocks_fused_whole():
    model = _meta_model("timm", "mobilenetv3_small_050")
    blocks = [m for m in model.modules() if type(m).__name__ in ("InvertedResidual", "DepthwiseSeparableConv")]
    hard = sum(any(_direct_counts(block).values()) for block in blocks)  # the first ones run ReLU only
    record = field_survey.survey_model(model)
    assert record["rewrite"]["blocks"] == len(blocks)
    assert 0 < hard < len(blocks)
    matched = {label: counts for label, counts in record["blocks"].items()
               if label in ("timm.InvertedResidual", "timm.DepthwiseSeparableConv")}
    assert matched == {"timm.InvertedResidual": [hard - 1, hard - 1], "timm.DepthwiseSeparableConv": [1, 1]}
    # The stem's BatchNormAct2d and the last stage's ConvBnAct: layers, not blocks fused whole.
    assert {label: counts for label, counts in record["blocks"].items() if label not in matched} == \
        {"timm.BatchNormAct2d": [0, 1], "timm.ConvBnAct": [0, 1]}
    # The head's hardswish after conv_head (a Conv2d with bias, no BatchNorm) is what stays.
    assert record["left"] == {"after a Conv2d without BatchNorm (no bias + activation rewrite)": 1}


def test_ghostnet_blocks_fused_whole():
    model = _meta_model("timm", "ghostnet_050")
    bottlenecks = sum(type(m).__name__ == "GhostBottleneck" for m in model.modules())
    gated = sum(type(m).__name__ == "GhostBottleneck" and type(getattr(m, "se", None)).__name__ == "SqueezeExcite"
                for m in model.modules())
    record = field_survey.survey_model(model)
    assert record["blocks"]["timm.GhostBottleneck"] == [gated, gated]
    assert record["rewrite"]["blocks"] == bottlenecks
    assert record["fused"] == {"block": record["hard_layers"]["hardsigmoid"]}


def test_left_layers_carry_their_reason():
    record = field_survey.survey_model(_meta_model("torchvision", "mobilenet_v3_small"))
    assert record["left"] == {"after a Linear without BatchNorm (no bias + activation rewrite)": 1}
    # LeViT: the stem's and MLPs' hardswish fold with their ConvNorm / LinearNorm; the attention's stay.
    record = field_survey.survey_model(_meta_model("timm", "levit_128s"))
    assert 0 < record["left_total"] < record["hard_total"]
    assert all(reason.startswith("in an attention module") for reason in record["left"])


class _HeldGate(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 1)
        self.gate_fn = F.hardsigmoid

    def forward(self, x):
        return x * self.gate_fn(self.conv(x))


class _Unpaired(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn, self.act = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.Hardswish()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


def test_held_functions_and_unpaired_batchnorm():
    with torch.device("meta"):
        paired = nn.Sequential(nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8), nn.ReLU6())
        model = nn.Sequential(_HeldGate(), _Unpaired(), paired)
    record = field_survey.survey_model(model)
    assert record["hard_layers"] == {"hardsigmoid()": 1, "hardswish": 1, "relu6": 1}
    assert record["hard_gates"] == {"_HeldGate": 1}
    assert record["fused"] == {"batchnorm": 1}
    assert record["left"] == {"called as a function (attribute gate_fn) in _HeldGate: no module to rewrite": 1,
                              "after a BatchNorm in _Unpaired, not its nn.Sequential neighbour": 1}
    assert record["balanced"]


def test_forward_source_calls_are_found():
    class Inline(nn.Module):
        def forward(self, x):
            return F.hardswish(x) + torch.nn.functional.relu6(x)  # two calls no module shows

    assert field_survey.forward_calls(Inline) == ("hardswish", "relu6")
    assert field_survey.forward_calls(nn.Hardswish) == ()
