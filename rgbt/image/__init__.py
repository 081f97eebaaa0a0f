"""Image preprocessing: thermal normalization, colormaps, radiometry, rectification."""
