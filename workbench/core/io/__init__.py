"""Input and output: Kernel Tuner interop, exporters, the rules for files a command writes
and the session lock.

The top layer of core: may import the model and the domain.
"""
