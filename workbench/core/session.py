"""Sessions: the tuned target's identity, the space, the objective settings and every trial.

Contract (implemented by the session module):

- ``Session`` dataclass: ``kernel``, ``kind``, ``source_hash``, ``problem``, ``space``
  (SearchSpace), ``backend`` (dict: kind + options), ``device`` (dict; ``simulated`` bool),
  ``constraints``, ``weights``, ``strategy`` (dict: name, seed, options, state), ``trials``
  (list[Trial]), ``baselines`` (name -> metrics dict), ``default_config`` (Config | None),
  ``created_at``, ``notes``.
  Methods: ``add(trial)``, ``measured_ids() -> set[str]``, ``cache_key(config)``,
  ``to_dict()``, ``Session.from_dict(data, source="...")``.
- ``save_session(session, path)``: atomic (temp file, fsync, rename); removes the journal.
- ``load_session(path) -> Session``: validates, one-line errors naming file/field/problem,
  refuses newer format versions, merges the journal ``<path>.journal`` if present.
- ``Journal(path)``: ``.start(session)`` writes a header line, ``.append(trial)`` writes one JSON
  line and flushes + fsyncs; a truncated last line (killed writer) is ignored on read.
"""

FORMAT_NAME = "kernel-workbench-session"
FORMAT_VERSION = 1
