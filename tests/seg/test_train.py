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
from pathlib import Path

import numpy as np
import pytest

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="torch not installed (the 'train' extra)")

SIZE = "64x96"
#: val mIoU over the best image-blind prediction (0.028 here); measured (docs/design/seg.md): FastSCNN +0.074
#: (FastSCNN's stride-32 context is 2x3 cells at 64x96), TinySeg +0.132
MARGIN = 0.05
RUNS = [("lawnmower", 1, False, 4.0, "train"), ("circle", 2, False, 4.0, "train"), ("lawnmower", 3, False, 2.5, "val")]


@pytest.fixture(scope="module")
def sim_data(tmp_path_factory) -> Path:
    from rgbt.seg.train.simdata import small_sim_dataset

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
                  log=lambda line: None, progress=False)  # the same run, uninterrupted (in this process)
    np.testing.assert_allclose([h["loss"] for h in resumed["history"]], [h["loss"] for h in whole.history], rtol=1e-4)
    assert resumed["val"]["miou"]["all"] == pytest.approx(whole.val.miou["all"], abs=1e-3)
    assert (tmp_path / "a.onnx").is_file()


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


def _dataset(tmp_path: Path, masks: list[np.ndarray]) -> Path:
    from rgbt.seg.dataset import write_item

    root = tmp_path / "ds"
    items = []
    for i, m in enumerate(masks):
        item = f"place/traj/{i:06d}"
        write_item(root, item, (np.arange(m.size, dtype=np.uint16).reshape(m.shape) * 50), m)
        items.append(item)
    (root / "train.txt").write_text("".join(i + "\n" for i in items))
    (root / "val.txt").write_text("".join(i + "\n" for i in items))
    return root


@pytest.mark.parametrize("case", ["missing-label", "bad-ids", "empty-split", "unknown-model"])
def test_bad_input_one_line_exit_2(tmp_path, rgbt_cli, case):
    good = np.full((8, 10), 5, np.uint8)
    root = _dataset(tmp_path, [good, good])
    model, split = "tinyseg", "train"
    expect = {"missing-label": "000001.png: label not found", "bad-ids": "label ids [12, 200] outside the class table",
              "empty-split": "split file lists no frames", "unknown-model": "unknown model, expected one of"}[case]
    if case == "missing-label":
        (root / "place/traj/masks/000001.png").unlink()
    elif case == "bad-ids":
        bad = good.copy()
        bad[0, :2] = (12, 200)
        _dataset(tmp_path, [good, bad])
    elif case == "empty-split":
        split = str(tmp_path / "empty.txt")
        Path(split).write_text("\n")
    else:
        model = "resnet50"
    proc = rgbt_cli("seg", "train", "--dataset", root, "--split", split, "--model", model, "--out",
                    tmp_path / "m.onnx", "--run-dir", tmp_path / "run", check=False)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert expect in lines[0], lines[0]
    assert not (tmp_path / "run").exists()


def test_without_torch_exit_3_names_the_train_extra(tmp_path):
    from deploy.test_layers import _python

    root = _dataset(tmp_path, [np.full((8, 10), 5, np.uint8)])
    proc = _python("""
        from rgbt.cli import main
        sys.exit(main(sys.argv[2:]))
    """, ("torch",), tmp_path, "seg", "train", "--dataset", str(root), "--val", "train", "--model", "tinyseg",
                   "--out", str(tmp_path / "m.onnx"), "--run-dir", str(tmp_path / "run"))
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 3 and len(lines) == 1, proc.stderr
    assert "rgbt[train]" in lines[0] and "torch" in lines[0]


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
