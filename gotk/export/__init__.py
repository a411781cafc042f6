"""``gotk export``: games as other engines' training data (Leela Zero chunks, KataGo ``.npz``).

:mod:`gotk.export.run` drives a run (sources → scan → shuffled plan → files), :mod:`gotk.export.leelazero`
owns Leela Zero's format, :mod:`gotk.export.katago` KataGo's, :mod:`gotk.export.writers` the work units.
"""
