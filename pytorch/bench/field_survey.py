#!/usr/bin/env python3
"""The field: every timm and torchvision classification model that holds a hard activation, and what
hardact_torch.optimize_for_inference fuses in it and what it leaves, with the reason.

    python3 pytorch/bench/field_survey.py --out field.json              # every model (minutes, CPU only)
    python3 pytorch/bench/field_survey.py --families mobilenetv3 ghostnet --table field.md
    python3 pytorch/bench/field_survey.py --limit 50                    # the first 50 names of each library

Each model of timm.list_models() and torchvision.models.list_models(module=torchvision.models) is
built with random weights (nothing is downloaded) on the meta device: parameters without storage, so
a billion-parameter model builds in a fraction of a second. A model whose constructor needs real
tensors (a .item() or .tolist() on a computed tensor) is built again on the CPU; one that cannot be
built at all, or takes more than --timeout seconds, is skipped with the exception's type and first
line. The rewrite runs on whatever device the model was built on: it only inspects modules and
makes new ones from their tensors (BatchNormActivation.from_batchnorm's fold gives meta tensors on a
meta model), so its counts are those of a real model.

Detection of hard activations, before the rewrite (hard_layers):
  - modules, by exact class, then by subclass in this order (nn.ReLU6 is a subclass of nn.Hardtanh):
    torch.nn's Hardswish, Hardsigmoid, ReLU6, Hardtanh; timm's own HardSwish, HardSigmoid, HardMish
    and their memory-efficient *Me forms (timm.layers.activations[_me]; timm builds them only where
    torch.nn lacks the op or when scripting, so normally torch.nn's); hardact's own modules.
    Hard-mish, 0.5 x clamp(x + 2, 0, 2), is counted as hard: a clamp-based piecewise polynomial
    like hard-swish, though hardact has no op for it yet.
  - functions held by a module (an attribute such as gate_fn or act_fn, or a functools.partial of
    one): F.hardswish, F.hardsigmoid, F.relu6, F.hardtanh, timm's hard_swish, hard_sigmoid,
    hard_mish and their *_me forms (what timm.layers.get_act_fn returns for those names);
  - calls in a module class's forward source (hardswish(, hard_sigmoid(, relu6( ...), once per
    instance of that class, the hard-activation classes themselves excepted: a call in forward that
    no module or attribute shows. These two are counted as kind "<name>()".
  A hard gate is a module whose gate, gate_fn or scale_activation attribute is one of the above
  (timm's SqueezeExcite, EcaModule, CoordAttention...; torchvision's SqueezeExcitation): counted by
  the owner's class under hard_gates, its layer counted once in hard_layers.

After optimize_for_inference, every hard layer is found in one of these places (module counts balance
unless a module is shared between several places):
  - fused: a BatchNormActivation with a hard activation (folded with its BatchNorm: "batchnorm"; in
    a fused block, FusedInvertedResidual, FusedGhostBottleneck, FusedLinearBottleneck, FusedStarBlock
    or FusedOsaBlock: "block"), a HardSigmoidSqueezeExcitation's or HardSigmoidEffectiveSqueezeExcitation's gate
    ("squeeze_excitation"), a fused block's gate or the activation a FusedLinearBottleneck with
    squeeze-excitation or a FusedStarBlock applies in a fused pass ("block");
  - left: a hard-activation module still standing alone (hardact's after replace_activations, or
    one it does not swap) or a function call, with the reason, derived from where it is:
      * the hidden activation of a fused squeeze-excitation (on the pooled (N, C), a pass of its own);
      * the gate of a squeeze-excitation or attention module the rewrite does not know;
      * inside a block class a matcher knows (timm's InvertedResidual / DepthwiseSeparableConv,
        torchvision's InvertedResidual) that the matcher declined, with what it declined;
      * after a BatchNorm that is not its neighbour in an nn.Sequential (fuse_batchnorm_activation
        folds Sequential neighbours, a BatchNorm ending a nested nn.Sequential included, and timm's
        BatchNormAct2d);
      * after a Linear or convolution (no rewrite fuses a bias with an activation);
      * in an attention module (class name with Attention/Attn): left to PyTorch;
      * else inside its block's class: no block matcher.
    "Its block" is the innermost enclosing module that sits directly in an nn.Sequential, nn.ModuleList,
    nn.ModuleDict or the model itself (a block of a stage), or the matcher-known block around it;
    "after" is the previous module in its parent's registration order, which timm and torchvision
    keep in forward order. blocks: per block class holding a hard layer, [fused as one of the fused
    blocks, present].
Only module structure is inspected (no forward runs, no torch.fx): a hard activation computed by
inline arithmetic (x * (x + 3).clamp(0, 6) / 6) is not found.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import functools
import inspect
import json
import re
import signal
import sys
import time
import warnings

import torch
from torch import nn
import torch.nn.functional as F

import hardact_torch
from hardact_torch.modules import (BatchNormActivation, HardSigmoidEffectiveSqueezeExcitation,
                                   HardSigmoidSqueezeExcitation)
from hardact_torch.rewrite.blocks import _MATCHERS
from hardact_torch.rewrite.bottleneck_blocks import FusedLinearBottleneck, FusedOsaBlock, FusedStarBlock
from hardact_torch.rewrite.conv_layer_blocks import FusedLevitBlock
from hardact_torch.rewrite.fused_block import FusedInvertedResidual
from hardact_torch.rewrite.ghost_blocks import FusedGhostBottleneck
from hardact_torch.rewrite.matching import _children, _folded_norm, _package, _squeeze_layers
from hardact_torch.rewrite.timm_blocks import _inactive_in_eval, _timm_block
from hardact_torch.rewrite.torchvision_blocks import _conv_norm_activation, _torchvision_block

_CONTAINERS = (nn.Sequential, nn.ModuleList, nn.ModuleDict)
_MATCHER_BLOCKS = tuple(_MATCHERS)  # the class names fuse_blocks asks about
_GATE_ATTRIBUTES = ("gate", "gate_fn", "scale_activation")
_FUSED_HARD = ("hardswish", "hardsigmoid", "relu6", "hardtanh")  # BatchNormActivation.activation values
# What fuse_blocks makes.
_FUSED_BLOCKS = (FusedInvertedResidual, FusedGhostBottleneck, FusedLinearBottleneck, FusedStarBlock, FusedOsaBlock,
                 FusedLevitBlock)


def _hard_module_classes() -> list[tuple[type, str]]:
    """(class, kind) in the order a subclass test must try them (subclasses before their bases)."""
    classes = [(nn.Hardswish, "hardswish"), (nn.Hardsigmoid, "hardsigmoid"), (nn.ReLU6, "relu6"),
               (nn.Hardtanh, "hardtanh"), (hardact_torch.HardSwish, "hardswish"), (hardact_torch.ReLU6, "relu6"),
               (hardact_torch.HardSigmoid, "hardsigmoid"), (hardact_torch.HardTanh, "hardtanh")]
    try:
        from timm.layers import activations, activations_me
        classes += [(activations.HardSwish, "hardswish"), (activations.HardSigmoid, "hardsigmoid"),
                    (activations.HardMish, "hard_mish"), (activations_me.HardSwishMe, "hardswish"),
                    (activations_me.HardSigmoidMe, "hardsigmoid"), (activations_me.HardMishMe, "hard_mish")]
    except ImportError:
        pass
    return classes


def _hard_functions() -> dict[object, str]:
    functions = {F.hardswish: "hardswish", F.hardsigmoid: "hardsigmoid", F.relu6: "relu6", F.hardtanh: "hardtanh",
                 torch.nn.functional.hardswish: "hardswish", hardact_torch.hardswish: "hardswish",
                 hardact_torch.hardsigmoid: "hardsigmoid", hardact_torch.relu6: "relu6",
                 hardact_torch.hardtanh: "hardtanh"}
    try:
        from timm.layers import activations, activations_me
        functions.update({activations.hard_swish: "hardswish", activations.hard_sigmoid: "hardsigmoid",
                          activations.hard_mish: "hard_mish", activations_me.hard_swish_me: "hardswish",
                          activations_me.hard_sigmoid_me: "hardsigmoid", activations_me.hard_mish_me: "hard_mish"})
    except ImportError:
        pass
    return functions


HARD_MODULE_CLASSES = _hard_module_classes()
_EXACT_KIND = {cls: kind for cls, kind in reversed(HARD_MODULE_CLASSES)}
HARD_FUNCTIONS = _hard_functions()
_FORWARD_CALL = re.compile(r"\b(hardswish|hardsigmoid|relu6|hardtanh|hard_swish|hard_sigmoid|hard_mish)(_me)?_?\s*\(")
_CALL_KIND = {"hardswish": "hardswish", "hard_swish": "hardswish", "hardsigmoid": "hardsigmoid",
              "hard_sigmoid": "hardsigmoid", "relu6": "relu6", "hardtanh": "hardtanh", "hard_mish": "hard_mish"}


def hard_kind(module: nn.Module) -> str | None:
    """The hard activation a module computes ("hardswish", "hardsigmoid", "relu6", "hardtanh",
    "hard_mish"), or None."""
    kind = _EXACT_KIND.get(type(module))
    if kind is not None:
        return kind
    for cls, kind in HARD_MODULE_CLASSES:
        if isinstance(module, cls):
            return kind
    return None


def _function_kind(value: object) -> str | None:
    while isinstance(value, functools.partial):
        value = value.func
    try:
        return HARD_FUNCTIONS.get(value)
    except TypeError:  # unhashable
        return None


def held_functions(module: nn.Module) -> list[tuple[str, str]]:
    """(attribute, kind) of the hard-activation functions a module holds as plain attributes."""
    found = []
    for attribute, value in vars(module).items():
        if attribute.startswith("_") or isinstance(value, (nn.Module, torch.Tensor)):
            continue
        kind = _function_kind(value)
        if kind is not None:
            found.append((attribute, kind))
    return found


@functools.cache
def forward_calls(cls: type) -> tuple[str, ...]:
    """The kinds of hard-activation calls in the source of cls.forward (empty for the hard-activation
    classes themselves and where the source cannot be read)."""
    if any(issubclass(cls, hard) for hard, _ in HARD_MODULE_CLASSES) or cls.forward is nn.Module.forward:
        return ()
    try:
        source = inspect.getsource(cls.forward)
    except (OSError, TypeError):
        return ()
    source = "\n".join(line.split("#")[0] for line in source.splitlines())
    return tuple(_CALL_KIND[match.group(1)] for match in _FORWARD_CALL.finditer(source))


def _hard_sites(model: nn.Module) -> list[tuple[str, str, str]]:
    """(path, kind, how) of every hard activation: how is "module", "attribute <name>" or "forward"."""
    sites = []
    for path, module in model.named_modules():
        kind = hard_kind(module)
        if kind is not None:
            sites.append((path, kind, "module"))
            continue
        for attribute, kind in held_functions(module):
            sites.append((path, kind, f"attribute {attribute}"))
        for kind in forward_calls(type(module)):
            sites.append((path, kind, "forward"))
    return sites


def _ancestors(model: nn.Module, path: str) -> list[tuple[str, nn.Module]]:
    """(path, module) from the model down to the module at path, both included."""
    chain, module, prefix = [("", model)], model, []
    for part in path.split(".") if path else []:
        module = module._modules[part]
        prefix.append(part)
        chain.append((".".join(prefix), module))
    return chain


def _block_of(chain: list[tuple[str, nn.Module]]) -> tuple[str, nn.Module] | None:
    """The block around the last module of chain (the module itself excluded): the outermost module
    of a class fuse_blocks asks about, else the innermost non-container module directly in a
    container or in the model; None at the model's top level."""
    for path, module in chain[1:-1]:
        if type(module).__name__ in _MATCHER_BLOCKS:
            return path, module
    found = None
    for (_, parent), (path, module) in zip(chain, chain[1:-1]):
        if type(module) not in _CONTAINERS and (parent is chain[0][1] or type(parent) in _CONTAINERS):
            found = (path, module)
    return found


def _block_label(module: nn.Module) -> str:
    return f"{_package(module)}.{type(module).__name__}"


def declined_because(block: nn.Module) -> str | None:
    """Why fuse_blocks' matcher declines an eval-mode timm or torchvision InvertedResidual /
    DepthwiseSeparableConv (or another block class fuse_blocks asks about), in words; None where it
    accepts it."""
    package, kind = _package(block), type(block).__name__
    if kind in _MATCHERS and _MATCHERS[kind](block) is not None:
        return None
    if kind not in ("InvertedResidual", "DepthwiseSeparableConv"):
        return f"{package}.{kind}: a layer, activation or option its matcher does not know"
    if package == "timm":
        if _timm_block(block) is not None:
            return None
        expected = {"InvertedResidual": {"conv_pw", "bn1", "conv_dw", "bn2", "aa", "se", "conv_pwl", "bn3",
                                         "drop_path"},
                    "DepthwiseSeparableConv": {"conv_dw", "bn1", "aa", "se", "conv_pw", "bn2", "drop_path"}}.get(kind)
        if expected is None:
            return f"no timm matcher for {kind}"
        if getattr(block, "conv_s2d", None) is not None:
            return "space-to-depth stem"
        if _children(block) != expected:
            extra, missing = sorted(_children(block) - expected), sorted(expected - _children(block))
            return f"layers {extra or ''}{' without ' + str(missing) if missing else ''} not in the matcher's layout"
        if type(block.aa) is not nn.Identity:
            return "anti-aliasing"
        if not _inactive_in_eval(block.drop_path):
            return f"drop_path {type(block.drop_path).__name__}"
        if type(block.se) is not nn.Identity and _squeeze_layers(block.se) is None:
            return f"squeeze-excitation {type(block.se).__name__} not a hard-sigmoid SqueezeExcite"
        norms = [name for name in ("bn1", "bn2", "bn3") if hasattr(block, name)]
        for name in norms:
            norm = getattr(block, name)
            if _folded_norm(norm) is None:
                act = getattr(norm, "act", None)
                return f"{type(act).__name__ if act is not None else type(norm).__name__} after a convolution not fused"
        return "a convolution that is not nn.Conv2d"
    if package == "torchvision":
        if _torchvision_block(block) is not None:
            return None
        if _children(block) != {"block"}:
            return f"layout {sorted(_children(block))} (the matcher knows MobileNetV3's)"
        for layer in block.block:
            parts = _conv_norm_activation(layer)
            if parts is None and _squeeze_layers(layer) is None:
                return f"layer {type(layer).__name__} not a Conv2dNormActivation or hard-sigmoid squeeze-excitation"
            if parts is not None and _folded_norm(parts[1], parts[2]) is None:
                return f"{type(parts[2]).__name__} after a convolution not fused"
        return "layout not matched"
    return f"no matcher for {package}"


def _previous_sibling(parent: nn.Module, name: str) -> nn.Module | None:
    """The module registered before `name` in parent, nn.Identity (an absent norm or dropout) skipped."""
    names = list(parent._modules)
    for previous in reversed(names[:names.index(name)]):
        if type(parent._modules[previous]) is not nn.Identity:
            return parent._modules[previous]
    return None


def _left_reason(model: nn.Module, path: str, how: str, declined: dict[str, str]) -> str:
    """Why the hard activation at path (module or function site, see _hard_sites) of the rewritten
    model was left standing alone."""
    chain = _ancestors(model, path)
    module = chain[-1][1]
    owner = type(module).__name__
    if how != "module":
        return f"called as a function ({how}) in {owner}: no module to rewrite"
    kind = hard_kind(module)
    parent_path, parent = chain[-2]
    if kind == "hard_mish":
        return "hard-mish: hardact has no op for it"
    if type(parent) in (HardSigmoidSqueezeExcitation,) + _FUSED_BLOCKS:
        return "hidden activation of a fused squeeze-excitation (on the pooled N x C, its own pass)"
    if any(getattr(parent, attribute, None) is module for attribute in _GATE_ATTRIBUTES):
        return f"gate of {type(parent).__name__}: no squeeze-excitation matcher for it"
    block = _block_of(chain)
    if block is not None and block[0] in declined:
        return f"in {_block_label(block[1])}: matcher declined ({declined[block[0]]})"
    previous = _previous_sibling(parent, path.rsplit(".", 1)[-1])
    if type(previous) is BatchNormActivation or isinstance(previous, nn.modules.batchnorm._BatchNorm):
        return f"after a BatchNorm in {type(parent).__name__}, not its nn.Sequential neighbour"
    if isinstance(previous, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)):
        return f"after a {type(previous).__name__} without BatchNorm (no bias + activation rewrite)"
    if any(re.search("Attention|Attn", type(m).__name__) for _, m in chain[1:-1]):
        name = next(type(m).__name__ for _, m in reversed(chain[1:-1]) if re.search("Attention|Attn", type(m).__name__))
        return f"in an attention module ({name}): left to PyTorch"
    if block is None:
        return f"at the top level of {type(model).__name__}: no rewrite"
    return f"in {_block_label(block[1])}: no block matcher"


def survey_model(model: nn.Module) -> dict:
    """The survey of one model (rewritten in place, in eval mode): hard_layers {kind: n} (kinds
    "<name>()" for functions), hard_gates {owner class: n}, rewrite (optimize_for_inference's dict),
    fused {"block", "batchnorm", "squeeze_excitation": hard layers fused there}, blocks {class:
    [fused, present]}, declined {"class: why the matcher declined it": n} (of the blocks holding a
    hard layer), left {reason: n}, left_total, balanced (hard modules before == fused + hard modules
    left)."""
    model.eval()
    sites = _hard_sites(model)
    hard_layers = collections.Counter(kind if how == "module" else f"{kind}()" for _, kind, how in sites)
    gates = collections.Counter()
    for _, module in model.named_modules():
        for attribute in _GATE_ATTRIBUTES:
            value = getattr(module, attribute, None)
            if value is not None and (hard_kind(value) if isinstance(value, nn.Module) else _function_kind(value)):
                gates[type(module).__name__] += 1
    blocks = {}
    declined = {}
    for path, _, _ in sites:
        block = _block_of(_ancestors(model, path))
        if block is not None and block[0] not in blocks:
            blocks[block[0]] = _block_label(block[1])
            if type(block[1]).__name__ in _MATCHER_BLOCKS:
                reason = declined_because(block[1])
                if reason is not None:
                    declined[block[0]] = reason
    # The function and forward-call sites live in modules the rewrite keeps or rebuilds around the
    # same objects; their reasons are taken from the original model's structure.
    function_sites = [(path, kind, how) for path, kind, how in sites if how != "module"]
    function_reasons = [_left_reason(model, path, how, declined) for path, _, how in function_sites]

    rewrite = hardact_torch.optimize_for_inference(model)

    fused = collections.Counter()
    left = collections.Counter(function_reasons)
    inside_fused_block = set()
    for path, module in model.named_modules():
        if type(module) in _FUSED_BLOCKS:
            inside_fused_block.update(f"{path}.{name}" for name, _ in module.named_modules() if name)
            # A gate, or an activation kept as a name that a fused pass applies (no module left).
            if getattr(module, "se_reduce", None) is not None or type(module) is FusedStarBlock:
                fused["block"] += 1
        elif type(module) in (HardSigmoidSqueezeExcitation, HardSigmoidEffectiveSqueezeExcitation):
            fused["squeeze_excitation"] += 1
        if type(module) is BatchNormActivation and module.activation in _FUSED_HARD:
            fused["block" if path in inside_fused_block else "batchnorm"] += 1
        elif hard_kind(module) is not None:
            left[_left_reason(model, path, "module", declined)] += 1
    block_counts = collections.defaultdict(lambda: [0, 0])
    for path, label in blocks.items():
        try:
            now = model.get_submodule(path)
        except AttributeError:
            now = None
        block_counts[label][0] += type(now) in _FUSED_BLOCKS
        block_counts[label][1] += 1
    modules_before = sum(n for kind, n in hard_layers.items() if not kind.endswith("()"))
    left_modules = sum(left.values()) - len(function_reasons)
    return {"hard_layers": dict(hard_layers), "hard_total": sum(hard_layers.values()), "hard_gates": dict(gates),
            "rewrite": rewrite, "fused": dict(fused), "blocks": dict(block_counts),
            "declined": dict(collections.Counter(f"{blocks[path]}: {why}" for path, why in declined.items())),
            "left": dict(left),
            "left_total": sum(left.values()), "balanced": modules_before == sum(fused.values()) + left_modules}


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout("took longer than the time limit")


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:160] if text else ''}"


def build(source: str, name: str, timeout: float) -> tuple[nn.Module | None, str]:
    """(model, device) built with random weights on the meta device, else on the CPU; (None, reason)
    where neither works within timeout seconds each."""
    import timm
    import torchvision
    create = (lambda: timm.create_model(name, pretrained=False)) if source == "timm" else \
        (lambda: torchvision.models.get_model(name, weights=None))
    errors = []
    for device in ("meta", "cpu"):
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            with torch.device(device), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return create(), device
        except (Exception, _Timeout) as error:  # any constructor failure is a reason to record
            errors.append(f"{device}: {_first_line(error)}")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return None, "; ".join(errors)


def family(source: str, name: str) -> str:
    """The module a model's constructor lives in: timm.models.ghostnet -> timm.ghostnet,
    torchvision.models.mobilenetv3 -> torchvision.mobilenetv3."""
    if source == "timm":
        import timm
        module = timm.models.model_entrypoint(name).__module__
    else:
        import torchvision
        module = torchvision.models.get_model_builder(name).__module__
    return f"{source}.{module.rsplit('.', 1)[-1]}"


def model_names(limit: int | None, families: list[str] | None) -> list[tuple[str, str]]:
    import timm
    import torchvision
    names = [("timm", n) for n in timm.list_models()[:limit]]
    names += [("torchvision", n) for n in sorted(torchvision.models.list_models(module=torchvision.models))[:limit]]
    if families:
        names = [(s, n) for s, n in names if family(s, n).split(".", 1)[1] in families or family(s, n) in families]
    return names


def survey(names: list[tuple[str, str]], timeout: float,
           verbose: bool = True) -> tuple[list[dict], list[dict], collections.Counter]:
    """(records of the models with a hard activation, skipped models with the reason, how many models
    were built on each device)."""
    records, skipped, devices = [], [], collections.Counter()
    for index, (source, name) in enumerate(names):
        start = time.perf_counter()
        model, device = build(source, name, timeout)
        if model is None:
            skipped.append({"source": source, "name": name, "reason": device})
            if verbose:
                print(f"[{index + 1}/{len(names)}] {source} {name}: skipped ({device})", file=sys.stderr)
            continue
        devices[device] += 1
        if not _hard_sites(model):
            continue
        try:
            record = survey_model(model)
        except Exception as error:  # the rewrite failing on a model is a finding, recorded
            skipped.append({"source": source, "name": name, "reason": f"survey: {_first_line(error)}"})
            continue
        record = {"source": source, "name": name, "family": family(source, name), "device": device,
                  "seconds": round(time.perf_counter() - start, 3), **record}
        records.append(record)
        if verbose:
            print(f"[{index + 1}/{len(names)}] {source} {name} ({device}): {record['hard_total']} hard, "
                  f"{record['left_total']} left", file=sys.stderr)
    return records, skipped, devices


def _summary(counter: dict, top: int | None = None, pairs: bool = False) -> str:
    items = sorted(counter.items(), key=lambda item: (-(item[1][1] if pairs else item[1]), item[0]))[:top]
    if pairs:
        return ", ".join(f"{key} {fused}/{present}" for key, (fused, present) in items)
    return ", ".join(f"{key} {n}" for key, n in items)


def family_table(records: list[dict]) -> str:
    """The markdown table of the records by family, the families with the most hard layers first."""
    by_family = collections.defaultdict(list)
    for record in records:
        by_family[record["family"]].append(record)
    rows = []
    for name, group in by_family.items():
        total = lambda key: sum((collections.Counter(r[key]) for r in group), collections.Counter())
        blocks = collections.defaultdict(lambda: [0, 0])
        for record in group:
            for label, (fused, present) in record["blocks"].items():
                blocks[label][0] += fused
                blocks[label][1] += present
        rewrite = total("rewrite")
        hard, left = total("hard_layers"), total("left")
        rows.append((sum(hard.values()), name, len(group), _summary(hard), _summary(blocks, 3, pairs=True),
                     rewrite["batchnorms"], rewrite["squeeze_excitations"], rewrite["activations"],
                     sum(left.values()), _summary(left, 2)))
    rows.sort(key=lambda row: (-row[0], row[1]))
    lines = ["| family | models | hard layers | blocks fused/with hard layers | BatchNorms folded | "
             "squeeze-excitations fused | activations swapped | hard layers left: top reasons |",
             "|---|---:|---|---|---:|---:|---:|---|"]
    for row in rows:
        left = f"{row[8]}" + (f": {row[9]}" if row[8] else "")
        lines.append(f"| {row[1]} | {row[2]} | {row[3]} | {row[4]} | {row[5]} | {row[6]} | {row[7]} | {left} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, help="only the first N model names of each library")
    parser.add_argument("--families", nargs="+", help="only these families (ghostnet, or timm.ghostnet)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per model and device (default 60)")
    parser.add_argument("--out", help="write the per-model records and the skipped models here (JSON)")
    parser.add_argument("--table", help="write the family table here (markdown) as well as printing it")
    parser.add_argument("--quiet", action="store_true", help="no progress line per model")
    args = parser.parse_args()
    import timm
    import torchvision
    start = time.perf_counter()
    names = model_names(args.limit, args.families)
    records, skipped, devices = survey(names, args.timeout, not args.quiet)
    seconds = time.perf_counter() - start
    header = (f"{len(names)} models surveyed ({sum(s == 'timm' for s, _ in names)} timm {timm.__version__}, "
              f"{sum(s == 'torchvision' for s, _ in names)} torchvision {torchvision.__version__}; torch "
              f"{torch.__version__}) on {datetime.date.today().isoformat()} in {seconds:.0f} s, "
              f"{devices['meta']} built on the meta device and {devices['cpu']} on the CPU: {len(records)} hold a "
              f"hard activation, {len(skipped)} could not be built or surveyed.")
    table = family_table(records)
    print(header)
    print()
    print(table)
    if skipped:
        print("\nskipped:\n" + "\n".join(f"  {s['source']} {s['name']}: {s['reason']}" for s in skipped))
    unbalanced = [r["name"] for r in records if not r["balanced"]]
    if unbalanced:
        print(f"\nhard modules not all accounted for (shared modules?): {', '.join(unbalanced)}")
    if args.table:
        with open(args.table, "w") as file:
            file.write(header + "\n\n" + table + "\n")
    if args.out:
        with open(args.out, "w") as file:
            json.dump({"header": header, "models": records, "skipped": skipped}, file, separators=(",", ":"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
