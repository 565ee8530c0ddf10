"""Colab plumbing: the notebooks' install cell (``install``), Google Drive, the Hugging Face Hub and the
T4 time estimates (``persist``, ``hub``)."""
