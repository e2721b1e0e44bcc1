"""Chat with your documents: parse, chunk, embed (through the daemon) and search local files.

Qt-free on purpose (an import contract checks it): the app drives it from a worker thread, and
tests drive it directly. ``reading`` reads a file's bytes without leaving the chosen folder,
``parsing`` turns them into text sections, ``chunking`` cuts them into
overlapping passages that remember where they came from, ``index`` keeps them in one SQLite file
per collection (FTS5 for keywords, ``vectors`` for embeddings), ``indexer`` brings an index up to
date with the files, ``retrieval`` fuses keyword and vector ranks, ``context`` builds the prompt
block with numbered sources.
"""
