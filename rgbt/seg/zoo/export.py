"""Export zoo models to ONNX with a sidecar and a PyTorch reference (dev-only: needs torch).

``dynamo=False``, opset 17, static 1xCxHxW, outputs ``logits`` + ``class_ids`` (in-graph argmax,
uint8). After export the ONNX model is run in onnxruntime and compared with PyTorch (max abs
logit difference must be <= 1e-4; the graph passes of ``rgbt.seg.zoo.graph_passes`` run first, so
the check covers them); a compressed ``NAME.ref.npz`` keeps the PyTorch outputs at
fixed sample pixels so the parity can be re-checked without torch (CI).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch import nn

from rgbt.seg.sidecar import InputSpec, Normalization, Sidecar, file_sha256, save_sidecar
from rgbt.seg.zoo.graph_passes import optimize_file
from rgbt.seg.zoo_reference import reference_input, sample_index

OPSET = 17


def conv_gflops(net: nn.Module, args: tuple) -> float:
    """2 x multiply-accumulates of all convolutions for one forward pass, in GFLOP."""
    total = [0]

    def hook(mod: nn.Conv2d, inp: object, out: torch.Tensor) -> None:
        k = mod.kernel_size[0] * mod.kernel_size[1] * (mod.in_channels // mod.groups)
        total[0] += 2 * k * out.numel()

    hs = [m.register_forward_hook(hook) for m in net.modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        net(*args)
    for h in hs:
        h.remove()
    return total[0] / 1e9


def export_model(
    net: nn.Module, sidecar: Sidecar, out_path: str | Path, output_names: tuple[str, ...] = ("logits", "class_ids")
) -> Sidecar:
    """Export ``net`` (already wrapped to return ``output_names``) and write sidecar + reference."""
    import onnxruntime as ort

    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    net = net.eval()
    inputs = [reference_input((1, s.channels, s.height, s.width)) for s in sidecar.inputs]
    targs = tuple(torch.from_numpy(x) for x in inputs)
    torch.onnx.export(net, targs, str(out_path), input_names=[s.name for s in sidecar.inputs],
                      output_names=list(output_names), opset_version=OPSET, dynamo=False, do_constant_folding=True)
    optimize_file(out_path)
    with torch.no_grad():
        ref = [t.numpy() for t in net(*targs)]
    so = ort.SessionOptions()
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(str(out_path), so, providers=["CPUExecutionProvider"])
    got = sess.run(list(output_names), {s.name: x for s, x in zip(sidecar.inputs, inputs, strict=False)})
    float_out = output_names[0]
    diff = float(np.abs(got[0] - ref[0]).max())
    if diff > 1e-4:
        raise RuntimeError(f"{out_path}: ONNX Runtime and PyTorch differ by {diff} > 1e-4 in {float_out}")
    idx = sample_index(ref[0].size)
    ref_path = out_path.with_suffix(".ref.npz")
    np.savez_compressed(ref_path, index=idx, float_values=ref[0].reshape(-1)[idx], class_ids=ref[1],
                        max_abs_diff_at_export=np.float64(diff))
    sidecar.onnx = out_path.name
    sidecar.onnx_sha256 = file_sha256(out_path)
    sidecar.reference = ref_path.name
    sidecar.outputs = {"logits" if float_out == "logits" else "probs": float_out, "class_ids": output_names[1]}
    sidecar.gflops = round(conv_gflops(net, targs), 3)
    sidecar.params = int(sum(p.numel() for p in net.parameters()))
    save_sidecar(sidecar, out_path.with_suffix(".json"))
    return sidecar


def make_sidecar(name: str, arch: str, channels: int, height: int, width: int, weights: str, *,
                 modality: Literal["thermal", "rgb", "rgbt"] = "thermal", fit: Literal["pad", "resize"] = "pad",
                 synthetic: bool = False, paper: dict | None = None,
                 training: dict | None = None) -> Sidecar:
    norm = Normalization(method="rgb_unit") if modality == "rgb" else Normalization()
    return Sidecar(name=name, architecture=arch, onnx=f"{name}.onnx",
                   inputs=[InputSpec(name="input", modality=modality, channels=channels, height=height, width=width,
                                     normalization=norm)],
                   fit=fit, weights=weights, synthetic=synthetic, paper=paper, training=training)
