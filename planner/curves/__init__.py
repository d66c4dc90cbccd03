"""Batch curves and what is known about them: the curve and its points, the card
catalogue, the fit from sparse points to a whole curve with its band, which batch to
measure next, and the importers of other tools' files (``curves.imports``).

Nothing here simulates or plans; everything above builds on these values.
"""
