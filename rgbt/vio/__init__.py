"""VIO: estimator configs from the stack, feed preparation, runners (ORB-SLAM3 in-process, VINS-Fusion /
OpenVINS as ROS 2 processes), DBoW2 vocabulary builder, bag evaluation."""
