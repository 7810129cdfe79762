"""How one candidate is measured: ``cuda`` (CuPy), ``sim`` (modelled GPU), ``replay`` (recorded),
``python`` (a user benchmark). All obey :class:`workbench.backends.base.Backend`."""
