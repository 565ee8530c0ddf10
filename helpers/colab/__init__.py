"""Colab plumbing: the notebooks' install cell (``install``, and ``cells`` which writes it and the badges
into every notebook), Google Drive and the Hugging Face Hub (``persist``, ``hub``), and the T4 time
estimates (``estimates``)."""
