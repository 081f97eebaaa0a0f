"""Small simulator datasets for training tests and studies: CART layout, exact labels, reduced resolution.

The thermal camera of the stack is scaled down (intrinsics with it) before rendering, so frames
are rendered small instead of rendered at 640x512 and shrunk; the world raster is smaller too.
Everything written here is synthetic (``SYNTHETIC.md`` in the root says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rgbt.sim import SimOptions
from rgbt.sim.dataset import write_cart_dataset
from rgbt.stack import Intrinsics, dump_stack, load_stack

#: (trajectory, seed, night, seconds, split)
Run = tuple[str, int, bool, float, str]


def small_stack(path: str | Path, scale: float = 0.25) -> Path:
    """Write the default stack with its thermal camera scaled by ``scale`` (640x512 -> 160x128 at 0.25)."""
    stack = load_stack()
    cam = stack.cameras["thermal"]
    k = cam.intrinsics
    small = cam.model_copy(update={
        "width": int(round(cam.width * scale)), "height": int(round(cam.height * scale)), "vio": None,
        "intrinsics": Intrinsics(fx=k.fx * scale, fy=k.fy * scale, cx=(k.cx + 0.5) * scale - 0.5,
                                 cy=(k.cy + 0.5) * scale - 0.5)})
    stack = stack.model_copy(update={"cameras": {**stack.cameras, "thermal": small}, "synthetic": True})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    dump_stack(stack, path)
    return path


def small_sim_dataset(root: str | Path, runs: Sequence[Run], stride: int = 4, scale: float = 0.25,
                      world_size_px: int = 1024) -> Path:
    """Render ``runs`` (thermal only) into a CART-layout dataset under ``root``; each run's frames go to
    its split (``train``/``val``/``test``). Also writes ``test_day.txt`` / ``test_night.txt``."""
    root = Path(root)
    stack = small_stack(root / "stack_small.yaml", scale)
    opts = [SimOptions(stack_path=str(stack), trajectory=t, seed=s, night=n, duration_s=d, cameras=["thermal"],
                       world_size_px=world_size_px) for t, s, n, d, _ in runs]
    write_cart_dataset(root, opts, stride, splits=[r[4] for r in runs], with_rgb=False)
    test = (root / "test.txt").read_text().split()
    for tod in ("day", "night"):
        (root / f"test_{tod}.txt").write_text("".join(i + "\n" for i in test if f"_{tod}_" in i))
    return root
