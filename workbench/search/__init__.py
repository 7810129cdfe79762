"""Search strategies behind one ask/tell interface (:mod:`workbench.search.base`)."""
