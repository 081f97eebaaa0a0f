"""Sensor drivers: byte-level protocols and device links, ROS-free.

- :mod:`rgbt.sensors.vn100` VectorNav VN-100 binary/ASCII protocol and driver
- :mod:`rgbt.sensors.boson` FLIR Boson/ADK serial control and V4L2 frame source
- :mod:`rgbt.sensors.blackfly` spinnaker_camera_driver parameters, optional PySpin source
- :mod:`rgbt.sensors.ubx` u-blox UBX (pyubx2) and NMEA (pynmeagps) fixes
- :mod:`rgbt.sensors.mavlink` ArduPilot over pymavlink, mavros-compatible outputs
- :mod:`rgbt.sensors.trigger` trigger-generator serial protocol
- :mod:`rgbt.sensors.serial_link` a serial port that reconnects with backoff
"""
