"""``rgbt seg train``: train a thermal segmentation model on a CART-layout dataset and export it.

Only :mod:`rgbt.seg.train.loop` imports torch (the ``train`` extra); options, data scanning and
augmentation are numpy-only, so input errors are reported before torch loads. Nothing here is on
a runtime path.
"""
