"""Segmentation: inference backends (ONNX Runtime, TensorRT), model sidecars, the segmentation
stage, RGB-T fusion and mIoU evaluation. Speed and accuracy figures: BENCHMARKS.md."""
