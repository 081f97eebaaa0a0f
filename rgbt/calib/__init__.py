"""Calibration I/O: ROS camera_info and Kalibr YAML files, building the stack model from them,
exporting it back, and cross-source consistency checks."""
