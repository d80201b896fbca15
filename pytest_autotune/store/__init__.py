"""``autotune.json``: the committed tuned configurations and their baselines (DESIGN section 3).

Layout (schema version 1)::

    {"schema_version": 1,
     "devices": {"<device key>": {"info": {...},
                                  "tests": {"<node id>": {"config": {...}, "space_hash": "...",
                                                          "baseline": {...}, "tuning": {...},
                                                          "commit_info": {...},
                                                          "history": {...}}}}}}

The file is what a team commits and every later run trusts, so reading it, replacing it and
changing it are kept apart, each in one module:

* :mod:`~pytest_autotune.store.document`: the file as JSON: the schema, the checks of a read (a
  damaged file is a :class:`StoreError` and is never overwritten), the canonical text :func:`dumps`;
* :mod:`~pytest_autotune.store.reading`: the read-only :class:`Store` a session loads, each entry
  checked (a damaged entry fails only its own test);
* :mod:`~pytest_autotune.store.writing`: replacing the file under a lock, atomically, through a
  symbolic link, keeping its mode; :func:`check_writable` before tuning starts;
* :mod:`~pytest_autotune.store.changes`: merging a session's new and removed entries into the file
  as it is now (:func:`apply_changes`), or into a new recovery file (:func:`write_new`), and another
  store file's entries, the newer of two first (:func:`merge_entries`);
* :mod:`~pytest_autotune.store.git_commit`: the commit the entries were measured at.

This package re-exports their public names, so ``from pytest_autotune.store import Store`` is the
short spelling for users; modules of this package import from the module that defines a name.
"""

from __future__ import annotations

from pytest_autotune.entry import DamagedEntryError
from pytest_autotune.store.changes import apply_changes, write_new
from pytest_autotune.store.document import SCHEMA_VERSION, StoreError, config_from_json, dumps, entry_where
from pytest_autotune.store.git_commit import commit_info
from pytest_autotune.store.reading import Store
from pytest_autotune.store.writing import LOCK_SECONDS, check_writable, lock_path

__all__ = [
    "LOCK_SECONDS",
    "SCHEMA_VERSION",
    "DamagedEntryError",
    "Store",
    "StoreError",
    "apply_changes",
    "check_writable",
    "commit_info",
    "config_from_json",
    "dumps",
    "entry_where",
    "lock_path",
    "write_new",
]
