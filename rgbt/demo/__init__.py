"""``rgbt demo``: the three jobs in one command, on the simulated stack (or a real one, or a bag).

Fly (``rgbt.demo.fly``: the ``bench-sim`` graph of ``rgbt up`` with the recorder armed by the
simulated autopilot) -> recover the simulator's truth for that recording (``rgbt.demo.truth``:
ground-truth trajectory in the bag's clock, label maps of the segmented frames) -> evaluate the
recording (``rgbt.demo.evaluate``: health, segmentation FPS / latency / mIoU, ORB-SLAM3 VIO error)
-> plots and a Markdown report (``rgbt.demo.plots``, ``rgbt.demo.report``). ``rgbt.demo.run``
strings them together. Every number in the report comes with the command that reproduces it.
"""

from rgbt.demo.options import DemoOptions

__all__ = ["DemoOptions"]
