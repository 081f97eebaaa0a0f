"""Segmentation: inference backends (ONNX Runtime, TensorRT), model sidecars, the segmentation
stage, RGB-T fusion and mIoU evaluation. See docs/design/seg.md."""
