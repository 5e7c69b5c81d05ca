"""Whole-model scans: every MLP layer of a checkpoint, in parallel, resumable, summarized.

* :mod:`.plan` — memory per worker and in all, and time, predicted before any work;
* :mod:`.tasks` — a layer as a task (names and a content digest, never the weights);
* :mod:`.runners` — this process, a local process pool (``--workers``), Dask
  (``--scheduler``, the ``scan`` extra);
* :mod:`.cache` — per-layer results keyed by content digest, options and version;
* :mod:`.driver` — the scan itself: plan, digests, cache, progress, streamed results;
* :mod:`.inspect` — ``inspect_checkpoint``: detection, then the scan, in one result;
* :mod:`.summary` — the output folder: the JSON, a table (HTML) and a figure (PNG).
"""
