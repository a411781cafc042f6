"""``gotk serve``: a local web app to browse datasets, overlay encoder planes, see agents' policies and play
(:mod:`gotk.serve.app`), and the board drawing it shares with ``gotk show --svg/--png`` (:mod:`gotk.serve.draw`)."""
