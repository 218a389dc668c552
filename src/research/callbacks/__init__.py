"""Lightning callbacks: the ones every run gets (epochs, divergence, checkpoint_state) and the
optional ones a config names (progress, grad_norms)."""
