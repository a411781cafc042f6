"""``gotk export``: games as other engines' training data (Leela Zero chunks, KataGo ``.npz``).

:mod:`gotk.export.run` drives a run (sources → scan → shuffled plan → files) with :mod:`gotk.export.options`
and :mod:`gotk.export.inputs` (a dataset's sources, the ``--where`` hook); :mod:`gotk.export.writers` holds
the work units; :mod:`gotk.export.leelazero` owns Leela Zero's format, :mod:`gotk.export.katago` KataGo's.
"""
