"""`rgbt seg train` on a small simulator dataset (synthetic: rgbt.sim, exact labels, 160x128 thermal).

FastSCNN and TinySeg train through the verb; their val mIoU must beat the best image-blind
prediction (one class everywhere, the best class chosen with the val labels) by MARGIN; the
exported ONNX matches PyTorch on real frames (1e-4); `rgbt seg eval` on the val split gives the
trainer's mIoU (1e-3); a run stopped after an epoch and resumed equals an uninterrupted run.
EfficientViT-B0, DeepLabV3+ R18 and LR-ASPP build, export and pass the backend contract (random init).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

from helpers import tiny_seg_dataset

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="torch not installed (the 'train' extra)")

SIZE = "64x96"
#: val mIoU over the best image-blind prediction (0.028 here); measured: FastSCNN +0.074
#: (FastSCNN's stride-32 context is 2x3 cells at 64x96), TinySeg +0.132
MARGIN = 0.05
RUNS = [("lawnmower", 1, False, 4.0, "train"), ("circle", 2, False, 4.0, "train"), ("lawnmower", 3, False, 2.5, "val")]


@pytest.fixture(scope="module")
def sim_data(tmp_path_factory) -> Path:
    from rgbt.sim.small_dataset import small_sim_dataset

    return small_sim_dataset(tmp_path_factory.mktemp("train_sim") / "data", RUNS)


def best_constant_miou(root: Path, split: str) -> float:
    """mIoU of the best single-class prediction (an image-blind model) on ``split``."""
    from rgbt.seg.dataset import list_items, load_thermal
    from rgbt.seg.metrics import confusion, iou_from_confusion

    masks = [load_thermal(root, i)[1] for i in list_items(root, split)]
    best = 0.0
    for c in range(2, 12):
        cm = sum(confusion(m, np.full_like(m, c), 12) for m in masks)
        best = max(best, iou_from_confusion(cm).miou["all"] or 0.0)
    return best


def parity_on_val_frames(run: Path, onnx: Path, root: Path, model: str) -> float:
    """Max |ONNX Runtime - PyTorch| logit difference on prepared val frames (the best checkpoint)."""
    import torch

    from rgbt.seg.backend import load_backend
    from rgbt.seg.dataset import list_items, load_thermal
    from rgbt.seg.preprocess import prepare
    from rgbt.seg.sidecar import load_sidecar
    from rgbt.seg.train.loop import build_net

    sc = load_sidecar(onnx)
    net = build_net(model)
    net.load_state_dict(torch.load(run / "best.pt", weights_only=False)["model"])
    net.eval()
    be = load_backend(onnx, threads=1)
    diff = 0.0
    for item in list_items(root, "val")[:3]:
        x, _ = prepare({"thermal": load_thermal(root, item)[0]}, sc.inputs[0], sc.fit)
        with torch.no_grad():
            ref = net(torch.from_numpy(x)).numpy()
        diff = max(diff, float(np.abs(be.run({"input": x}, ["logits"])["logits"] - ref).max()))
    return diff


@needs_torch
@pytest.mark.slow
@pytest.mark.timeout(1200)  # wall time on a loaded shared machine; ~30 s of CPU each
@pytest.mark.parametrize("model, epochs", [("fastscnn", 6), ("tinyseg", 6)])
def test_train_beats_blind_baseline_exports_and_evaluates(sim_data, tmp_path, rgbt_cli, model, epochs):
    out = tmp_path / "engines" / f"{model}_sim.onnx"
    run = tmp_path / "run"
    proc = rgbt_cli("seg", "train", "--dataset", sim_data, "--model", model, "--out", out, "--run-dir", run,
                    "--size", SIZE, "--epochs", epochs, "--batch", 16, "--lr", "5e-3", "--threads", 2, "--json")
    res = json.loads(proc.stdout)
    trained = res["val"]["miou"]["all"]
    blind = best_constant_miou(sim_data, "val")
    print(f"{model}: val mIoU {trained:.3f}, best image-blind {blind:.3f}, margin {trained - blind:+.3f}")
    assert trained >= blind + MARGIN, (trained, blind)
    # run folder: config, log, curves, checkpoints, exported model
    for name in ("config.json", "log.txt", "history.json", "curves.png", "best.pt", "last.pt", out.name,
                 out.with_suffix(".json").name):
        assert (run / name).is_file(), name
    hist = json.loads((run / "history.json").read_text())
    assert [h["epoch"] for h in hist] == list(range(1, epochs + 1))
    assert hist[-1]["loss"] < hist[0]["loss"]
    # exported model: parity with PyTorch on real frames, sidecar provenance
    assert parity_on_val_frames(run, out, sim_data, model) <= 1e-4
    sc = json.loads(out.with_suffix(".json").read_text())
    assert sc["synthetic"] and sc["weights"].startswith("trained on synthetic data")
    assert sc["training"]["val_miou"]["all"] == pytest.approx(trained, abs=1e-9)
    assert sc["training"]["command"].startswith(f"rgbt seg train --dataset {sim_data} --model {model}")
    # `rgbt seg eval` (ONNX Runtime, the runtime's stage) on the val split = the trainer's number
    ev = json.loads(rgbt_cli("seg", "eval", "--dataset", sim_data, "--engine", out, "--split", "val", "--json").stdout)
    assert ev["miou"]["all"] == pytest.approx(trained, abs=1e-3)
    from seg.test_backend import check_contract

    check_contract(out)


@needs_torch
@pytest.mark.slow
@pytest.mark.timeout(1200)  # wall time on a loaded shared machine; ~30 s of CPU each
def test_resume_continues_the_run(sim_data, tmp_path, rgbt_cli):
    """Stopped after epoch 1 of 3 (as if interrupted), resumed: epochs 1-3 and the loss curve equal an
    uninterrupted run's (same samples, same optimizer state)."""
    split = tmp_path / "small.txt"
    split.write_text("".join(i + "\n" for i in (sim_data / "train.txt").read_text().split()[::4]))
    val = tmp_path / "small_val.txt"
    val.write_text("".join(i + "\n" for i in (sim_data / "val.txt").read_text().split()[::3]))
    common = ["--dataset", sim_data, "--split", split, "--val", val, "--model", "tinyseg", "--size", "32x64",
              "--epochs", 3, "--batch", 8, "--threads", 2, "--json"]
    run = tmp_path / "run"
    first = json.loads(rgbt_cli("seg", "train", *common, "--out", tmp_path / "a.onnx", "--run-dir", run,
                                "--stop-after", 1).stdout)
    assert first["epochs_done"] == 1 and first["onnx"] is None and not (tmp_path / "a.onnx").exists()
    again = rgbt_cli("seg", "train", *common, "--out", tmp_path / "a.onnx", "--run-dir", run, check=False)
    assert again.returncode == 2 and "--resume" in again.stderr  # a run folder is never overwritten
    resumed = json.loads(rgbt_cli("seg", "train", "--resume", run, "--json").stdout)
    assert [h["epoch"] for h in resumed["history"]] == [1, 2, 3]
    assert resumed["history"][0] == first["history"][0]
    assert "resumed from last.pt: epoch 1/3 done" in (run / "log.txt").read_text()
    from rgbt.seg.train.loop import train
    from rgbt.seg.train.options import TrainOptions

    whole = train(TrainOptions.model_validate({**json.loads((run / "config.json").read_text()), "stop_after": None,
                                               "out": str(tmp_path / "b.onnx"), "run_dir": str(tmp_path / "run_b")}),
                  log=lambda line: None)  # the same run, uninterrupted (in this process)
    np.testing.assert_allclose([h["loss"] for h in resumed["history"]], [h["loss"] for h in whole.history], rtol=1e-4)
    assert resumed["val"]["miou"]["all"] == pytest.approx(whole.val.miou["all"], abs=1e-3)
    assert (tmp_path / "a.onnx").is_file()


@pytest.mark.slow
@needs_torch
@pytest.mark.parametrize("model", ["efficientvit_b0", "deeplabv3plus_r18", "lraspp_mbv3l"])
def test_zoo_model_builds_exports_and_passes_contract(tmp_path, model):
    import torch

    from rgbt.seg.train.loop import build_net
    from rgbt.seg.train.options import MODEL_NAMES
    from rgbt.seg.zoo.export import export_model, make_sidecar
    from rgbt.seg.zoo.models import WithArgmax
    from seg.test_backend import check_contract

    torch.manual_seed(0)
    net = WithArgmax(build_net(model))
    sc = make_sidecar(model, MODEL_NAMES[model], 1, 128, 160, "random-init (torch.manual_seed(0)): test")
    sc = export_model(net, sc, tmp_path / f"{model}.onnx")  # raises when ONNX Runtime and PyTorch differ > 1e-4
    assert sc.params > 0 and sc.gflops > 0
    check_contract(tmp_path / f"{model}.onnx")


def test_without_torch_exit_3_names_the_train_extra(tmp_path):
    from deploy.test_layers import _python

    root = tiny_seg_dataset(tmp_path, [np.full((8, 10), 5, np.uint8)])
    proc = _python("""
        from rgbt.cli import main
        sys.exit(main(sys.argv[2:]))
    """, ("torch",), tmp_path, "seg", "train", "--dataset", str(root), "--val", "train", "--model", "tinyseg",
                   "--out", str(tmp_path / "m.onnx"), "--run-dir", str(tmp_path / "run"))
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 3 and len(lines) == 1, proc.stderr
    assert "rgbt[train]" in lines[0] and "torch" in lines[0]


@pytest.mark.slow
@needs_torch
def test_pretrained_reads_a_local_state_dict(tmp_path):
    import torch

    from rgbt.errors import ModelError
    from rgbt.seg.train.loop import build_net, load_pretrained

    torch.manual_seed(1)
    src = build_net("tinyseg").state_dict()
    rgb_first = src["s2.0.weight"].repeat(1, 3, 1, 1)  # an RGB stem: summed back to one thermal channel
    torch.save({"model": {**src, "s2.0.weight": rgb_first}}, tmp_path / "ckpt.pt")
    torch.manual_seed(2)
    net = build_net("tinyseg")
    line = load_pretrained(net, str(tmp_path / "ckpt.pt"))
    n = len(net.state_dict())
    assert f"{n}/{n} tensors" in line
    assert torch.allclose(net.state_dict()["s2.0.weight"], 3 * src["s2.0.weight"])
    assert torch.equal(net.state_dict()["head.1.weight"], src["head.1.weight"])
    torch.save({"other.weight": torch.zeros(3)}, tmp_path / "foreign.pt")
    with pytest.raises(ModelError, match="no tensor matches"):
        load_pretrained(net, str(tmp_path / "foreign.pt"))
    with pytest.raises(ModelError, match="not found"):
        load_pretrained(net, str(tmp_path / "missing.pt"))


# --- --pretrained imagenet: the libraries' ImageNet files, written here with the libraries' own names and shapes ---
# Each function restates one library's module layout (torchvision resnet.py / mobilenetv3.py, timm
# efficientvit_mit.py) as name -> shape, independently of rgbt's name translation and of rgbt's models:
# a wrong translated name, or two names swapped, fails the load.

def _conv(p: str, cout: int, cin: int, k: int = 1, bias: bool = False) -> dict:
    return {f"{p}.weight": (cout, cin, k, k), **({f"{p}.bias": (cout,)} if bias else {})}


def _bn(p: str, c: int) -> dict:
    return {f"{p}.{n}": (c,) for n in ("weight", "bias", "running_mean", "running_var")} | \
        {f"{p}.num_batches_tracked": ()}


def torchvision_resnet18() -> dict:
    keys = {**_conv("conv1", 64, 3, 7), **_bn("bn1", 64)}
    cin = 64
    for layer, w in enumerate((64, 128, 256, 512), 1):
        for b in range(2):
            p = f"layer{layer}.{b}"
            keys |= {**_conv(f"{p}.conv1", w, cin, 3), **_bn(f"{p}.bn1", w), **_conv(f"{p}.conv2", w, w, 3),
                     **_bn(f"{p}.bn2", w)}
            if cin != w:
                keys |= {**_conv(f"{p}.downsample.0", w, cin), **_bn(f"{p}.downsample.1", w)}
            cin = w
    return keys | {"fc.weight": (1000, 512), "fc.bias": (1000,)}


def torchvision_mobilenet_v3_large() -> dict:
    keys = {**_conv("features.0.0", 16, 3, 3), **_bn("features.0.1", 16)}
    squeeze = {72: 24, 120: 32, 480: 120, 672: 168, 960: 240}  # _make_divisible(expanded // 4, 8)
    blocks = [(16, 3, 16, 16, False), (16, 3, 64, 24, False), (24, 3, 72, 24, False), (24, 5, 72, 40, True),
              (40, 5, 120, 40, True), (40, 5, 120, 40, True), (40, 3, 240, 80, False), (80, 3, 200, 80, False),
              (80, 3, 184, 80, False), (80, 3, 184, 80, False), (80, 3, 480, 112, True), (112, 3, 672, 112, True),
              (112, 5, 672, 160, True), (160, 5, 960, 160, True), (160, 5, 960, 160, True)]  # in, k, exp, out, SE
    for i, (cin, k, exp, cout, se) in enumerate(blocks, 1):
        parts = []
        if exp != cin:
            parts.append({**_conv("{}.0", exp, cin), **_bn("{}.1", exp)})
        parts.append({**_conv("{}.0", exp, 1, k), **_bn("{}.1", exp)})
        if se:
            sq = squeeze[exp]
            parts.append({**_conv("{}.fc1", sq, exp, bias=True), **_conv("{}.fc2", exp, sq, bias=True)})
        parts.append({**_conv("{}.0", cout, exp), **_bn("{}.1", cout)})
        for j, part in enumerate(parts):
            keys |= {name.format(f"features.{i}.block.{j}"): shape for name, shape in part.items()}
    keys |= {**_conv("features.16.0", 960, 160), **_bn("features.16.1", 960)}
    return keys | {"classifier.0.weight": (1280, 960), "classifier.0.bias": (1280,),
                   "classifier.3.weight": (1000, 1280), "classifier.3.bias": (1000,)}


def timm_efficientvit_b0() -> dict:
    def cna(p: str, cout: int, cin: int, k: int = 1, bias: bool = False, norm: bool = True) -> dict:  # ConvNormAct
        return {**_conv(f"{p}.conv", cout, cin, k, bias), **(_bn(f"{p}.norm", cout) if norm else {})}

    def mbconv(p: str, cin: int, cout: int, fewer_norm: bool) -> dict:  # expand ratio 4
        mid = 4 * cin
        return {**cna(f"{p}.inverted_conv", mid, cin, 1, fewer_norm, not fewer_norm),
                **cna(f"{p}.depth_conv", mid, 1, 3, fewer_norm, not fewer_norm), **cna(f"{p}.point_conv", cout, mid)}

    keys = {**cna("stem.in_conv", 8, 3, 3), **cna("stem.res0.main.depth_conv", 8, 1, 3),
            **cna("stem.res0.main.point_conv", 8, 8)}
    cin = 8
    for s, w in enumerate((16, 32, 64, 128)):  # depths 2, 2, 2, 2; stages 2-3 are attention stages (head dim 16)
        vit = s >= 2
        keys |= mbconv(f"stages.{s}.blocks.0.main", cin, w, vit)
        for b in range(1, 3 if vit else 2):
            p = f"stages.{s}.blocks.{b}"
            if vit:
                m = f"{p}.context_module.main"
                keys |= {**_conv(f"{m}.qkv.conv", 3 * w, w), **_conv(f"{m}.aggreg.0.0", 3 * w, 1, 5),
                         **_conv(f"{m}.aggreg.0.1", 3 * w, 16), **cna(f"{m}.proj", w, 2 * w)}
                keys |= mbconv(f"{p}.local_module.main", w, w, True)
            else:
                keys |= mbconv(f"{p}.main", w, w, False)
        cin = w
    return keys | cna("head.in_conv", 1024, 128) | {
        "head.classifier.0.weight": (1280, 1024), "head.classifier.1.weight": (1280,),
        "head.classifier.1.bias": (1280,), "head.classifier.4.weight": (1000, 1280), "head.classifier.4.bias": (1000,)}


# model -> (the library's name -> shape, where the library caches the file under TORCH_HOME / HF_HOME)
IMAGENET_CASES = {
    "deeplabv3plus_r18": (torchvision_resnet18, "torch/hub/checkpoints/resnet18-f37072fd.pth"),
    "lraspp_mbv3l": (torchvision_mobilenet_v3_large, "torch/hub/checkpoints/mobilenet_v3_large-8738ca79.pth"),
    "efficientvit_b0": (timm_efficientvit_b0,
                        "hf/hub/models--timm--efficientvit_b0.r224_in1k/snapshots/0123abcd/pytorch_model.bin"),
}


def _library_state(model: str) -> dict:
    """A random state dict shaped like the library's ImageNet file (first conv RGB, classifier head included)."""
    import torch

    g = torch.Generator().manual_seed(3)
    return {k: torch.tensor(123) if k.endswith("num_batches_tracked") else torch.randn(shape, generator=g)
            for k, shape in IMAGENET_CASES[model][0]().items()}


@pytest.mark.slow
@needs_torch
@pytest.mark.parametrize("model", list(IMAGENET_CASES))
def test_pretrained_imagenet_loads_the_library_file_from_its_cache(tmp_path, monkeypatch, model):
    import torch

    from rgbt.seg.train.loop import build_net, load_pretrained
    from rgbt.seg.train.pretrained import FAMILIES

    _, rel = IMAGENET_CASES[model]
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    state = _library_state(model)
    (tmp_path / rel).parent.mkdir(parents=True)
    torch.save(state, tmp_path / rel)
    net = build_net(model)
    line = load_pretrained(net, "imagenet", model)
    fam = FAMILIES[model]
    own = net.state_dict()
    encoder = [k for k in own if k.startswith(fam.encoder) and not k.endswith("num_batches_tracked")]
    assert f"{len(encoder)}/{len(encoder)} encoder tensors loaded from {Path(rel).name} ({fam.name} ImageNet)" in line
    n_lib = sum(1 for k in state if fam.name_of(k) and not k.endswith("num_batches_tracked"))
    assert n_lib == len(encoder)  # every library backbone tensor has its place, and every one of ours is filled
    first = next(iter(state))
    for key, t in state.items():
        ours = fam.name_of(key)
        if ours is None or key.endswith("num_batches_tracked"):
            continue
        expect = t.sum(1, keepdim=True) if key == first else t
        assert torch.equal(own[ours], expect), key
    # the same file passed by name loads the same way
    assert "encoder tensors loaded" in load_pretrained(build_net(model), str(tmp_path / rel), model)
    # a layout that differs from ours (an extra block; a tensor of another shape) loads nothing
    from rgbt.errors import ModelError

    second = list(state)[1]
    for bad, match in (({**state, "blocks.9.weight": torch.zeros(3)}, "blocks.9.weight has no counterpart"),
                       ({**state, second: torch.zeros(5)}, f"{second} has shape")):
        torch.save(bad, tmp_path / "other_layout.pth")
        fresh = build_net(model)
        before = {k: v.clone() for k, v in fresh.state_dict().items()}
        with pytest.raises(ModelError, match="do not correspond 1:1"):
            load_pretrained(fresh, str(tmp_path / "other_layout.pth"), model)
        with pytest.raises(ModelError, match=re.escape(match)):
            load_pretrained(fresh, str(tmp_path / "other_layout.pth"), model)
        assert all(torch.equal(before[k], v) for k, v in fresh.state_dict().items())


@needs_torch
def test_pretrained_imagenet_safetensors_needs_the_package(tmp_path, monkeypatch):
    from rgbt.errors import MissingCapability
    from rgbt.seg.train.loop import build_net, load_pretrained

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    rel = "hf/hub/models--timm--efficientvit_b0.r224_in1k/snapshots/0123abcd/model.safetensors"
    (tmp_path / rel).parent.mkdir(parents=True)
    state = _library_state("efficientvit_b0")
    if importlib.util.find_spec("safetensors") is None:
        (tmp_path / rel).write_bytes(b"not read")
        with pytest.raises(MissingCapability, match="safetensors"):
            load_pretrained(build_net("efficientvit_b0"), "imagenet", "efficientvit_b0")
    else:
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in state.items()}, str(tmp_path / rel))
        line = load_pretrained(build_net("efficientvit_b0"), "imagenet", "efficientvit_b0")
        assert "encoder tensors loaded from model.safetensors" in line
