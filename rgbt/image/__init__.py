"""Thermal / RGB image preprocessing: normalization + CLAHE, radiometry, colormaps, rectification.

``rgbt.image.normalize`` (percentiles, CART-parity CLAHE, temporally stable VIO mode),
``rgbt.image.radiometry`` (FLIR ``.fff`` reader, Planck and Boson T-linear to degrees C),
``rgbt.image.colormap`` (display palettes and a labelled colorbar), ``rgbt.image.io``
(reading thermal frames from PNG/TIFF/.npy/.fff), ``rgbt.image.synthetic`` (SYNTHETIC test
scenes), ``rgbt.image.rectify`` (owned by calib).
"""
